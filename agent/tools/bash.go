package tools

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
	"github.com/threadsmith/threadsmith/sandbox"
)

// BashName is the bash tool's name.
const BashName = "bash"

const (
	// bashWindow is how much of the output's end is kept in memory: twice
	// what a result shows, so the kept lines are always whole.
	bashWindow = 2 * truncate.MaxBytes
	// bashDrainGrace bounds the wait for the output pipe to close once the
	// process group is dead; a process that left the group (setsid) may hold it.
	bashDrainGrace = 2 * time.Second
	// bashUpdateEvery throttles partial output sent to listeners.
	bashUpdateEvery = 250 * time.Millisecond
)

// maxBashLog caps the full-output file: a runaway command must not fill the
// disk. A variable so that a test can lower it.
var maxBashLog int64 = 64 << 20

//go:embed bash.md
var bashDescription string

type bashParams struct {
	Command string   `json:"command" required:"true" desc:"Bash command to run in the workspace root"`
	Timeout *float64 `json:"timeout" desc:"Timeout in seconds; can shorten the default, not extend it"`
}

// BashDetails are the machine-readable facts of a bash result.
type BashDetails struct {
	ExitCode       *int             `json:"exitCode,omitempty"`
	Signal         string           `json:"signal,omitempty"`
	TimedOut       bool             `json:"timedOut,omitempty"`
	Aborted        bool             `json:"aborted,omitempty"`
	Truncation     *truncate.Result `json:"truncation,omitempty"`
	FullOutputPath string           `json:"fullOutputPath,omitempty"`
	// DiskQuota names the disk limit the command met: "bytes" or "files"
	// (the thread's quota), "reserve" (the machine's floor), "file_size"
	// (a file could not grow past what was left of the quota) or
	// "unmeasurable" (the workspace could not be walked).
	DiskQuota string `json:"diskQuota,omitempty"`
	// StoppedByQuota says the command was stopped for passing it.
	StoppedByQuota bool `json:"stoppedByQuota,omitempty"`
}

// BashTool runs commands in the workspace with a clean environment and kills
// their whole process group when they end, time out or are cancelled.
type BashTool struct {
	ws   *Workspace
	spec llm.ToolSpec
}

// NewBashTool returns the bash tool of ws.
func NewBashTool(ws *Workspace) *BashTool {
	return &BashTool{ws: ws, spec: newSpec(BashName, bashDescription, ws, bashParams{})}
}

func (t *BashTool) Spec() llm.ToolSpec { return t.spec }

func (t *BashTool) Execute(ctx context.Context, call agent.ToolCall, update func(agent.ToolResult)) (agent.ToolResult, error) {
	var p bashParams
	if err := decodeArgs(BashName, call.Args, &p); err != nil {
		return errorResult(err), nil
	}
	if strings.TrimSpace(p.Command) == "" {
		return agent.ErrorResult("command is empty"), nil
	}
	timeout := t.ws.timeout
	if p.Timeout != nil && *p.Timeout > 0 && time.Duration(*p.Timeout*float64(time.Second)) < timeout {
		timeout = time.Duration(*p.Timeout * float64(time.Second))
	}
	if ctx.Err() != nil {
		return withDetails(agent.ErrorResult("aborted before the command started"), BashDetails{Aborted: true}), nil
	}
	run, err := t.run(ctx, p.Command, timeout, update)
	if err != nil {
		return agent.ToolResult{}, err
	}
	text, err := run.out.finish(&run.details)
	if err != nil {
		return agent.ToolResult{}, err
	}
	if run.note != "" {
		text = appendNote(text, run.note)
	}
	return run.result(text, timeout), nil
}

// bashRun is how one command ended.
type bashRun struct {
	out     *bashOutput
	exit    sandbox.Exit
	details BashDetails
	note    string // what the disk quota did, for the model
}

