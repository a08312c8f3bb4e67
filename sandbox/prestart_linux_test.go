package sandbox

import (
	"os"
	"strings"
	"testing"
	"time"
)

// waitIdle waits (a bounded while) for the init started in the background
// for k.
func waitIdle(t *testing.T, k initKey) *initProc {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		idleInits.Lock()
		p, starting := idleInits.idle[k], idleInits.starting[k]
		idleInits.Unlock()
		if p != nil {
			return p
		}
		if starting == nil {
			t.Fatal("no init is waiting or being started")
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the waiting init did not start in 30 s")
	return nil
}

func runTrue(t *testing.T, s *Sandbox) *confined {
	t.Helper()
	dir := t.TempDir()
	out, err := os.CreateTemp(dir, "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := s.Start(Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "echo inside"}, Dir: dir, Mounts: []Mount{{Path: dir, Access: ReadWrite}}, Stdout: out})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := p.Wait(); err != nil || e.Code != 0 {
		t.Fatalf("%+v %v", e, err)
	}
	if b, _ := os.ReadFile(out.Name()); !strings.Contains(string(b), "inside") {
		t.Fatalf("the command's output did not reach its file: %q", b)
	}
	return p.impl.(*confined)
}

// After a command, an init waits for the next one, which it then runs; one
// that died while it waited is replaced without the command noticing.
func TestTheNextCommandRunsInAnInitStartedAhead(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Skip(err)
	}
	k := initKey{hostID: s.hostID, hostGID: s.hostGID(), network: false}
	runTrue(t, s)
	ahead := waitIdle(t, k)
	if c := runTrue(t, s); c.cmd != ahead.cmd {
		t.Errorf("the command ran in init %d, not in the one started ahead (%d)", c.cmd.Process.Pid, ahead.cmd.Process.Pid)
	}
	dead := waitIdle(t, k)
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); dead.alive(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed init is still there after 30 s")
		}
	}
	if c := runTrue(t, s); c.cmd == dead.cmd {
		t.Errorf("the command was handed to a dead init")
	}
}

// A command that comes right after another, while the init for it is still
// being started, waits for that one rather than starting a second beside it.
func TestABackToBackCommandWaitsForTheInitBeingStarted(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Skip(err)
	}
	k := initKey{hostID: s.hostID, hostGID: s.hostGID(), network: false}
	runTrue(t, s)
	waitIdle(t, k)
	before := unreadyInits.Load()
	for range 5 {
		runTrue(t, s)
	}
	if n := unreadyInits.Load() - before; n != 0 {
		t.Errorf("%d of 5 back-to-back commands started an init of their own", n)
	}
}
