package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
	"github.com/threadsmith/threadsmith/workspace/diskuse/disktest"
)

// The disk quota, played by the attacker through the agent's own tools in
// the real sandbox: whatever it writes, its thread's files stop near the
// quota, the model and the thread are told, and rm brings it back.

// quotaRig is a sandboxed workspace with a quota whose watcher is stepped
// by hand (tick) and whose thread notices are recorded.
type quotaRig struct {
	*testWorkspace
	bash  *BashTool
	ticks chan time.Time

	mu      sync.Mutex
	notices []QuotaNotice
}

func newQuotaRig(t *testing.T, q Quota) *quotaRig {
	t.Helper()
	return newQuotaRigWith(t, WorkspaceConfig{Quota: q})
}

// newQuotaRigWith is newQuotaRig over a workspace configured as cfg.
func newQuotaRigWith(t *testing.T, cfg WorkspaceConfig) *quotaRig {
	t.Helper()
	q := cfg.Quota
	r := &quotaRig{ticks: make(chan time.Time)}
	q.After = func(context.Context, time.Duration) <-chan time.Time { return r.ticks }
	q.Notify = func(n QuotaNotice) {
		r.mu.Lock()
		r.notices = append(r.notices, n)
		r.mu.Unlock()
	}
	cfg.Quota = q
	r.testWorkspace = newSandboxedWorkspace(t, cfg)
	r.bash = NewBashTool(r.Workspace)
	return r
}

func (r *quotaRig) noticesSeen() []QuotaNotice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]QuotaNotice(nil), r.notices...)
}

