package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// -check names the budgets, and says for each model without a price that
// they cannot be enforced for it; the bot still passes the check (the model
// works, its replies count as nothing). A model with a price is not named.
func TestCheckSaysWhichModelsBudgetsCannotCount(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	cfg.Budget = config.Budget{PerUserDaily: 5, PerThread: 20}
	ok, out := runCheck(t, cfg) // the fake model is on a loopback base_url: no price
	if !ok {
		t.Fatalf("check failed:\n%s", out)
	}
	for _, want := range []string{
		"budget: 5 a person a day (UTC), 20 a thread, in the currency of llm.price\n",
		`budget: cannot be enforced for model "fake-model": it has no price (set llm.price), so its replies count as nothing` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-check lacks %q:\n%s", want, out)
		}
	}

	cfg.LLM.Price = config.Price{Input: 2, Output: 8}
	if ok, out := runCheck(t, cfg); !ok || strings.Contains(out, "cannot be enforced") || !strings.Contains(out, "budget: 5 a person") {
		t.Errorf("check with a priced model = %v:\n%s\nwant the budget line alone", ok, out)
	}
	cfg.Budget = config.Budget{}
	if _, out := runCheck(t, cfg); strings.Contains(out, "budget") {
		t.Errorf("check without budgets speaks of them:\n%s", out)
	}
}

// Budgets end to end, from the config: a run that crosses budget.per_thread
// stops before its next model call with the thread told which budget and
// what it cost; another person's thread is not affected.
func TestBudgetPerThreadStopsTheRunThatCrossesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) {
		c.Budget.PerThread = 0.02
		c.LLM.Price = config.Price{Input: 1000} // the fake's 10 prompt tokens: $0.01 a reply
	})
	var calls atomic.Int32
	e.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "hello from bob") {
			return llmfake.TextReply("bob's answer")
		}
		path := []string{"a.txt", "b.txt", "c.txt", "d.txt"}[calls.Add(1)-1]
		return llmfake.ToolCallReply(llmfake.Call{ID: "w-" + path, Name: "write", Args: `{"path":"` + path + `","content":"x\n"}`})
	})
	th := thread("budget.1")
	e.say(th, "write the files", true)
	e.waitText(th, "⏹ stopped: this thread's budget is used up: it cost $0.0200 of $0.0200")
	if n := len(e.llm.Requests()); n != 2 {
		t.Errorf("LLM requests = %d, want 2", n)
	}
	bobs := thread("budget.2")
	bob := chatfake.Person{ID: "U2", Name: "Bob", Email: "bob@example.com"}
	if _, r, err := e.chat.Say(e.ctx, bobs, bob, "hello from bob", true); err != nil || r != chat.Accepted {
		t.Fatalf("Bob's message: %v, %v", r, err)
	}
	e.waitText(bobs, "bob's answer")
	if tr := e.chat.Transcript(bobs); strings.Contains(tr, "budget is used up") {
		t.Errorf("Bob's thread speaks of a budget used up:\n%s", tr)
	}
}

// At start the bot logs its budgets, and warns for each model without a
// price that the budgets cannot be enforced for it.
func TestStartWarnsOfModelsBudgetsCannotCount(t *testing.T) {
	t.Parallel()
	llm := llmfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}})
	cfg := e2eConfig(t, llm, remote) // a loopback base_url: the model has no price
	cfg.Budget.PerUserDaily = 5
	var logs syncBuffer
	m := NewMain()
	m.Config = &cfg
	m.Adapters = []chat.Adapter{chatfake.New("test", 3500)}
	m.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if l := lineWith(out, "budget: 5 a person a day"); !strings.Contains(l, "level=INFO") {
		t.Errorf("the budgets are not logged at start:\n%s", out)
	}
	if l := lineWith(out, `cannot be enforced for model \"fake-model\"`); !strings.Contains(l, "level=WARN") {
		t.Errorf("no warning that the budgets cannot count fake-model:\n%s", out)
	}
}

// The console takes the llm, agent, workspace, sandbox and log parts of a
// config file: a team's budgets do not cap someone at their terminal.
func TestConsoleLeavesTheBudgetsOut(t *testing.T) {
	repo, _ := consoleRepo(t)
	path := filepath.Join(repo, "config.yaml")
	if err := os.WriteFile(path, []byte("llm: {api_key: sk-local}\nbudget: {per_user_daily: 1, per_thread: 2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := consoleConfig(path, "", envOf())
	if err != nil {
		t.Fatalf("consoleConfig: %v", err)
	}
	if cfg.Budget.On() {
		t.Errorf("the console's budgets = %+v, want none", cfg.Budget)
	}
}
