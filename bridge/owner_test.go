package bridge

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// onOwner runs f as the thread's owner and waits for it.
func (r *rig) onOwner(t *thread, f func()) {
	r.tb.Helper()
	done := make(chan struct{})
	if !t.post(ownerFunc(func() { f(); close(done) })) {
		r.tb.Fatal("the owner ended")
	}
	recv(r, "the owner to run the probe", done)
}

// A run's end is that run's: an end that reaches the owner late (the run
// before) does not finish the run going on, which ends when its session is
// idle.
func TestLateRunEndDoesNotFinishTheNextRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g1, g := newGate(t), newGate(t)
	var n atomic.Int32
	r.llm.Handle(func(llmfake.Request) llmfake.Response {
		switch n.Add(1) {
		case 1:
			g1.hold()
		case 2:
			g.hold()
		}
		return llmfake.TextReply("ok")
	})
	th := testThread("900.1")
	r.say(th, alice, "first", true)
	r.waitArrived(g1)
	owner := r.owner(th)
	var first *activeRun
	r.onOwner(owner, func() { first = owner.run })
	g1.release()
	r.waitRuns(th, 1)
	r.say(th, alice, "second", false)
	r.waitArrived(g)
	var second *activeRun
	r.onOwner(owner, func() { second = owner.run })
	if second == nil || second == first {
		t.Fatalf("the second run is not tracked (run %p, first %p)", second, first)
	}
	owner.post(msgRunEnded{first}) // the first run's end, late
	r.onOwner(owner, func() {
		if owner.run != second {
			t.Errorf("a late end of the first run finished the second")
		}
	})
	if got := strings.Count(r.chat.Transcript(th), "_⏱"); got != 1 {
		t.Errorf("%d footers while the second run goes on, want 1", got)
	}
	g.release()
	r.waitRuns(th, 2)
}

// Shutdown gives the active run until its deadline, then stops it and
// tells the thread; the owner ends and Shutdown returns within its grace,
// however long the model would have taken, and nothing of the thread is
// left running. Not parallel: it looks at every goroutine of the process.
func TestShutdownInterruptsARunPastItsDeadline(t *testing.T) {
	r := newRig(t)
	g := newGate(t)
	r.llm.Handle(g.holdFirst(llmfake.TextReply("too late")))
	th := testThread("901.1")
	r.say(th, alice, "work on this for a long time", true)
	r.waitArrived(g)
	owner := r.owner(th)
	start := time.Now()
	if err := r.stop(3 * time.Second); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Shutdown took %v, longer than its grace", d)
	}
	if owner.post(ownerFunc(func() {})) {
		t.Error("the owner still takes messages after Shutdown returned")
	}
	if tr := r.chat.Transcript(th); !strings.Contains(tr, "This run was interrupted: the bot is restarting") {
		t.Errorf("the thread was not told its run was interrupted:\n%s", tr)
	}
	// Nothing of the thread is left running: its owner, the run's waiter,
	// its timers' messages.
	var left string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if left = threadGoroutines(); left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of the thread still run after Shutdown:\n%s", left)
		}
	}
}

// threadGoroutines are the stacks of goroutines running code of a thread.
func threadGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "bridge.(*thread)") && !strings.Contains(g, "threadGoroutines") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// Input taken after a run's Start and before the run's agent_start reaches
// the owner joins the run; it does not take the run's status message, which
// goes on showing the run (disarmed, it would be edited to "…").
func TestInputBeforeAgentStartKeepsTheRunsStatus(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGate(t)
	var n atomic.Int32
	r.llm.Handle(func(llmfake.Request) llmfake.Response {
		if n.Add(1) == 2 {
			g.hold()
			return llmfake.TextReply("second answer")
		}
		return llmfake.TextReply("ok")
	})
	th := testThread("902.1")
	r.say(th, alice, "first", true)
	r.waitRuns(th, 1)
	owner := r.owner(th)
	// Both messages wait behind the blocked owner, so the second is taken
	// before the session's agent_start for the first can be.
	busy, held := make(chan struct{}), make(chan struct{})
	owner.post(ownerFunc(func() { close(held); <-busy }))
	recv(r, "the owner to be busy", held)
	r.say(th, alice, "second request", false)
	r.say(th, bob, "and a note", false)
	close(busy)
	r.waitArrived(g)
	g.release()
	r.waitRuns(th, 2)
	r.waitText(th, "second answer")
	for _, s := range r.chat.BotTexts(th) {
		if strings.TrimSpace(s) == "…" {
			t.Fatalf("a run's status message was taken by the input after it:\n%s", r.chat.Transcript(th))
		}
	}
	if got := strings.Count(r.chat.Transcript(th), "_⏱"); got != 2 {
		t.Errorf("%d footers after two runs, want 2:\n%s", got, r.chat.Transcript(th))
	}
}
