package bridge

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

func TestRunSlotsAreSharedAcrossThreads(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) { c.MaxConcurrentRuns = 1 })
	g := newGate(t)
	var n atomic.Int32
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
		}
		return llmfake.TextReply("answer to: " + req.LastMessage().Content)
	})
	a, b := testThread("60.1"), testThread("60.2")
	r.say(a, alice, "first thread", true)
	r.waitArrived(g)
	r.say(b, bob, "second thread", true)
	r.waitText(b, "All 1 run slots are busy; this request starts as soon as one frees up.")
	r.waitText(b, "⏳ working…") // its status was posted before it waited
	if got := len(r.requests()); got != 1 {
		t.Fatalf("LLM requests while the only slot is taken = %d, want 1", got)
	}
	g.release()
	r.waitText(a, "answer to: first thread")
	r.waitText(b, "answer to: second thread")
	r.waitRuns(b, 1)
	reqs := r.requests()
	if len(reqs) != 2 || reqs[1].LastMessage().Content != "second thread" {
		t.Errorf("the waiting thread did not run after the first: %d requests", len(reqs))
	}
}

func TestRunTimeoutStopsTheRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) { c.RunTimeout = 300 * time.Millisecond })
	var n atomic.Int32
	r.llm.Handle(func(llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			return llmfake.Stream(llmfake.Content("thinking forever"), llmfake.Hang())
		}
		return llmfake.TextReply("quick answer")
	})
	th := testThread("61.1")
	r.say(th, alice, "do something slow", true)
	r.waitText(th, "⏹ stopped: the run took longer than the 300ms limit.")
	if err := r.llm.WaitDisconnects(r.ctx, 1); err != nil {
		t.Fatalf("the model request was not cancelled: %v", err)
	}
	r.waitRuns(th, 1)
	// The thread takes the next message normally.
	r.say(th, alice, "something quick", false)
	r.waitText(th, "quick answer")
	r.waitRuns(th, 2)
	if tr := r.chat.Transcript(th); strings.Count(tr, "took longer") != 1 {
		t.Errorf("the timeout notice appears %d times, want once:\n%s", strings.Count(tr, "took longer"), tr)
	}
}

func TestBotLoopGuard(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	r := newRig(t, func(c *Config, _ *Platform) { c.Now = clock.Now })
	th := testThread("62.1")
	const reply = "Nothing is running in this thread yet"
	r.say(th, alice, "!status", true)
	for range loopGuard - 1 {
		r.say(th, alice, "!status", false)
	}
	r.waitCount(th, reply, loopGuard)
	var guarded []string
	for range 3 { // one too many, then two more
		guarded = append(guarded, r.say(th, alice, "!status", false))
	}
	r.waitText(th, "More than 30 messages in a minute")
	r.waitUntil("the guarded messages are dropped", func() bool {
		for _, id := range guarded {
			if inboundByMessage(t, r, id).State != storage.InboundDropped {
				return false
			}
		}
		return true
	})
	clock.Advance(61 * time.Second)
	r.say(th, alice, "!status", false)
	r.waitCount(th, reply, loopGuard+1)
	r.flush()
	tr := r.chat.Transcript(th)
	if got := strings.Count(tr, reply); got != loopGuard+1 {
		t.Errorf("answered %d messages, want %d (30, none while guarded, then 1)", got, loopGuard+1)
	}
	if got := strings.Count(tr, "More than 30 messages in a minute"); got != 1 {
		t.Errorf("guard warnings = %d, want 1", got)
	}
	if n := len(r.requests()); n != 0 {
		t.Errorf("LLM requests = %d, want 0", n)
	}
}

func TestIdleThreadIsEvictedAndReloaded(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) { c.IdleEvict = 100 * time.Millisecond })
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		return llmfake.TextReply("reply to: " + req.LastMessage().Content)
	})
	th := testThread("63.1")
	r.say(th, alice, "my name is Ada", true)
	r.waitRuns(th, 1)
	r.waitUntil("the idle thread is evicted", func() bool { return !r.live(th) })

	r.say(th, alice, "what is my name?", false)
	r.waitRuns(th, 2)
	req := r.lastRequest()
	if users := userTexts(req); len(users) != 2 || users[0] != "my name is Ada" || users[1] != "what is my name?" {
		t.Errorf("user messages after reloading = %q, want the earlier one and the new one", users)
	}
	answered := false
	for _, m := range req.Messages {
		if m.Role == "assistant" && m.Content == "reply to: my name is Ada" {
			answered = true
		}
	}
	if !answered {
		t.Error("the reloaded session lost the earlier answer")
	}
}