// run starts the command in the workspace's sandbox, streams its output, and
// waits for it to exit, time out or be cancelled. However it ends, everything
// it started is then dead (the sandbox's PID namespace; unsandboxed, its
// process group) and the output drained.
func (t *BashTool) run(ctx context.Context, command string, timeout time.Duration, update func(agent.ToolResult)) (*bashRun, error) {
	// One pipe for stdout and stderr keeps their order. The parent keeps only
	// the read end, so EOF means every process that inherited it is gone.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bash: pipe: %w", err)
	}
	defer pr.Close()
	q := t.ws.quota
	plan := q.planBash(ctx)
	if plan.notice != nil {
		q.notify(*plan.notice)
	}
	proc, err := t.ws.sandbox.Start(sandbox.Spec{
		Path:   t.ws.bash,
		Args:   []string{"bash", "-c", command},
		Env:    t.ws.env,
		Dir:    t.ws.repo.abs,
		Mounts: t.ws.bashMounts(),
		Stdout: pw, Stderr: pw, // stdin stays /dev/null
		FileSize: plan.fileSize,
	})
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("bash: start: %w", err)
	}

	r := &bashRun{out: &bashOutput{dir: t.ws.logs, lastNL: -1, max: plan.logCap}}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		r.out.collect(pr, update)
	}()
	type ended struct {
		exit sandbox.Exit
		err  error
	}
	exited := make(chan ended, 1)
	go func() {
		e, err := proc.Wait()
		exited <- ended{e, err}
	}()
	// The quota's watcher measures the workspace while the command runs and
	// kills it once it passes its limit. Its context ends with the command,
	// which also ends a walk under way: the measurement after the command is
	// the one that counts.
	var stop *QuotaNotice
	watchCtx, endWatch := context.WithCancel(ctx)
	defer endWatch()
	watchEnded := make(chan struct{})
	if q.enabled() {
		go func() {
			defer close(watchEnded)
			q.watch(watchCtx, plan, func(n QuotaNotice) {
				stop = &n
				proc.Kill()
			})
		}()
	} else {
		close(watchEnded)
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var end ended
	select {
	case end = <-exited:
	case <-timer.C:
		r.details.TimedOut = true
		proc.Kill()
		end = <-exited
	case <-ctx.Done():
		r.details.Aborted = true
		proc.Kill()
		end = <-exited
	}
	// Background jobs die with the command (Wait sees to it): nothing of one
	// call outlives it. Unsandboxed, a child that left the process group may
	// still hold the pipe; stop reading after a grace.
	_ = pr.SetReadDeadline(time.Now().Add(bashDrainGrace))
	<-drained
	endWatch()
	<-watchEnded
	if end.err != nil {
		return nil, fmt.Errorf("bash: %w", end.err)
	}
	r.exit = end.exit
	if q.enabled() {
		t.quotaAfter(ctx, r, plan, stop)
	}
	return r, nil
}

// quotaAfter measures the workspace after a command and tells the model
// (and, once, the thread) what the disk quota did to it.
func (t *BashTool) quotaAfter(ctx context.Context, r *bashRun, plan bashPlan, stop *QuotaNotice) {
	q := t.ws.quota
	if stop != nil {
		r.details.DiskQuota, r.details.StoppedByQuota = stop.Limit, true
		r.note = stoppedNote(*stop)
		q.notify(*stop)
		_, _ = q.measure(context.WithoutCancel(ctx))
		return
	}
	if q.measureLater() {
		// A tree slow to walk: the next command starts from its usage.
		switch {
		case plan.notice != nil:
			r.details.DiskQuota, r.note = plan.notice.Limit, plan.note
		case plan.fileSize > 0 && hitFileSize(r.out.buf):
			r.details.DiskQuota = "file_size"
			r.note = fileSizeNote(plan.fileSize)
		}
		return
	}
	u, err := q.measure(context.WithoutCancel(ctx))
	if err != nil {
		r.details.DiskQuota, r.note = "unmeasurable", unmeasurableNote(err)
		q.notify(QuotaNotice{Limit: "unmeasurable", Quota: q.cfg})
		return
	}
	free, low, _ := q.low()
	if low {
		n := QuotaNotice{Limit: "reserve", Usage: u, Quota: q.cfg, Free: free}
		r.details.DiskQuota = n.Limit
		r.note = floorNote(n)
		q.notify(n)
		return
	}
	if lim := q.exceeded(u, q.limits()); lim != "" {
		n := QuotaNotice{Limit: lim, Usage: u, Quota: q.cfg}
		r.details.DiskQuota = n.Limit
		r.note = overNote(n)
		q.notify(n)
		return
	}
	if q.atLimit(u) == "" {
		q.underAgain()
	}
	switch {
	case plan.notice != nil && q.atLimit(u) != "":
		// Still where it began: the note stands (freed space ends it).
		r.details.DiskQuota = plan.notice.Limit
		r.note = plan.note
	case plan.notice != nil && hitFileSize(r.out.buf):
		r.details.DiskQuota = plan.notice.Limit
		r.note = "[Disk quota: this command started with no room left (" + plan.notice.describe() + "), so no file could grow in it (\"File too large\"). It freed space since: run the writes again.]"
	case plan.fileSize > 0 && hitFileSize(r.out.buf):
		r.details.DiskQuota = "file_size"
		r.note = fileSizeNote(plan.fileSize)
		if !plan.byDisk {
			q.notify(QuotaNotice{Limit: "bytes", Usage: u, Quota: q.cfg})
		}
	}
}

// result renders the output and how the command ended for the model.
func (r *bashRun) result(text string, timeout time.Duration) agent.ToolResult {
	d := r.details
	switch {
	case d.StoppedByQuota:
		return withDetails(agent.ErrorResult(text), d)
	case d.TimedOut:
		return withDetails(agent.ErrorResult(appendNote(text, fmt.Sprintf("[Timed out after %s; the command and its child processes were killed.]", seconds(timeout)))), d)
	case d.Aborted:
		return withDetails(agent.ErrorResult(appendNote(text, "[Aborted; the command and its child processes were killed.]")), d)
	}
	if r.exit.Signaled() {
		d.Signal = r.exit.Signal.String()
		return withDetails(agent.ErrorResult(appendNote(text, fmt.Sprintf("[Killed by signal: %s.]", r.exit.Signal))), d)
	}
	code := r.exit.Code
	d.ExitCode = &code
	if code != 0 {
		return withDetails(agent.ErrorResult(appendNote(text, fmt.Sprintf("[Exit code %d.]", code))), d)
	}
	if text == "" {
		text = "(no output)"
	}
	return withDetails(agent.TextResult(text), d)
}

