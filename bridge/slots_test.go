package bridge

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// answeredWithin sends text and waits for want in the thread, failing if it
// took longer than d (the thread's owner must not be blocked on a run slot).
func answeredWithin(t *testing.T, r *rig, th chat.ThreadRef, text, want string, d time.Duration) {
	t.Helper()
	start := time.Now()
	r.say(th, bob, text, false)
	r.waitText(th, want)
	took := time.Since(start)
	if took > d {
		t.Errorf("%s answered after %v, want < %v", text, took, d)
	}
	t.Logf("%s answered in %v while waiting for a run slot", text, took.Round(time.Millisecond))
}

// With max_concurrent_runs 1 and another thread's run holding the slot, a
// thread whose request waits for the slot answers !status and !stop within a
// second, and !stop cancels the waiting request before it starts: waiting
// for a slot is a state of the owner, not a blocked goroutine.
func TestWaitingForARunSlotStillAnswersCommands(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	for _, withSession := range []bool{false, true} {
		name := map[bool]string{false: "new thread", true: "thread with a session"}[withSession]
		t.Run(name, func(t *testing.T) {
			r := newRig(t, func(c *Config, _ *Platform) { c.MaxConcurrentRuns = 1 })
			g := newGate(t)
			var held atomic.Bool
			r.llm.Handle(func(req llmfake.Request) llmfake.Response {
				if slices.Contains(userTexts(req), "the long job") && held.CompareAndSwap(false, true) {
					g.hold()
				}
				return llmfake.TextReply("answer to: " + req.LastMessage().Content)
			})
			a, b := testThread("80.1"), testThread("80.2")
			if withSession {
				r.say(b, bob, "an earlier request", true)
				r.waitRuns(b, 1)
			}
			r.say(a, alice, "the long job", true)
			r.waitArrived(g)

			mention := !withSession
			r.say(b, bob, "please wait your turn", mention)
			r.waitText(b, "All 1 run slots are busy")
			answeredWithin(t, r, b, "!status", "waiting for a run slot", time.Second)
			answeredWithin(t, r, b, "!stop", "cancelled before it started", time.Second)

			g.release()
			r.waitRuns(a, 1)
			for _, req := range r.requests() {
				if slices.Contains(userTexts(req), "please wait your turn") {
					t.Fatal("the request cancelled while it waited for a slot reached the model")
				}
			}
			rec, _ := r.thread(b)
			pending, err := r.db.PendingInbound(r.ctx, rec.ID)
			if err != nil || len(pending) != 0 {
				t.Errorf("pending input of the stopped thread = %+v, %v; want none", pending, err)
			}

			// The slot is free again: the thread runs its next request.
			runs := 1
			if withSession {
				runs = 2
			}
			r.say(b, bob, "now go", false)
			r.waitRuns(b, runs)
			if last := userTexts(r.lastRequest()); !slices.Contains(last, "now go") {
				t.Errorf("the thread's next request sent %q, want it to include \"now go\"", last)
			}
		})
	}
}