// pushScript scripts three runs: write a.txt, write b.txt (its first request
// held by g), then answer without changing anything.
func pushScript(r *rig, g *gate) {
	var n atomic.Int32
	r.llm.Handle(func(llmfake.Request) llmfake.Response {
		switch n.Add(1) {
		case 1:
			return writeThenAnswer("a.txt", "a", "")[0]
		case 2:
			return llmfake.TextReply("wrote a")
		case 3:
			g.hold()
			return writeThenAnswer("b.txt", "b", "")[0]
		case 4:
			return llmfake.TextReply("wrote b")
		}
		return llmfake.TextReply("nothing to change")
	})
}

func TestFailedPushIsReportedAndRetriedAfterTheNextRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGate(t)
	pushScript(r, g)
	th := testThread("64.1")
	r.say(th, alice, "write a", true)
	r.waitText(th, "⬆️ pushed")
	r.waitRuns(th, 1)
	rec, _ := r.thread(th)

	// Someone else pushes to the bot's branch while it works.
	r.say(th, alice, "write b", false)
	r.waitArrived(g)
	r.remote.Commit(t, gitremote.Change{Branch: rec.Branch, Files: map[string]string{"eve.txt": "eve\n"}, Name: "Eve", Email: "eve@example.com", Message: "eve's change"})
	g.release()
	r.waitText(th, "⚠️ Pushing `"+rec.Branch+"` failed:")
	r.waitRuns(th, 2)
	if _, ok := r.remote.Files(t, rec.Branch)["b.txt"]; ok {
		t.Fatal("b.txt reached the remote although the push was reported as failed")
	}
	if p, err := r.db.LastPush(r.ctx, rec.ID); err != nil || p.Result != storage.PushRejected {
		t.Errorf("last push = %+v, %v; want a rejected push recorded", p, err)
	}

	// The next run changes nothing; the kept commit is pushed after it, with
	// Eve's commit brought in (not dropped).
	r.say(th, alice, "anything else?", false)
	r.waitCount(th, "⬆️ pushed", 2)
	r.waitRuns(th, 3)
	files := r.remote.Files(t, rec.Branch)
	if files["b.txt"] != "b" || files["eve.txt"] != "eve" || files["a.txt"] != "a" {
		t.Errorf("remote branch files = %v, want a.txt, Eve's eve.txt and b.txt", files)
	}
	if p, err := r.db.LastPush(r.ctx, rec.ID); err != nil || p.Result != storage.PushOK {
		t.Errorf("last push = %+v, %v; want ok", p, err)
	}
}

func TestConflictingPushIsReportedBeforeTheNextRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGate(t)
	pushScript(r, g)
	th := testThread("65.1")
	r.say(th, alice, "write a", true)
	// The answer comes before the push: Eve's commit waits for the branch.
	r.waitText(th, "⬆️ pushed")
	r.waitRuns(th, 1)
	rec, _ := r.thread(th)
	r.say(th, alice, "write b", false)
	r.waitArrived(g)
	// Eve writes the same file differently: the bot's commit cannot be replayed on hers.
	r.remote.Commit(t, gitremote.Change{Branch: rec.Branch, Files: map[string]string{"b.txt": "eve's b\n"}, Name: "Eve", Email: "eve@example.com"})
	g.release()
	r.waitText(th, "failed")
	r.waitRuns(th, 2)
	r.say(th, alice, "anything else?", false)
	r.waitText(th, "has commits on the remote that conflict with mine")
	r.waitRuns(th, 3)
	if got := r.remote.Files(t, rec.Branch)["b.txt"]; got != "eve's b" {
		t.Errorf("b.txt on the remote = %q, want Eve's version kept", got)
	}
}

func TestShutdownInterruptsAnActiveRunAndLeavesNoGoroutine(t *testing.T) {
	// Not parallel: it counts the process's goroutines and bounds the
	// shutdown's wall time, which tests running beside it would change.
	before := runtime.NumGoroutine()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response {
		return llmfake.Stream(llmfake.Content("working on it"), llmfake.Hang())
	})
	th := testThread("66.1")
	r.say(th, alice, "a long job", true)
	if _, err := r.llm.WaitRequests(r.ctx, 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := r.stop(time.Second); err != nil {
		t.Errorf("Shutdown = %v, want nil within the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutting down took %s with a 1 s deadline", d)
	}
	if tr := r.chat.Transcript(th); !strings.Contains(tr, "interrupted") {
		t.Errorf("the thread was not told its run was interrupted:\n%s", tr)
	}
	r.llm.Close()

	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before {
		select {
		case <-tick.C:
		case <-deadline.C:
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			t.Fatalf("%d goroutines after shutdown, %d before:\n%s", runtime.NumGoroutine(), before, buf.String())
		}
	}
}