// appendNote puts a bracketed note after the output, one blank line apart.
func appendNote(text, note string) string {
	if text == "" {
		return note
	}
	return strings.TrimSuffix(text, "\n") + "\n\n" + note
}

func seconds(d time.Duration) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + "s"
}

// bashOutput gathers a command's output: all of it in memory while it is
// small, then its end in memory and all of it (up to maxBashLog) in a file in
// the scratch folder.
type bashOutput struct {
	dir      string
	buf      []byte // everything so far, or (once spilled) the last bashWindow+ bytes
	total    int64
	newlines int64
	lastNL   int64 // offset of the last newline in the whole output, -1 if none
	file     *os.File
	logged   int64
	capped   bool
	max      int64 // the most the log may take
	err      error // the first failure to write the log
	lastSent time.Time
}

func (o *bashOutput) collect(r io.Reader, update func(agent.ToolResult)) {
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			o.add(chunk[:n])
			if update != nil && time.Since(o.lastSent) >= bashUpdateEvery {
				o.lastSent = time.Now()
				update(agent.TextResult(strings.ToValidUTF8(truncate.Tail(string(o.buf), truncate.Limits{}).Content, "\uFFFD")))
			}
		}
		if err != nil {
			return // EOF, or the drain deadline
		}
	}
}

func (o *bashOutput) add(p []byte) {
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		o.lastNL = o.total + int64(i)
		o.newlines += int64(bytes.Count(p, []byte{'\n'}))
	}
	o.total += int64(len(p))
	o.buf = append(o.buf, p...)
	if o.file == nil {
		if len(o.buf) > bashWindow {
			o.spill()
		}
		return
	}
	o.log(p)
	if len(o.buf) > 2*bashWindow {
		o.buf = append(o.buf[:0:0], o.buf[len(o.buf)-bashWindow:]...)
	}
}

// spill starts the full-output file with what is buffered so far.
func (o *bashOutput) spill() {
	if o.err != nil || o.max <= 0 {
		return
	}
	f, err := os.CreateTemp(o.dir, "bash-*.log")
	if err != nil {
		o.err = err
		return
	}
	o.file = f
	o.log(o.buf)
}

func (o *bashOutput) log(p []byte) {
	if o.err != nil || o.capped {
		return
	}
	if o.logged+int64(len(p)) > o.max {
		p = p[:o.max-o.logged]
		o.capped = true
	}
	if _, err := o.file.Write(p); err != nil {
		o.err = err
	}
	o.logged += int64(len(p))
}

// finish closes the log and renders the result text with its notice.
func (o *bashOutput) finish(d *BashDetails) (string, error) {
	tr := truncate.Tail(string(o.buf), truncate.Limits{})
	if tr.Truncated && o.file == nil {
		o.spill()
	}
	if o.file != nil {
		if err := o.file.Close(); err != nil && o.err == nil {
			o.err = err
		}
	}
	if o.err != nil {
		return "", fmt.Errorf("bash: saving the full output: %w", o.err)
	}
	text := strings.ToValidUTF8(tr.Content, "\uFFFD")
	if !tr.Truncated {
		return text, nil
	}
	tr.TotalLines = int(o.newlines) + 1
	tr.TotalBytes = int(o.total)
	d.Truncation = &tr
	full := "not kept (no room left in this thread's disk quota)"
	if o.file != nil {
		d.FullOutputPath = o.file.Name()
		full = o.file.Name()
	}
	if o.file != nil && o.capped {
		full += fmt.Sprintf(" (its first %s only)", truncate.FormatSize(o.max))
	}
	last := tr.TotalLines
	first := last - tr.OutputLines + 1
	var note string
	switch {
	case tr.LastLinePartial:
		note = fmt.Sprintf("[Showing the last %s of line %d, which is %s long. Full output: %s]",
			truncate.FormatSize(int64(tr.OutputBytes)), last, truncate.FormatSize(o.total-o.lastNL-1), full)
	case tr.By == truncate.ByLines:
		note = fmt.Sprintf("[Showing lines %d-%d of %d. Full output: %s]", first, last, tr.TotalLines, full)
	default:
		note = fmt.Sprintf("[Showing lines %d-%d of %d (%s limit). Full output: %s]", first, last, tr.TotalLines, truncate.FormatSize(truncate.MaxBytes), full)
	}
	return appendNote(text, note), nil
}

// hitFileSize reports whether the output shows a write stopped by the file
// size limit: EFBIG in a sandbox ("File too large"), SIGXFSZ unsandboxed.
func hitFileSize(out []byte) bool {
	return bytes.Contains(out, []byte("File too large")) || bytes.Contains(out, []byte("File size limit exceeded"))
}
