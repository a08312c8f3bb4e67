package escape

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
)

// The attacker fills its disk through its own bash, in every shape: one big
// file, many small ones, a sparse one. Thread A's files stay within its
// quota (one file stops at what is left; many files are stopped at the
// watcher's next look), nothing outside A changes, and the bot's own work
// after the run (status, commit, push, diff, sync) goes on in A and in B.
func TestDiskFillingAttackStaysInItsQuota(t *testing.T) {
	w := newWorld(t)
	const quota = 8 << 20
	ticks := make(chan time.Time)
	home, _ := os.UserHomeDir()
	tw, err := tools.NewWorkspace(tools.WorkspaceConfig{
		Root:    w.a.Root(),
		Scratch: w.a.ScratchDir(),
		Sandbox: sandboxtest.New(t, sandbox.Config{Hide: []string{w.dataDir, w.config, home}}),
		Quota: tools.Quota{Bytes: quota, Files: 2000,
			After: func(context.Context, time.Duration) <-chan time.Time { return ticks }},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	w.bash = tools.NewBashTool(tw)
	usage := func() diskuse.Usage {
		u, err := diskuse.Measure(t.Context(), w.a.Root(), w.a.ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		return u
	}

	out := w.attack(`head -c 200M /dev/zero > big.bin; truncate -s 100G sparse.bin; echo "sparse: $?"; ls -ls`)
	if u := usage(); u.Bytes > quota {
		t.Errorf("one big file took thread A to %d bytes, past its %d-byte quota:\n%s", u.Bytes, quota, out)
	}
	if !strings.Contains(out, "sparse: 1") {
		t.Errorf("a 100 GiB sparse file was made under an 8 MiB quota:\n%s", out)
	}
	w.intact(out)
	w.botRuns()

	// Many small files: the watcher's next look stops them.
	done, filled := make(chan string, 1), make(chan struct{})
	var once sync.Once
	go func() {
		args := `{"command": "rm -f big.bin sparse.bin; for i in $(seq 5000); do : > f$i; done; echo filled; sleep 50"}`
		res, err := w.bash.Execute(w.ctx, agent.ToolCall{ID: "fill", Name: tools.BashName, Args: []byte(args)}, func(p agent.ToolResult) {
			if len(p.Content) > 0 && strings.Contains(p.Content[0].Text, "filled") {
				once.Do(func() { close(filled) })
			}
		})
		if err != nil {
			t.Error(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			b.WriteString(c.Text)
		}
		done <- b.String()
	}()
	select {
	case <-filled:
	case out = <-done:
		t.Fatalf("the loop ended before the watcher looked:\n%s", out)
	}
	ticks <- time.Now()
	out = <-done
	if !strings.Contains(out, "[Stopped: Disk quota:") {
		t.Errorf("many small files were not stopped:\n%s", out)
	}
	w.intact(out)
	w.botRuns()
	out = w.attack(`find . -maxdepth 1 -name 'f*' -delete; echo x > after.txt && echo ok`)
	if !strings.Contains(out, "ok") {
		t.Errorf("after deleting, thread A does not work again:\n%s", out)
	}
	w.intact(out)
	w.botRuns()
	if files := w.remote.Files(t, w.a.Branch()); !strings.Contains(files["after.txt"], "x") {
		t.Errorf("thread A's work after the attack was not committed and pushed: %v", files)
	}
}
