package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// terminal is the bot started on a pseudo-terminal, as a person runs it:
// what it prints is read from the terminal's master side, and typing there
// goes through the line discipline (Ctrl-C becomes SIGINT).
type terminal struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	exited chan struct{}
	err    error

	mu      sync.Mutex
	out     strings.Builder
	changed chan struct{} // signalled on every read
}

// openPTY returns a pseudo-terminal's master and its slave.
func openPTY(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

func startTerminal(t *testing.T, bin, dir string, env []string, args ...string) *terminal {
	t.Helper()
	master, slave := openPTY(t)
	term := &terminal{t: t, master: master, exited: make(chan struct{}), changed: make(chan struct{}, 1)}
	term.cmd = exec.Command(bin, args...)
	term.cmd.Dir = dir
	term.cmd.Env = env
	term.cmd.Stdin, term.cmd.Stdout, term.cmd.Stderr = slave, slave, slave
	// Its own session, with the terminal as its controlling terminal: the
	// bot is the foreground process group that Ctrl-C signals.
	term.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := term.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				term.mu.Lock()
				term.out.Write(buf[:n])
				term.mu.Unlock()
				select {
				case term.changed <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return // EIO once the bot and its children closed the terminal
			}
		}
	}()
	go func() {
		term.err = term.cmd.Wait()
		// What the bot wrote just before it exited may still be in the
		// terminal: exited says the output is read too (a child that kept
		// the terminal open is given 2 s; the tests look for such children).
		select {
		case <-drained:
		case <-time.After(2 * time.Second):
		}
		close(term.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-term.exited:
		default:
			_ = term.cmd.Process.Kill()
			<-term.exited
		}
		master.Close()
		if t.Failed() {
			t.Logf("terminal:\n%s", term.output())
		}
	})
	return term
}

func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return strings.ReplaceAll(term.out.String(), "\r\n", "\n")
}

func (term *terminal) typeText(s string) {
	term.t.Helper()
	if _, err := term.master.WriteString(s); err != nil {
		term.t.Fatal(err)
	}
}

// waitFor waits until the terminal shows s (after offset from, a mark).
func (term *terminal) waitFor(ctx context.Context, from int, s string) int {
	term.t.Helper()
	for {
		out := term.output()
		if i := strings.Index(out[min(from, len(out)):], s); i >= 0 {
			return from + i + len(s)
		}
		select {
		case <-term.changed:
		case <-term.exited:
			term.t.Fatalf("the bot exited (%v) before showing %q", term.err, s)
		case <-ctx.Done():
			term.t.Fatalf("the terminal never showed %q", s)
		}
	}
}

func (term *terminal) mark() int { return len(term.output()) }