func (r *quotaRig) usage(t *testing.T) diskuse.Usage {
	t.Helper()
	u, err := diskuse.Measure(t.Context(), r.root, r.Scratch())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func bashDetails(t *testing.T, res agent.ToolResult) BashDetails {
	t.Helper()
	var d BashDetails
	if len(res.Details) > 0 {
		if err := json.Unmarshal(res.Details, &d); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// runUntil runs command, which prints marker once it has done its damage
// and then waits; once the marker is seen the watcher is stepped, which
// must stop the command.
func (r *quotaRig) runUntil(t *testing.T, command, marker string) agent.ToolResult {
	t.Helper()
	seen := make(chan struct{})
	var once sync.Once
	done := make(chan agent.ToolResult, 1)
	go func() {
		done <- callCtx(t, t.Context(), r.bash, map[string]any{"command": command}, func(p agent.ToolResult) {
			if strings.Contains(textOf(p), marker) {
				once.Do(func() { close(seen) })
			}
		})
	}()
	select {
	case <-seen:
	case res := <-done:
		t.Fatalf("the command ended before the watcher looked:\n%s", textOf(res))
	case <-time.After(30 * time.Second):
		t.Fatal("the command never printed " + marker)
	}
	select {
	case r.ticks <- time.Now():
	case res := <-done:
		t.Fatalf("the command ended before the watcher looked:\n%s", textOf(res))
	}
	select {
	case res := <-done:
		return res
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not stop the command")
	}
	return agent.ToolResult{}
}

// One big file: the write stops at what is left of the quota ("File too
// large", the per-file limit), the model and the thread are told, and after
// rm the agent works again.
func TestQuotaStopsOneBigFile(t *testing.T) {
	const quota = 10 << 20
	r := newQuotaRig(t, Quota{Bytes: quota, Files: 1000})
	res := call(t, r.bash, map[string]any{"command": "head -c 200M /dev/zero > big.bin; ls -l big.bin"})
	out := textOf(res)
	fi, err := os.Stat(filepath.Join(r.root, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > quota {
		t.Errorf("big.bin is %d bytes, past the %d-byte quota", fi.Size(), quota)
	}
	if u := r.usage(t); u.Bytes > quota {
		t.Errorf("the workspace takes %d bytes, past the %d-byte quota", u.Bytes, quota)
	}
	if !strings.Contains(out, "File too large") || !strings.Contains(out, "[Disk quota: no file could grow past") {
		t.Errorf("the model was not told:\n%s", out)
	}
	if d := bashDetails(t, res); d.DiskQuota != "file_size" {
		t.Errorf("details %+v, want diskQuota file_size", d)
	}
	if ns := r.noticesSeen(); len(ns) != 1 || ns[0].Limit != "bytes" || !strings.Contains(ns[0].Message(), "disk quota (10.0MB") {
		t.Errorf("thread notices %+v, want one about the bytes", ns)
	}

	// At the quota a command may delete; the next one may grow again.
	res = call(t, r.bash, map[string]any{"command": "rm big.bin && echo removed"})
	if out := textOf(res); res.IsError || !strings.Contains(out, "removed") || strings.Contains(out, "quota") {
		t.Errorf("rm at the quota:\n%s", out)
	}
	res = call(t, r.bash, map[string]any{"command": "head -c 1M /dev/zero > small.bin && echo ok"})
	if out := textOf(res); res.IsError || !strings.Contains(out, "ok") || strings.Contains(out, "quota") {
		t.Errorf("after rm the agent does not work again:\n%s", out)
	}
}

// Many small files: no single write passes a limit, the watcher sees the
// count pass the quota and stops the command; the thread is told once, and
// after rm the agent works again and a later excess is told again.
func TestQuotaStopsManySmallFiles(t *testing.T) {
	r := newQuotaRig(t, Quota{Bytes: 1 << 30, Files: 500})
	res := r.runUntil(t, `mkdir fill && cd fill && for i in $(seq 3000); do echo "$i" > f$i; done; echo filled; sleep 60`, "filled")
	out := textOf(res)
	d := bashDetails(t, res)
	if !res.IsError || !d.StoppedByQuota || d.DiskQuota != "files" || !strings.Contains(out, "[Stopped: Disk quota:") {
		t.Errorf("the command was not stopped for its files (details %+v):\n%s", d, out)
	}
	if !strings.Contains(out, "of 500 allowed") || !strings.Contains(out, "rm works") {
		t.Errorf("the model was not told what to do:\n%s", out)
	}
	// The next command begins over the quota and is told so.
	res = call(t, r.bash, map[string]any{"command": "touch new-file"})
	if out := textOf(res); !strings.Contains(out, "[Disk quota: this thread's files") {
		t.Errorf("a command over the quota was not told:\n%s", out)
	}
	if ns := r.noticesSeen(); len(ns) != 1 || ns[0].Limit != "files" {
		t.Errorf("thread notices %+v, want exactly one about the files", ns)
	}
	res = call(t, r.bash, map[string]any{"command": "rm -rf fill new-file && echo x > a && echo ok"})
	if out := textOf(res); res.IsError || !strings.Contains(out, "ok") || strings.Contains(out, "quota") {
		t.Errorf("after rm the agent does not work again:\n%s", out)
	}
	r.runUntil(t, `for i in $(seq 1000); do : > g$i; done; echo filled; sleep 60`, "filled")
	if ns := r.noticesSeen(); len(ns) != 2 {
		t.Errorf("a second excess after being back under: %d notices, want 2", len(ns))
	}
}

// A sparse file: what counts is what it takes on disk (its holes are free),
// and no file may be larger, even in holes, than what is left of the quota.
func TestQuotaSparseFiles(t *testing.T) {
	const quota = 10 << 20
	r := newQuotaRig(t, Quota{Bytes: quota})
	res := call(t, r.bash, map[string]any{"command": "truncate -s 1G huge.sparse; echo \"huge: $?\"; truncate -s 8M small.sparse; echo \"small: $?\""})
	out := textOf(res)
	if !strings.Contains(out, "huge: 1") || !strings.Contains(out, "small: 0") {
		t.Errorf("a 1 GiB sparse file under a 10 MiB quota was made, or an 8 MiB one was not:\n%s", out)
	}
	if fi, err := os.Stat(filepath.Join(r.root, "huge.sparse")); err == nil && fi.Size() > quota {
		t.Errorf("huge.sparse is %d bytes", fi.Size())
	}
	res = call(t, r.bash, map[string]any{"command": "truncate -s 8M second.sparse && echo ok"})
	if out := textOf(res); !strings.Contains(out, "ok") || strings.Contains(out, "Disk quota") {
		t.Errorf("two 8 MiB sparse files take no room, yet the second was refused:\n%s", out)
	}
}

// The watcher stops a command over the quota in bytes made of files each
// under the per-file limit; the overshoot is what it wrote between two
// looks.
func TestQuotaStopsManyFilesOfBytes(t *testing.T) {
	const quota = 8 << 20
	r := newQuotaRig(t, Quota{Bytes: quota})
	res := r.runUntil(t, `for i in 1 2 3 4 5 6; do head -c 3M /dev/zero > f$i; done; echo filled; sleep 60`, "filled")
	d := bashDetails(t, res)
	if !d.StoppedByQuota || d.DiskQuota != "bytes" || !strings.Contains(textOf(res), "MB used of 8.0MB allowed") {
		t.Errorf("details %+v:\n%s", d, textOf(res))
	}
}

// Started over the quota (files the bot or an earlier call left), a command
// can still delete; it cannot grow anything, and the watcher stops one that
// makes files.
func TestQuotaOverAtStartStillDeletes(t *testing.T) {
	r := newQuotaRig(t, Quota{Bytes: 1 << 20})
	if err := os.WriteFile(filepath.Join(r.root, "blob"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, r.bash, map[string]any{"command": "echo x > new.txt; echo \"write: $?\"; rm blob && echo removed"})
	out := textOf(res)
	if !strings.Contains(out, "write: 1") || !strings.Contains(out, "removed") || !strings.Contains(out, "started with no room left (3.0MB used of 1.0MB allowed)") {
		t.Errorf("over the quota: want the write refused, rm working and the model told:\n%s", out)
	}
	if ns := r.noticesSeen(); len(ns) != 1 {
		t.Errorf("notices %+v, want one", ns)
	}
}

// The write and edit tools refuse what would pass the quota, and say so.
func TestQuotaRefusesFileToolWrites(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{Quota: Quota{Bytes: 1 << 20}})
	w := NewWriteTool(tw.Workspace, tw.files)
	res := call(t, w, map[string]any{"path": "big.txt", "content": strings.Repeat("x", 2<<20)})
	if !res.IsError || !strings.Contains(textOf(res), "past this thread's disk quota") {
		t.Errorf("a 2 MiB write under a 1 MiB quota: %s", textOf(res))
	}
	if _, err := os.Stat(filepath.Join(tw.root, "big.txt")); err == nil {
		t.Error("the refused file was written")
	}
	res = call(t, w, map[string]any{"path": "a.txt", "content": strings.Repeat("x", 600<<10)})
	if res.IsError {
		t.Fatalf("a 600 KiB write: %s", textOf(res))
	}
	// The tool counts its own writes: a second 600 KiB passes the quota.
	res = call(t, w, map[string]any{"path": "b.txt", "content": strings.Repeat("x", 600<<10)})
	if !res.IsError {
		t.Errorf("a second 600 KiB write under a 1 MiB quota was taken")
	}
	e := NewEditTool(tw.Workspace, tw.files)
	res = call(t, e, map[string]any{"path": "a.txt", "oldText": strings.Repeat("x", 600<<10), "newText": strings.Repeat("y", 1500<<10)})
	if !res.IsError || !strings.Contains(textOf(res), "disk quota") {
		t.Errorf("an edit growing a.txt past the quota: %s", textOf(res))
	}
	res = call(t, e, map[string]any{"path": "a.txt", "oldText": strings.Repeat("x", 600<<10), "newText": "short"})
	if res.IsError {
		t.Errorf("an edit shrinking a.txt: %s", textOf(res))
	}
}

// Below the machine's floor nothing grows: when data_dir's disk fills (a
// small tmpfs, as root), a running command that grew is stopped, the next
// one may only delete, and the write tool refuses; all resume by themselves
// once space returns.
func TestFloorStopsAndResumes(t *testing.T) {
	dir := disktest.Small(t, 32<<20)
	floor := &diskuse.Floor{Path: dir, Reserve: 8 << 20}
	r := newQuotaRig(t, Quota{Floor: floor})
	res := call(t, r.bash, map[string]any{"command": "echo x > before && echo ok"})
	if !strings.Contains(textOf(res), "ok") {
		t.Fatalf("above the floor: %s", textOf(res))
	}
	done := make(chan agent.ToolResult, 1)
	seen := make(chan struct{})
	var once sync.Once
	go func() {
		done <- callCtx(t, t.Context(), r.bash, map[string]any{"command": "head -c 1M /dev/zero > grown; echo grew; sleep 60"}, func(p agent.ToolResult) {
			if strings.Contains(textOf(p), "grew") {
				once.Do(func() { close(seen) })
			}
		})
	}()
	<-seen
	fill := filepath.Join(dir, "fill.bin")
	disktest.Fill(t, fill) // the disk fills up
	r.ticks <- time.Now()
	res = <-done
	if d := bashDetails(t, res); !d.StoppedByQuota || d.DiskQuota != "reserve" || !strings.Contains(textOf(res), "nearly full") {
		t.Errorf("a growing command below the floor was not stopped (%+v):\n%s", d, textOf(res))
	}
	if free, _ := diskuse.Free(dir); free < 8<<20 {
		t.Errorf("%d bytes free once the disk filled, want the 8 MiB reserve handed over", free)
	}
	res = call(t, r.bash, map[string]any{"command": "echo x > more; echo \"write: $?\"; rm grown && echo removed"})
	if out := textOf(res); !strings.Contains(out, "write: 1") || !strings.Contains(out, "removed") {
		t.Errorf("below the floor: want writes refused and rm working:\n%s", out)
	}
	w := NewWriteTool(r.Workspace, r.files)
	if res := call(t, w, map[string]any{"path": "w.txt", "content": "hello"}); !res.IsError || !strings.Contains(textOf(res), "nearly full") ||
		!strings.HasPrefix(textOf(res), "Not written: The bot's disk") || strings.HasSuffix(textOf(res), "]") {
		t.Errorf("the write tool below the floor: %s", textOf(res))
	}
	if ns := r.noticesSeen(); len(ns) != 1 || ns[0].Limit != "reserve" || !strings.Contains(ns[0].Message(), "resume by themselves") {
		t.Errorf("thread notices %+v, want one about the reserve", ns)
	}
	if err := os.Remove(fill); err != nil { // space returns
		t.Fatal(err)
	}
	res = call(t, r.bash, map[string]any{"command": "echo x > after && echo ok"})
	if out := textOf(res); res.IsError || !strings.Contains(out, "ok") || strings.Contains(out, "nearly full") {
		t.Errorf("once space returned: %s", out)
	}
}

// No single file may fill the disk, quota or not: a 100 MiB write on a
// 48 MiB disk (a small tmpfs, as root) stops short of the reserve's margin,
// and the database's reserve is still set aside.
func TestFileSizeKeepsOffTheReserve(t *testing.T) {
	dir := disktest.Small(t, 48<<20)
	floor := &diskuse.Floor{Path: dir, Reserve: 8 << 20}
	r := newQuotaRig(t, Quota{Floor: floor})
	f, err := os.Create(filepath.Join(dir, "other.bin")) // the rest of the disk, taken by others
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 30<<20)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res := call(t, r.bash, map[string]any{"command": "head -c 100M /dev/zero > big.bin; stat -c %s big.bin"})
	fi, err := os.Stat(filepath.Join(r.root, "big.bin"))
	if err != nil || fi.Size() > 10<<20 || !strings.Contains(textOf(res), "File too large") {
		t.Errorf("a 100 MiB file with about 10 MiB left above the reserve: %v\n%s", err, textOf(res))
	}
	if st, err := floor.Check(); err != nil || st.Low {
		t.Errorf("the reserve was taken: %+v, %v", st, err)
	}
}

// BenchmarkBashQuota is one sandboxed `true` in a workspace of files files,
// with the quota (one walk after the command) and without, in the same run.
func BenchmarkBashQuota(b *testing.B) {
	for _, files := range []int{1_000, 10_000} {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("%dfiles/quota=%v", files, on)
			b.Run(name, func(b *testing.B) {
				cfg := WorkspaceConfig{Sandbox: sandboxtest.New(b, sandbox.Config{})}
				if on {
					cfg.Quota = Quota{Bytes: 5 << 30, Files: 200_000}
				}
				tw := newTestWorkspace(b, cfg)
				for i := range files {
					p := filepath.Join(tw.root, fmt.Sprintf("d%d", i/100), fmt.Sprintf("f%d.go", i))
					if i%100 == 0 {
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							b.Fatal(err)
						}
					}
					if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				sh := NewBashTool(tw.Workspace)
				for b.Loop() {
					if res := call(b, sh, map[string]any{"command": "true"}); res.IsError {
						b.Fatal(textOf(res))
					}
				}
			})
		}
	}
}

// On a tree slow to walk, a command does not wait for the walk after it:
// the workspace is measured in the background, and the next command starts
// from that measurement (and is told of the excess).
func TestQuotaMeasuresSlowTreesAfterTheCommand(t *testing.T) {
	defer func(old time.Duration) { slowWalk = old }(slowWalk)
	slowWalk = 0 // every tree is slow
	r := newQuotaRig(t, Quota{Files: 50})
	res := call(t, r.bash, map[string]any{"command": "for i in $(seq 100); do : > f$i; done; echo made"})
	if out := textOf(res); !strings.Contains(out, "made") || strings.Contains(out, "Disk quota") {
		t.Errorf("the first command: %s", out)
	}
	res = call(t, r.bash, map[string]any{"command": "true"})
	if out := textOf(res); !strings.Contains(out, "[Disk quota: this thread's files") || !strings.Contains(out, "of 50 allowed") {
		t.Errorf("the next command was not told of the excess measured after the first:\n%s", out)
	}
	if ns := r.noticesSeen(); len(ns) != 1 || ns[0].Limit != "files" {
		t.Errorf("thread notices %+v, want one about the files", ns)
	}
}

// A folder tree too deep to measure (the agent's own mkdir loop) does not
// lock the agent out: its commands cannot grow files, they are told why,
// and rm -rf of the tree brings everything back.
func TestQuotaTreeTooDeepToMeasureCanBeDeleted(t *testing.T) {
	r := newQuotaRig(t, Quota{Bytes: 1 << 30})
	res := call(t, r.bash, map[string]any{"command": fmt.Sprintf("for i in $(seq %d); do mkdir d && cd d || break; done; echo deep", diskuse.MaxDepth+5)})
	if out := textOf(res); !strings.Contains(out, "could not be measured") {
		t.Errorf("the command that made the deep tree was not told:\n%s", out)
	}
	res = call(t, r.bash, map[string]any{"command": "echo x > f; echo \"write: $?\"; rm -rf d && echo removed"})
	if out := textOf(res); !strings.Contains(out, "write: 1") || !strings.Contains(out, "removed") {
		t.Errorf("with an unmeasurable tree: want writes refused and rm working:\n%s", out)
	}
	res = call(t, r.bash, map[string]any{"command": "echo x > f && echo ok"})
	if out := textOf(res); res.IsError || !strings.Contains(out, "ok") || strings.Contains(out, "quota") {
		t.Errorf("after rm -rf of the deep tree: %s", out)
	}
	if ns := r.noticesSeen(); len(ns) != 1 || !strings.Contains(ns[0].Message(), "could not be measured") {
		t.Errorf("thread notices %+v, want one", ns)
	}
}

// quotaUsage is the usage the workspace's quota measures now.
func (r *quotaRig) quotaUsage(t *testing.T) diskuse.Usage {
	t.Helper()
	u, err := r.quota.measure(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return u
}
