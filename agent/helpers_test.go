package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	"github.com/threadsmith/threadsmith/agent/transcript"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// memStore is an in-memory agent.Store (the SQLite one has its own tests).
type memStore struct {
	mu      sync.Mutex
	entries []transcript.Entry
	fail    error
}

func (m *memStore) AppendEntries(_ context.Context, _ string, es []transcript.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.entries = append(m.entries, es...)
	return nil
}

func (m *memStore) all() []transcript.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]transcript.Entry(nil), m.entries...)
}

// harness is a session on the real OpenAI client talking to the fake server.
type harness struct {
	t     *testing.T
	llm   *llmfake.Server
	fake  script // set by a provider of the behaviour suite (suite_test.go)
	sess  *agent.Session
	store *memStore

	mu      sync.Mutex
	events  []agent.Event
	changed chan struct{} // closed and replaced on every event
	sleeps  []time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
}

func newHarness(t *testing.T, opts ...func(*agent.Config)) *harness {
	t.Helper()
	h := &harness{t: t, llm: llmfake.New(t), store: &memStore{}, changed: make(chan struct{})}
	client, err := openai.New(openai.Config{BaseURL: h.llm.URL(), APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{
		ID:            "s1",
		Model:         client,
		ModelName:     "fake-model",
		SystemPrompt:  "You are a test agent.",
		MaxTokens:     1000,
		ContextWindow: 128000,
		Store:         h.store,
		Logger:        slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
		Retry:         agent.DefaultRetrySettings(),
		Compaction:    compaction.Settings{Enabled: false, ReserveTokens: 16384, KeepRecentTokens: 20000},
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			fn := h.sleep
			h.mu.Unlock()
			if fn != nil {
				return fn(ctx, d)
			}
			return ctx.Err()
		},
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.sess, err = agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.sess.Subscribe(func(ev agent.Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.sess.Close(ctx); err != nil {
			t.Errorf("session close: %v", err)
		}
	})
	return h
}

func (h *harness) prompt(text string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.sess.Prompt(ctx, text, agent.PromptOptions{}); err != nil {
		h.t.Fatalf("Prompt(%q): %v", text, err)
	}
}

func (h *harness) start(text string, opts agent.PromptOptions) agent.Outcome {
	h.t.Helper()
	out, err := h.sess.Start(context.Background(), text, opts)
	if err != nil {
		h.t.Fatalf("Start(%q): %v", text, err)
	}
	return out
}

func (h *harness) wait() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.sess.Wait(ctx); err != nil {
		h.t.Fatalf("Wait: %v", err)
	}
}

func (h *harness) recorded() []agent.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]agent.Event(nil), h.events...)
}

// waitEvents blocks until cond holds for the events recorded so far.
func (h *harness) waitEvents(cond func([]agent.Event) bool) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		ok := cond(h.events)
		ch := h.changed
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			h.t.Fatalf("timed out waiting for events; have %v", eventNames(h.recorded()))
		}
	}
}

func (h *harness) sleepsSeen() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.sleeps...)
}

// eventNames renders events compactly, leaving out message_update and
// queue_update, e.g. "message_start(user:hi)".
func eventNames(evs []agent.Event) []string {
	var out []string
	for _, ev := range evs {
		switch e := ev.(type) {
		case agent.MessageUpdate, agent.QueueUpdate:
			continue
		case agent.MessageStart:
			out = append(out, "message_start("+describe(e.Message)+")")
		case agent.MessageEnd:
			out = append(out, "message_end("+describe(e.Message)+")")
		case agent.ToolExecutionStart:
			out = append(out, "tool_start("+e.ToolCallID+")")
		case agent.ToolExecutionEnd:
			out = append(out, "tool_end("+e.ToolCallID+")")
		default:
			out = append(out, ev.Type())
		}
	}
	return out
}

func describe(m llm.Message) string {
	switch m.Role {
	case llm.RoleUser, llm.RoleCustom:
		return string(m.Role) + ":" + m.TextContent()
	case llm.RoleToolResult:
		return "result:" + m.ToolCallID
	case llm.RoleAssistant:
		if m.StopReason == "" {
			return "assistant"
		}
		return "assistant:" + string(m.StopReason)
	}
	return string(m.Role)
}

func count[T agent.Event](evs []agent.Event) int {
	n := 0
	for _, ev := range evs {
		if _, ok := ev.(T); ok {
			n++
		}
	}
	return n
}

func find[T agent.Event](evs []agent.Event) []T {
	var out []T
	for _, ev := range evs {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// userTexts returns the text of the user messages of a request, in order.
func userTexts(req llmfake.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

// toolResults returns "id=text" for the tool messages of a request.
func toolResults(req llmfake.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m.ToolCallID+"="+m.Content)
		}
	}
	return out
}

// testTool is a real agent.Tool whose behaviour a test controls.
type testTool struct {
	name     string
	readOnly bool
	schema   string
	run      func(ctx context.Context, args map[string]any) (agent.ToolResult, error)
}

func (t *testTool) Spec() llm.ToolSpec {
	schema := t.schema
	if schema == "" {
		schema = `{"type":"object","properties":{"x":{"type":"string"}}}`
	}
	return llm.ToolSpec{Name: t.name, Description: "test tool " + t.name, Parameters: json.RawMessage(schema)}
}

func (t *testTool) ReadOnly() bool { return t.readOnly }

func (t *testTool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var args map[string]any
	_ = json.Unmarshal(call.Args, &args)
	if t.run == nil {
		return agent.TextResult(fmt.Sprintf("%s ran with %v", t.name, args["x"])), nil
	}
	return t.run(ctx, args)
}

// gate blocks a tool until the test opens it, and tells the test when it started.
type gate struct {
	started chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{started: make(chan struct{}, 16), open: make(chan struct{})} }

func (g *gate) tool(name string, readOnly bool) *testTool {
	return &testTool{name: name, readOnly: readOnly, run: func(ctx context.Context, args map[string]any) (agent.ToolResult, error) {
		g.started <- struct{}{}
		select {
		case <-g.open:
			return agent.TextResult(name + " done"), nil
		case <-ctx.Done():
			return agent.ToolResult{}, ctx.Err()
		}
	}}
}

func (g *gate) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(10 * time.Second):
		t.Fatal("tool did not start")
	}
}

func withTools(tools ...agent.Tool) func(*agent.Config) {
	return func(c *agent.Config) { c.Tools = append(c.Tools, tools...) }
}
