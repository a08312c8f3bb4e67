package agent_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/anthropic"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	"github.com/threadsmith/threadsmith/agent/transcript"
	anthropicfake "github.com/threadsmith/threadsmith/internal/fakes/anthropic"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A session switches from an OpenAI-compatible model to an Anthropic one and
// back in the middle of a conversation with tool calls: each provider gets the
// whole history in its own format (the strict Anthropic fake rejects anything
// the real API would), and the switches are recorded with their provider.
func TestModelSwitchCarriesTheConversationAcrossProviders(t *testing.T) {
	oai := llmfake.New(t)
	ant := anthropicfake.New(t)
	ant.RequireAPIKey("sk-ant-test")
	oc, err := openai.New(openai.Config{BaseURL: oai.URL(), APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	ac, err := anthropic.New(anthropic.Config{BaseURL: ant.URL(), APIKey: "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	router := llm.NewRouter(map[string]llm.Route{
		"gpt":    {Model: oc, ID: "fake-model"},
		"claude": {Model: ac, ID: "claude-sonnet-4-5", Reasoning: "low", Price: llm.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
	})
	store := &memStore{}
	sess, err := agent.New(agent.Config{
		ID: "s1", Model: router, ModelName: "gpt", SystemPrompt: "You are a test agent.",
		Models: []agent.ModelSpec{
			{Name: "gpt", Provider: "openai", ContextWindow: 128000, MaxTokens: 1000},
			{Name: "claude", Provider: "anthropic", ContextWindow: 200000, MaxTokens: 1000},
		},
		Tools: []agent.Tool{&testTool{name: "probe", readOnly: true}}, MaxTokens: 1000, ContextWindow: 128000,
		Store: store, Logger: slog.New(slog.DiscardHandler),
		Compaction: compaction.Settings{Enabled: false, ReserveTokens: 16384, KeepRecentTokens: 20000},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer sess.Close(ctx)

	oai.Push(
		llmfake.Stream(llmfake.ToolCalls(llmfake.Call{ID: "call.1:0", Name: "probe", Args: `{"x": "one"}`}), llmfake.Finish("tool_calls")),
		llmfake.TextReply("openai done"),
	)
	if err := sess.Prompt(ctx, "first", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sess.SetModel("claude"); err != nil {
		t.Fatal(err)
	}
	ant.Push(
		anthropicfake.Reply(anthropicfake.Thinking("hmm", "sig-a"), anthropicfake.ToolUse("toolu_02", "probe", `{"x": "two"}`)).
			WithUsage(anthropicfake.Usage{Input: 100, Output: 20, CacheRead: 1000, CacheWrite: 200}),
		anthropicfake.Reply(anthropicfake.Text("anthropic done")),
	)
	if err := sess.Prompt(ctx, "second", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sess.SetModel("gpt"); err != nil {
		t.Fatal(err)
	}
	oai.Push(llmfake.TextReply("back on openai"))
	if err := sess.Prompt(ctx, "third", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}

	areqs := ant.Requests()
	if len(areqs) != 2 {
		t.Fatalf("%d Anthropic requests, want 2", len(areqs))
	}
	first := areqs[0]
	// user, assistant (tool_use), user (tool_result), assistant (text), user
	if len(first.Messages) != 5 {
		t.Fatalf("Anthropic got %d messages, want 5: %+v", len(first.Messages), first.Messages)
	}
	if use := first.Messages[1].Content[0]; use.Type != "tool_use" || use.ID != "call_1_0" || string(use.Input) != `{"x":"one"}` {
		t.Errorf("OpenAI's tool call reached Anthropic as %+v", use)
	}
	if first.Thinking == nil || first.Thinking.BudgetTokens != 2048 {
		t.Errorf("thinking = %+v, want the model's reasoning level (low: 2048)", first.Thinking)
	}
	// Anthropic's own thinking goes back to it, signed.
	if th := areqs[1].Messages[5].Content[0]; th.Type != "thinking" || th.Signature != "sig-a" {
		t.Errorf("Anthropic's thinking came back as %+v", th)
	}

	last := oai.Requests()[2]
	var calls []string
	for _, m := range last.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+" "+c.Arguments)
		}
	}
	if len(calls) != 2 || calls[0] != `call.1:0 {"x": "one"}` || calls[1] != `toolu_02 {"x": "two"}` {
		t.Errorf("tool calls back on OpenAI = %q, want both, as the models wrote them", calls)
	}

	var changes []transcript.ModelChange
	var cost float64
	for _, e := range store.all() {
		if e.ModelChange != nil {
			changes = append(changes, *e.ModelChange)
		}
		if m := e.Message; m != nil && m.Usage != nil && m.Usage.Cost != nil {
			cost += m.Usage.Cost.Total
		}
	}
	if len(changes) != 2 || changes[0] != (transcript.ModelChange{Provider: "anthropic", Model: "claude"}) || changes[1].Provider != "openai" {
		t.Errorf("model changes = %+v, want claude on anthropic, then gpt on openai", changes)
	}
	if cost <= 0 {
		t.Errorf("no cost recorded for the priced model's replies")
	}
}

// A resumed session keeps the model it switched to, unless the config no
// longer has it: then it goes back to the configured model instead of failing
// every call.
func TestResumedSessionKeepsItsModelWhileConfigured(t *testing.T) {
	models := []agent.ModelSpec{{Name: "gpt", ContextWindow: 128000, MaxTokens: 1000}, {Name: "claude", ContextWindow: 200000, MaxTokens: 2000}}
	for _, tc := range []struct{ switched, want string }{{"claude", "claude"}, {"removed-model", "gpt"}} {
		entries := []transcript.Entry{
			transcript.MessageEntry(0, llm.UserText("hi")),
			{Seq: 1, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Provider: "anthropic", Model: tc.switched}},
		}
		s, err := agent.New(agent.Config{ID: "s", ModelName: "gpt", Models: models, MaxTokens: 1000, ContextWindow: 128000,
			Entries: entries, Store: &memStore{}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.ModelName(); got != tc.want {
			t.Errorf("switched to %q, resumed with %q, want %q", tc.switched, got, tc.want)
		}
		if tc.want == "claude" && s.Status().ContextWindow != 200000 {
			t.Errorf("window %d, want claude's 200000", s.Status().ContextWindow)
		}
		_ = s.Close(context.Background())
	}
}
