package bridge

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	"github.com/threadsmith/threadsmith/chat"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// pricePerReply makes every reply of the fake LLM (10 prompt tokens) cost
// $0.01: the main model at $1,000 per million prompt tokens. It sets the
// router before any session starts.
func pricePerReply(t *testing.T, r *rig) {
	t.Helper()
	client, err := openai.New(openai.Config{BaseURL: r.llm.URL(), APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	r.b.cfg.Model = llm.NewRouter(map[string]llm.Route{
		mainModel:  {Model: client, Price: llm.Price{Input: 1000}},
		otherModel: {Model: client},
	})
	r.b.cfg.Agent.Model.Price = Price{Input: 1000}
}

// withBudget sets the budgets and a clock that a test moves forward.
func withBudget(perUserDaily, perThread float64, offset *atomic.Int64) rigOption {
	return func(c *Config, _ *Platform) {
		c.Budget = Budget{PerUserDaily: perUserDaily, PerThread: perThread}
		if offset != nil {
			c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		}
	}
}

// A person whose requests used up their daily budget is refused before a
// run starts — nothing reaches the model, the thread is told what was
// spent and when it resets — in any thread; another person is not; !status
// shows what is left; past midnight UTC the budget is whole again.
func TestBudgetRefusesAPersonOverTheirDailyBudget(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	r := newRig(t, withBudget(0.01, 0, &offset))
	pricePerReply(t, r)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("done") })

	first, second, bobs := testThread("97.1"), testThread("97.2"), testThread("97.3")
	r.say(first, alice, "one", true)
	r.waitRuns(first, 1)
	r.waitUntil("the run's usage is stored", func() bool {
		u, err := r.db.AuthorSpend(r.ctx, "test", alice.ID, dayStart(time.Now()))
		return err == nil && u.Cost > 0
	})

	id := r.say(second, alice, "two", true)
	const refused = "💸 Not started: your daily budget is used up: $0.0100 of $0.0100 spent today; it resets at midnight UTC (in "
	r.waitText(second, refused)
	if n := len(r.requests()); n != 1 {
		t.Errorf("LLM requests = %d, want 1: the refused request reached the model", n)
	}
	if in := inboundByMessage(t, r, id); in.State != storage.InboundDropped {
		t.Errorf("the refused message is %s, want dropped", in.State)
	}

	r.say(bobs, bob, "bob's", true)
	r.waitRuns(bobs, 1)
	if n := len(r.requests()); n != 2 {
		t.Errorf("LLM requests = %d, want 2: Bob's budget is his own", n)
	}

	r.say(first, alice, "!status", false)
	r.waitText(first, "📊 *Status*")
	if st := lastStatus(r, first); !strings.Contains(st, "• Your budget today: $0.00 left of $0.0100 (resets at midnight UTC, in ") {
		t.Errorf("!status does not show what is left of the daily budget:\n%s", st)
	}

	offset.Store(int64(24 * time.Hour)) // the next day, UTC
	r.say(second, alice, "two again", false)
	r.waitRuns(second, 1)
	if n := len(r.requests()); n != 3 {
		t.Errorf("LLM requests = %d, want 3: the next day's budget is whole", n)
	}
	if tr := r.chat.Transcript(second); strings.Count(tr, "💸") != 1 {
		t.Errorf("the thread was refused %d times, want once:\n%s", strings.Count(tr, "💸"), tr)
	}
}

// lastStatus is the thread's last !status answer.
func lastStatus(r *rig, th chat.ThreadRef) string {
	var status string
	for _, s := range r.chat.BotTexts(th) {
		if strings.HasPrefix(s, "📊") {
			status = s
		}
	}
	return status
}

// A run that crosses the thread's budget stops before its next model call:
// the model is called no more, the thread is told which budget, what it
// cost, that it does not reset, and the run's work is committed and pushed
// as a stopped run's; the next request in the thread is refused before it
// starts; another person's thread is not affected.
func TestBudgetStopsARunThatCrossesTheThreadBudget(t *testing.T) {
	t.Parallel()
	r := newRig(t, withBudget(0, 0.02, nil))
	pricePerReply(t, r)
	write := func(path string) llmfake.Response {
		return llmfake.ToolCallReply(llmfake.Call{ID: "w-" + path, Name: "write", Args: `{"path":"` + path + `","content":"x\n"}`})
	}
	var calls atomic.Int32
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if strings.Contains(strings.Join(userTexts(req), " "), "hello") {
			return llmfake.TextReply("bob's answer")
		}
		return write([]string{"a.txt", "b.txt", "c.txt", "d.txt"}[calls.Add(1)-1])
	})
	th := testThread("98.1")
	r.say(th, alice, "write three files", true)
	const stopped = "⏹ stopped: this thread's budget is used up: it cost $0.0200 of $0.0200; it does not reset (a new thread has a budget of its own)."
	r.waitText(th, stopped)
	r.waitText(th, "⬆️ pushed")
	if n := len(r.requests()); n != 2 {
		t.Fatalf("LLM requests = %d, want 2: the run stops after the call that crossed the budget", n)
	}
	rec, _ := r.thread(th)
	files := r.remote.Files(t, rec.Branch)
	if _, ok := files["b.txt"]; !ok {
		t.Errorf("the stopped run's work is not on the remote: %v", files)
	}
	if _, ok := files["c.txt"]; ok {
		t.Error("a file of the call the budget stopped is on the remote")
	}
	r.waitUntil("the run is recorded stopped", func() bool {
		runs, err := r.db.ThreadRuns(r.ctx, rec.ID)
		return err == nil && len(runs) == 1 && runs[0].Outcome == storage.RunStopped
	})

	r.say(th, alice, "one more", false)
	r.waitText(th, "💸 Not started: this thread's budget is used up: it cost $0.0200 of $0.0200")
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*")
	if st := lastStatus(r, th); !strings.Contains(st, "• Thread budget: $0.00 left of $0.0200") {
		t.Errorf("!status does not show what is left of the thread's budget:\n%s", st)
	}

	bobs := testThread("98.2")
	r.say(bobs, bob, "hello", true)
	r.waitText(bobs, "bob's answer")
	if n := len(r.requests()); n != 3 {
		t.Errorf("LLM requests = %d, want 3: one more, for Bob's thread only", n)
	}
}

// What a person spent is read from storage: a bridge started on the same
// database after a restart refuses them as the first one would have.
func TestBudgetSpendSurvivesARestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, withBudget(0.01, 0, nil))
	pricePerReply(t, r)
	r.llm.Push(llmfake.TextReply("done"))
	th := testThread("99.1")
	r.say(th, alice, "one", true)
	r.waitRuns(th, 1)
	path := r.db.Path()
	if err := r.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	reopen := func(c *Config, _ *Platform) {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		c.Store = db
	}
	r2 := newRig(t, withBudget(0.01, 0, nil), reopen)
	r2.chat.StartIDsAt(5000) // past the ids the first platform gave
	th2 := testThread("99.2")
	r2.say(th2, alice, "two", true)
	r2.waitText(th2, "💸 Not started: your daily budget is used up: $0.0100 of $0.0100 spent today")
	if n := len(r2.requests()); n != 0 {
		t.Errorf("LLM requests after the restart = %d, want 0", n)
	}
}