// The README's first command, as a person uses it in a terminal: type, watch
// the answer stream, steer, stop with Ctrl-C, quit with a second Ctrl-C,
// start again (continuing the session) and be answered at once.
//
// Not parallel: it bounds the whole conversation to a minute and times
// Ctrl-C and SIGTERM.
func TestConsoleInATerminal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBot(t)
	ctx, cancel = context.WithTimeout(ctx, time.Minute)
	defer cancel()

	release := make(chan struct{})
	var releaseAll sync.Once
	// The agent's bash runs sleep with this (unusual) duration, once in the
	// background: what is left of it after the bot quit is found by it.
	sleeper := 400000 + os.Getpid()%100000*2
	llm := llmfake.New(t)
	// Registered after the fake LLM, so it runs before its Close: no
	// handler stays blocked.
	t.Cleanup(func() { releaseAll.Do(func() { close(release) }) })
	var calls atomic.Int32
	llm.Handle(func(r llmfake.Request) llmfake.Response {
		text := lastUserText(r)
		switch {
		case strings.Contains(text, "first request"):
			return llmfake.TextReply("Hello ", "from ", "the ", "model.")
		case strings.Contains(text, "hold on"):
			if calls.Add(1) == 1 {
				<-release
			}
			return llmfake.TextReply("held answer")
		case strings.Contains(text, "go left"):
			return llmfake.TextReply("steered: going left")
		case strings.Contains(text, "run the sleeper"):
			if r.LastMessage().Role == "tool" {
				return llmfake.TextReply("the sleeper ended")
			}
			args := fmt.Sprintf(`{"command":"(sleep %d &); sleep %d"}`, sleeper, sleeper+1)
			return llmfake.ToolCallReply(llmfake.Call{ID: fmt.Sprintf("s%d", r.Seq), Name: "bash", Args: args})
		case strings.Contains(text, "endless"):
			select {
			case <-release:
			case <-time.After(time.Minute):
			}
			return llmfake.TextReply("too late")
		}
		return llmfake.TextReply("answer to: " + text)
	})

	repo := t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=main")
	gitremote.WriteFile(t, repo, "README.md", "# demo\n")
	gitremote.GitInput(t, repo, nil, nil, "add", "-A")
	gitremote.GitInput(t, repo, nil, nil, "commit", "--quiet", "-m", "init")
	// The README's next step: a config.yaml for a team, Slack enabled and
	// its token unset, a relative data_dir. The console takes its LLM part.
	cfgPath := filepath.Join(repo, "config.yaml")
	cfgYAML := fmt.Sprintf("data_dir: ./data\nllm: {base_url: %q, api_key: sk-console, model: fake-model}\nslack:\n  enabled: true\n  bot_token: ${SLACK_BOT_TOKEN}\nhttp: {listen: \"127.0.0.1:0\"}\nlog: {level: debug}\n", llm.URL())
	if err := os.WriteFile(cfgPath, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLACK_") && !strings.HasPrefix(kv, "OPENAI_") {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_CACHE_HOME="+cache, "TERM=dumb", "USER=alice")

	term := startTerminal(t, bin, repo, env, "-console")
	at := term.waitFor(ctx, 0, "threadsmith console")
	at = term.waitFor(ctx, at, "new session ")

	// Before the first request: !model lists the models and says what to
	// do here (there is no one to mention); an unknown !word is answered.
	term.typeText("!model\n")
	at = term.waitFor(ctx, at, "No conversation here yet: type a request and I start with `fake-model`")
	term.typeText("!modle\n")
	at = term.waitFor(ctx, at, "Unknown command `!modle`")

	// Type; the answer streams in and is shown once.
	term.typeText("first request\n")
	at = term.waitFor(ctx, at, "bot> Hello from the model.")
	at = term.waitFor(ctx, at, "⏱")
	if n := strings.Count(term.output(), "Hello from the model."); n != 1 {
		t.Errorf("the answer shows %d times, want once", n)
	}

	// Steer a run that is busy.
	term.typeText("hold on\n")
	at = term.waitFor(ctx, at, "bot> ⏳ working…")
	for calls.Load() == 0 {
		select {
		case <-term.changed:
		case <-ctx.Done():
			t.Fatal("the held request never reached the model")
		}
	}
	term.typeText("!steer go left\n")
	// It says when the steer arrives whether or not a tool runs (it said
	// "after the current tool" while the model was writing).
	at = term.waitFor(ctx, at, "(queued as steer: delivered at the model's next step")
	release <- struct{}{}
	at = term.waitFor(ctx, at, "bot> steered: going left")
	if n := strings.Count(term.output(), "held answer"); n != 1 {
		t.Errorf("the first answer of the steered run shows %d times, want once", n)
	}

	// Ctrl-C stops the run and says so; the bot keeps going.
	term.typeText("endless\n")
	at = term.waitFor(ctx, at, "bot> ⏳ working…")
	pressed := time.Now()
	term.typeText("\x03")
	at = term.waitFor(ctx, at, "press Ctrl-C again to quit")
	at = term.waitFor(ctx, at, "stopped")
	// Timings for BENCHMARKS.md: go test -v -run TestConsoleInATerminal ./cmd/bot | grep timing
	t.Logf("timing: Ctrl-C to 'stopped' while the model writes: %v", time.Since(pressed).Round(time.Millisecond))
	term.typeText("are you there?\n")
	at = term.waitFor(ctx, at, "bot> answer to: are you there?")

	// A second Ctrl-C in a row quits, promptly and cleanly.
	term.typeText("\x03")
	term.waitFor(ctx, at, "press Ctrl-C again to quit")
	pressed = time.Now()
	term.typeText("\x03")
	select {
	case <-term.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the bot did not quit on the second Ctrl-C")
	}
	t.Logf("timing: second Ctrl-C to exit, idle: %v", time.Since(pressed).Round(time.Millisecond))
	if term.err != nil {
		t.Fatalf("the bot quit with %v, want exit 0", term.err)
	}
	first := term.output()
	for _, bad := range []string{"level=INFO", "level=DEBUG", "SLACK_BOT_TOKEN", "config="} {
		if strings.Contains(first, bad) {
			t.Errorf("the terminal shows %q: logs belong in the log file", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "data")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the console put its data_dir inside the repository")
	}

	// Start again on the same session: the first line is answered (it is
	// not taken for a repeat of the first line of the last process).
	term2 := startTerminal(t, bin, repo, env, "-console", "-continue")
	at = term2.waitFor(ctx, 0, "continuing session ")
	term2.typeText("first line again\n")
	at = term2.waitFor(ctx, at, "bot> answer to: first line again")
	releaseAll.Do(func() { close(release) })
	// Ctrl-C while the agent's bash runs (and has a child in the
	// background): the first stops the run and kills them, the second
	// quits, and nothing the agent started is left.
	term2.typeText("run the sleeper\n")
	at = term2.waitFor(ctx, at, "bot> ⏳ `bash`")
	waitProcesses(t, ctx, sleeper, 2)
	// Two Ctrl-C as a person presses them (two signals, not one the kernel
	// merged): the second quits.
	pressed = time.Now()
	term2.typeText("\x03")
	at = term2.waitFor(ctx, at, "press Ctrl-C again to quit")
	term2.waitFor(ctx, at, "stopped")
	t.Logf("timing: Ctrl-C to 'stopped' while bash runs: %v", time.Since(pressed).Round(time.Millisecond))
	pressed = time.Now()
	term2.typeText("\x03")
	select {
	case <-term2.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the bot did not quit")
	}
	t.Logf("timing: second Ctrl-C to exit, after a stopped run: %v", time.Since(pressed).Round(time.Millisecond))
	if term2.err != nil {
		t.Fatalf("the bot quit with %v, want exit 0", term2.err)
	}
	if !strings.Contains(term2.output(), "\nquitting…\n") {
		t.Error("the second Ctrl-C does not say it quits")
	}
	if left := sleepers(sleeper); len(left) > 0 {
		t.Errorf("processes the agent started outlived the bot: %v", left)
	}

	// SIGTERM while bash runs: the bot quits within its grace, exit 0, and
	// nothing the agent started is left.
	term3 := startTerminal(t, bin, repo, env, "-console", "-continue")
	at = term3.waitFor(ctx, 0, "continuing session ")
	term3.typeText("run the sleeper\n")
	term3.waitFor(ctx, at, "bot> ⏳ `bash`")
	waitProcesses(t, ctx, sleeper, 2)
	pressed = time.Now()
	if err := term3.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-term3.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the bot did not quit on SIGTERM")
	}
	t.Logf("timing: SIGTERM to exit while bash runs (grace %v): %v", consoleGrace, time.Since(pressed).Round(time.Millisecond))
	if term3.err != nil {
		t.Fatalf("the bot quit on SIGTERM with %v, want exit 0", term3.err)
	}
	if left := sleepers(sleeper); len(left) > 0 {
		t.Errorf("processes the agent started outlived the bot: %v", left)
	}
	if !strings.Contains(term3.output(), "This run was interrupted") {
		t.Error("the run SIGTERM cut off is not reported before the bot quits")
	}
	// Ctrl-D (the end of input, at a line's start) quits.
	term4 := startTerminal(t, bin, repo, env, "-console", "-continue")
	term4.waitFor(ctx, 0, "continuing session ")
	term4.typeText("\x04")
	select {
	case <-term4.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the bot did not quit on Ctrl-D")
	}
	if term4.err != nil {
		t.Fatalf("the bot quit on Ctrl-D with %v, want exit 0", term4.err)
	}
}

// sleepers lists the live processes running `sleep n` or `sleep n+1`.
func sleepers(n int) []string {
	want := map[string]bool{fmt.Sprintf("sleep\x00%d\x00", n): true, fmt.Sprintf("sleep\x00%d\x00", n+1): true}
	var found []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !want[string(cmdline)] {
			continue
		}
		// A zombie is dead: only its parent has yet to reap it.
		if st, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && strings.HasPrefix(string(st[i:]), ") Z") {
				continue
			}
		}
		found = append(found, d.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

// waitProcesses waits until count sleepers run (polling the process table:
// nothing signals a process start to the test).
func waitProcesses(t *testing.T, ctx context.Context, n, count int) {
	t.Helper()
	for len(sleepers(n)) < count {
		select {
		case <-ctx.Done():
			t.Fatalf("the agent's processes never started (have %v)", sleepers(n))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
