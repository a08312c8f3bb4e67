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
	clock := newFakeClock()
	r := newRig(t, func(c *Config, _ *Platform) { c.Now = clock.Now })
	th := testThread("62.1")
	const reply = "Nothing is running in this thread yet"
	r.say(th, alice, "!status", true)
	for range loopGuard - 1 {
		r.say(th, alice, "!status", false)
	}
	r.waitCount(th, reply, loopGuard)
	for range 3 { // one too many, then two more
		r.say(th, alice, "!status", false)
	}
	r.waitText(th, "More than 30 messages in a minute")
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

func TestFailedPushIsReportedAndRetriedAfterTheNextRun(t *testing.T) {
	r := newRig(t)
	r.llm.Push(writeThenAnswer("a.txt", "a", "wrote a")...)
	r.llm.Push(writeThenAnswer("b.txt", "b", "wrote b")...)
	r.llm.Push(llmfake.TextReply("nothing to change"))
	th := testThread("64.1")
	r.say(th, alice, "write a", true)
	r.waitText(th, "⬆️ pushed")
	r.waitRuns(th, 1)
	rec, _ := r.thread(th)
	pushed := r.remote.Rev(t, "refs/heads/"+rec.Branch)

	// Someone else pushes to the bot's branch.
	r.remote.Commit(t, gitremote.Change{Branch: rec.Branch, Files: map[string]string{"eve.txt": "eve\n"}, Name: "Eve", Email: "eve@example.com", Message: "eve's change"})
	r.say(th, alice, "write b", false)
	r.waitText(th, "⚠️ Pushing `"+rec.Branch+"` failed:")
	r.waitRuns(th, 2)
	if _, ok := r.remote.Files(t, rec.Branch)["b.txt"]; ok {
		t.Fatal("b.txt reached the remote although the push was reported as failed")
	}
	if p, err := r.db.LastPush(r.ctx, rec.ID); err != nil || p.Result != storage.PushRejected {
		t.Errorf("last push = %+v, %v; want a rejected push recorded", p, err)
	}

	// Eve takes her commit back; the next run (which changes nothing) pushes
	// the commit that was kept.
	r.remote.SetBranch(t, rec.Branch, pushed)
	r.say(th, alice, "anything else?", false)
	r.waitCount(th, "⬆️ pushed", 2)
	r.waitRuns(th, 3)
	if got := r.remote.Files(t, rec.Branch)["b.txt"]; got != "b" {
		t.Errorf("b.txt on the remote = %q after the retry, want %q", got, "b")
	}
	if p, err := r.db.LastPush(r.ctx, rec.ID); err != nil || p.Result != storage.PushOK {
		t.Errorf("last push = %+v, %v; want ok", p, err)
	}
}

// TestRejectedPushBringsInOthersCommitsOnTheNextRun: when others pushed to
// the bot's branch, the next run brings their commits in and pushes again (the
// push failure notice says so).
func TestRejectedPushBringsInOthersCommitsOnTheNextRun(t *testing.T) {
	t.Skip("blocked by: a live thread keeps its Workspace from the first Open, and nothing fetches/integrates the remote branch before later runs, so a rejected push is rejected again on every run until the thread is evicted")
	r := newRig(t)
	r.llm.Push(writeThenAnswer("a.txt", "a", "wrote a")...)
	r.llm.Push(writeThenAnswer("b.txt", "b", "wrote b")...)
	r.llm.Push(llmfake.TextReply("nothing to change"))
	th := testThread("65.1")
	r.say(th, alice, "write a", true)
	r.waitRuns(th, 1)
	rec, _ := r.thread(th)
	r.remote.Commit(t, gitremote.Change{Branch: rec.Branch, Files: map[string]string{"eve.txt": "eve\n"}, Name: "Eve", Email: "eve@example.com", Message: "eve's change"})
	r.say(th, alice, "write b", false)
	r.waitText(th, "failed")
	r.waitRuns(th, 2)
	r.say(th, alice, "anything else?", false)
	r.waitRuns(th, 3)
	files := r.remote.Files(t, rec.Branch)
	if files["eve.txt"] != "eve" || files["b.txt"] != "b" {
		t.Errorf("remote branch files = %v, want Eve's commit and b.txt", files)
	}
}

func TestShutdownInterruptsAnActiveRunAndLeavesNoGoroutine(t *testing.T) {
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
