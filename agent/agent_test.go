package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	"github.com/threadsmith/threadsmith/agent/transcript"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// newAgent is a bare agent loop on the real client and the fake server.
func newAgent(t *testing.T, cfg agent.AgentConfig) (*agent.Agent, *llmfake.Server, *[]agent.Event) {
	t.Helper()
	srv := llmfake.New(t)
	client, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []agent.Event
	cfg.Model = client
	if cfg.ModelName == "" {
		cfg.ModelName = "fake-model"
	}
	cfg.Emit = func(ev agent.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}
	return agent.NewAgent(cfg), srv, &events
}

func TestAgentContinueFromContextEmitsNoUserMessage(t *testing.T) {
	a, srv, events := newAgent(t, agent.AgentConfig{Messages: []llm.Message{llm.UserText("already there")}})
	srv.Push(llmfake.TextReply("answer"))
	added, err := a.Continue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0].Role != llm.RoleAssistant {
		t.Fatalf("added = %+v, want only the reply", added)
	}
	equalStrings(t, "events", eventNames(*events), []string{
		"agent_start", "turn_start", "message_start(assistant)", "message_end(assistant:stop)", "turn_end", "agent_end",
	})
}

func TestAgentContinueErrors(t *testing.T) {
	a, _, _ := newAgent(t, agent.AgentConfig{})
	if _, err := a.Continue(context.Background()); err == nil {
		t.Fatal("Continue on an empty context succeeded")
	}
	a2, _, _ := newAgent(t, agent.AgentConfig{Messages: []llm.Message{llm.UserText("q"), {Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("a")}, StopReason: llm.StopReasonStop}}})
	if _, err := a2.Continue(context.Background()); !errors.Is(err, agent.ErrCannotContinue) {
		t.Fatalf("Continue after an assistant reply with nothing queued = %v", err)
	}
}

func TestAgentContinueDeliversQueuedInputAfterAnAssistantTail(t *testing.T) {
	tail := []llm.Message{llm.UserText("q"), {Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("a")}, StopReason: llm.StopReasonStop}}
	a, srv, _ := newAgent(t, agent.AgentConfig{Messages: tail})
	srv.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	a.FollowUp(llm.UserText("f1"))
	a.FollowUp(llm.UserText("f2"))
	if _, err := a.Continue(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || strings.Join(userTexts(reqs[0]), "|") != "q|f1" || strings.Join(userTexts(reqs[1]), "|") != "q|f1|f2" {
		t.Fatalf("follow-ups not delivered one at a time: %d requests", len(reqs))
	}

	// Steering from an assistant tail keeps one-at-a-time: the first steer opens
	// the run, the second arrives at the next turn boundary.
	b, srv2, _ := newAgent(t, agent.AgentConfig{Messages: tail})
	srv2.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	b.Steer(llm.UserText("s1"))
	b.Steer(llm.UserText("s2"))
	if _, err := b.Continue(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs = srv2.Requests()
	if len(reqs) != 2 || strings.Join(userTexts(reqs[0]), "|") != "q|s1" || strings.Join(userTexts(reqs[1]), "|") != "q|s1|s2" {
		t.Fatalf("steers: %v / %v", userTexts(reqs[0]), userTexts(reqs[len(reqs)-1]))
	}
}

func TestAssistantMessageIsPersistedBeforeItsToolsRun(t *testing.T) {
	var h *harness
	var seen []string
	probe := &testTool{name: "probe", run: func(context.Context, map[string]any) (agent.ToolResult, error) {
		for _, e := range h.store.all() {
			seen = append(seen, string(e.Message.Role))
		}
		return agent.TextResult("probed"), nil
	}}
	// A slow listener makes the queue lag behind the loop.
	h = newHarness(t, withTools(probe))
	h.sess.Subscribe(func(ev agent.Event) {
		if _, ok := ev.(agent.MessageEnd); ok {
			time.Sleep(5 * time.Millisecond) // simulates a slow handler; not a wait for a condition
		}
	})
	h.llm.Push(llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "probe", Args: `{}`}), llmfake.TextReply("done"))
	h.prompt("probe")
	if strings.Join(seen, ",") != "user,assistant" {
		t.Fatalf("record when the tool ran = %v, want user,assistant", seen)
	}
}

func TestPersistenceOrderWithSlowExtensionHandlers(t *testing.T) {
	slow := agent.Extension{Name: "slow", OnEvent: func(ev agent.Event) {
		if me, ok := ev.(agent.MessageEnd); ok && me.Message.Role == llm.RoleToolResult {
			time.Sleep(3 * time.Millisecond) // simulates a slow handler
		}
	}}
	h := newHarness(t, withTools(&testTool{name: "t1", readOnly: true}), func(c *agent.Config) { c.Extensions = []agent.Extension{slow} })
	h.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "a", Name: "t1", Args: `{}`}, llmfake.Call{ID: "b", Name: "t1", Args: `{}`}, llmfake.Call{ID: "c", Name: "t1", Args: `{}`}),
		llmfake.TextReply("end"),
	)
	h.prompt("go")
	var got []string
	for _, e := range h.store.all() {
		got = append(got, describe(*e.Message))
	}
	equalStrings(t, "persisted order", got, []string{"user:go", "assistant:toolUse", "result:a", "result:b", "result:c", "assistant:stop"})
}

func TestRestoredToolCallWithoutResultGetsAnInterruptedResult(t *testing.T) {
	entries := []transcript.Entry{
		transcript.MessageEntry(0, llm.UserText("run it")),
		transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{llm.ToolCall("c1", "bash", []byte(`{"command":"make"}`))}}),
	}
	h := newHarness(t, func(c *agent.Config) { c.Entries = entries })
	h.llm.Push(llmfake.TextReply("it was interrupted; retrying"))
	h.prompt("what happened?")
	res := toolResults(h.llm.Requests()[0])
	if len(res) != 1 || !strings.HasPrefix(res[0], "c1=interrupted") {
		t.Fatalf("results sent = %v, want a synthetic interrupted result", res)
	}
}
