package sandbox_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

type startFailures struct{ n atomic.Int32 }

func (f *startFailures) StartFailed() { f.n.Add(1) }

// A sandbox that cannot be built (here: a mount of a path that does not
// exist) is counted for the operator; a good start is not.
func TestFailedStartsAreCounted(t *testing.T) {
	failures := &startFailures{}
	sb := sandboxtest.New(t, sandbox.Config{Metrics: failures})
	dir := t.TempDir()
	p, err := sb.Start(sandbox.Spec{Path: "/bin/true", Dir: dir, Mounts: []sandbox.Mount{{Path: dir, Access: sandbox.ReadWrite}}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := failures.n.Load(); n != 0 {
		t.Fatalf("%d failures counted after a good start", n)
	}
	// A root bot clones the mounts itself and fails in Start; the init of
	// a bot that is not root fails to build the sandbox, and Wait says so.
	missing := filepath.Join(dir, "missing")
	if p, err := sb.Start(sandbox.Spec{Path: "/bin/true", Dir: missing, Mounts: []sandbox.Mount{{Path: missing, Access: sandbox.ReadWrite}}}); err == nil {
		if _, err := p.Wait(); err == nil {
			t.Fatal("a sandbox over a missing writable mount ran")
		}
	}
	if n := failures.n.Load(); n != 1 {
		t.Fatalf("%d failures counted after a failed start, want 1", n)
	}
}
