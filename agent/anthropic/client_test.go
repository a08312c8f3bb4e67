package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/anthropic"
	"github.com/threadsmith/threadsmith/agent/llm"
	anthropicfake "github.com/threadsmith/threadsmith/internal/fakes/anthropic"
)

const testKey = "sk-ant-test-0123456789"

func newClient(t *testing.T) (*anthropic.Client, *anthropicfake.Server) {
	t.Helper()
	fake := anthropicfake.New(t)
	fake.RequireAPIKey(testKey)
	c, err := anthropic.New(anthropic.Config{BaseURL: fake.URL(), APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return c, fake
}

func stream(t *testing.T, c *anthropic.Client, req llm.Request) (llm.Message, []llm.Delta, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var deltas []llm.Delta
	m, err := c.Stream(ctx, req, func(d llm.Delta, _ *llm.Message) { deltas = append(deltas, d) })
	return m, deltas, err
}

var readTool = llm.ToolSpec{Name: "read", Description: "read a file",
	Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}

func TestStreamsTextThinkingAndToolUse(t *testing.T) {
	c, fake := newClient(t)
	args := `{"path": "a&b.go"}`
	fake.Push(anthropicfake.Reply(
		anthropicfake.Thinking("let me look", "sig-1"),
		anthropicfake.Text("Reading it."),
		anthropicfake.ToolUse("toolu_01", "read", args),
	).WithUsage(anthropicfake.Usage{Input: 12, Output: 30, CacheRead: 900, CacheWrite: 100}))
	m, deltas, err := stream(t, c, llm.Request{Model: "claude-sonnet-4-5", SystemPrompt: "be brief",
		Messages: []llm.Message{llm.UserText("read a&b.go")}, Tools: []llm.ToolSpec{readTool}, MaxTokens: 1000, Reasoning: "low"})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if m.StopReason != llm.StopReasonToolUse || m.Provider != "anthropic" {
		t.Errorf("stop reason %q provider %q, want toolUse, anthropic", m.StopReason, m.Provider)
	}
	if len(m.Content) != 3 {
		t.Fatalf("got %d blocks, want 3: %+v", len(m.Content), m.Content)
	}
	if th := m.Content[0]; th.Type != llm.ContentThinking || th.Thinking != "let me look" || th.Signature != "sig-1" {
		t.Errorf("thinking block = %+v", th)
	}
	if m.Content[1].Text != "Reading it." {
		t.Errorf("text = %q", m.Content[1].Text)
	}
	call := m.Content[2]
	if call.ID != "toolu_01" || call.Name != "read" || call.WireArguments() != args {
		t.Errorf("tool call = %+v, want id toolu_01, read, arguments %s verbatim", call, args)
	}
	if u := m.Usage; u == nil || *u != (llm.Usage{Input: 12, Output: 30, CacheRead: 900, CacheWrite: 100}) {
		t.Errorf("usage = %+v", m.Usage)
	}
	var kinds []llm.DeltaKind
	for _, d := range deltas {
		if len(kinds) == 0 || kinds[len(kinds)-1] != d.Kind {
			kinds = append(kinds, d.Kind)
		}
	}
	if want := []llm.DeltaKind{llm.DeltaThinking, llm.DeltaText, llm.DeltaToolCall}; !equalKinds(kinds, want) {
		t.Errorf("delta kinds %v, want %v", kinds, want)
	}

	req := fake.Requests()[0]
	if req.Thinking == nil || req.Thinking.BudgetTokens != 2048 || req.MaxTokens != 1000+2048 {
		t.Errorf("thinking %+v max_tokens %d, want budget 2048 and 3048", req.Thinking, req.MaxTokens)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the key as a bearer token (the SDK's way)", got)
	}
	if req.Header.Get("anthropic-version") == "" {
		t.Error("no anthropic-version header")
	}
	if req.Tools[0].Name != "read" || !strings.Contains(string(req.Tools[0].InputSchema), `"additionalProperties":false`) {
		t.Errorf("tool = %+v, want the schema with its extra keys", req.Tools[0])
	}
}

func equalKinds(a, b []llm.DeltaKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A conversation with thinking, tool calls, tool results with images, and a
// reply from another provider is accepted by the strict fake, with cache
// breakpoints on the last tool, the system prompt and the last block.
func TestSendsAConversationTheAPIAccepts(t *testing.T) {
	c, fake := newClient(t)
	fake.Push(anthropicfake.Reply(anthropicfake.Text("ok")))
	png := "iVBORw0KGgo="
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Content{llm.Text("look at this"), llm.Image("image/png", png)}},
		{Role: llm.RoleAssistant, Provider: "openai", StopReason: llm.StopReasonToolUse, Content: []llm.Content{
			{Type: llm.ContentThinking, Thinking: "openai reasoning"},
			llm.Text("two calls"),
			{Type: llm.ContentToolCall, ID: "functions.read:0", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`), RawArguments: `{"path": "a"}`},
			{Type: llm.ContentToolCall, ID: "call_2", Name: "read", Arguments: json.RawMessage(`"{broken"`)},
		}},
		{Role: llm.RoleToolResult, ToolCallID: "functions.read:0", ToolName: "read", Content: []llm.Content{llm.Text("contents"), llm.Image("image/png", png)}},
		{Role: llm.RoleToolResult, ToolCallID: "call_2", ToolName: "read", IsError: true, Content: []llm.Content{llm.Text("invalid arguments")}},
		{Role: llm.RoleAssistant, Provider: "anthropic", StopReason: llm.StopReasonStop, Content: []llm.Content{
			{Type: llm.ContentThinking, Thinking: "mine", Signature: "sig-9"}, llm.Text("done"),
		}},
		llm.UserText("thanks"),
	}
	if _, _, err := stream(t, c, llm.Request{Model: "claude-sonnet-4-5", SystemPrompt: "sys", Messages: msgs,
		Tools: []llm.ToolSpec{readTool, {Name: "ls", Parameters: json.RawMessage(`{"type":"object"}`)}}, MaxTokens: 100}); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	req := fake.Requests()[0]
	if n := req.CacheBreakpoints(); n != 3 {
		t.Errorf("%d cache breakpoints, want 3 (last tool, system, last block)", n)
	}
	if len(req.Tools[1].CacheControl) == 0 || len(req.Tools[0].CacheControl) != 0 {
		t.Errorf("cache_control on tools: %s / %s, want only on the last", req.Tools[0].CacheControl, req.Tools[1].CacheControl)
	}
	last := req.LastMessage()
	if len(last.Content[len(last.Content)-1].CacheControl) == 0 {
		t.Error("no cache_control on the last block")
	}
	asst := req.Messages[1]
	if asst.Content[0].Type != "text" {
		t.Errorf("another provider's thinking was sent: %+v", asst.Content[0])
	}
	if id := asst.Content[1].ID; id != "functions_read_0" {
		t.Errorf("tool id sent as %q, want functions_read_0", id)
	}
	// The SDK encodes input objects itself (compact): the same bytes whether
	// the arguments come from memory or from storage.
	if in := string(asst.Content[1].Input); in != `{"path":"a"}` {
		t.Errorf("input sent as %s, want {\"path\":\"a\"}", in)
	}
	results := req.Messages[2]
	if len(results.Content) != 2 || results.Content[0].ToolUseID != "functions_read_0" || len(results.Content[0].Content) != 2 || !results.Content[1].IsError {
		t.Errorf("tool results = %+v, want both in one user message, the image inside the first", results.Content)
	}
	if th := req.Messages[3].Content[0]; th.Type != "thinking" || th.Signature != "sig-9" {
		t.Errorf("own thinking sent as %+v, want it back with its signature", th)
	}
}

func TestErrorsAreTyped(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resp      anthropicfake.Response
		retryable bool
		overflow  bool
		after     time.Duration
		code      string
	}{
		{"rate limited", anthropicfake.RateLimited(7), true, false, 7 * time.Second, "rate_limit_error"},
		{"overloaded 529", anthropicfake.Overloaded(), true, false, 0, "overloaded_error"},
		{"overloaded mid-stream", anthropicfake.Reply(anthropicfake.Text("partial")).ThenError("overloaded_error", "Overloaded"), true, false, 0, "overloaded_error"},
		{"prompt too long", anthropicfake.PromptTooLong(), false, true, 0, "invalid_request_error"},
		{"server error", anthropicfake.HTTPError(500, "api_error", "Internal server error"), true, false, 0, "api_error"},
		{"bad request", anthropicfake.HTTPError(400, "invalid_request_error", "messages: roles must alternate"), false, false, 0, "invalid_request_error"},
		{"cut", anthropicfake.Reply(anthropicfake.Text("partial")).ThenCut(), true, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fake := newClient(t)
			fake.Push(tc.resp)
			m, _, err := stream(t, c, llm.Request{Model: "claude-haiku-4-5", Messages: []llm.Message{llm.UserText("hi")}, MaxTokens: 50})
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *llm.Error", err, err)
			}
			if e.Retryable() != tc.retryable || e.ContextOverflow != tc.overflow || e.RetryAfter != tc.after || e.Code != tc.code {
				t.Errorf("got %+v retryable=%v; want retryable=%v overflow=%v after=%v code=%q", e, e.Retryable(), tc.retryable, tc.overflow, tc.after, tc.code)
			}
			if m.StopReason != llm.StopReasonError || m.ErrorInfo == nil {
				t.Errorf("message stop %q info %v, want error with info", m.StopReason, m.ErrorInfo)
			}
		})
	}
}

func TestWrongKeyIsNotRetried(t *testing.T) {
	fake := anthropicfake.New(t)
	fake.RequireAPIKey(testKey)
	c, err := anthropic.New(anthropic.Config{BaseURL: fake.URL(), APIKey: "sk-ant-wrong-0000"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = stream(t, c, llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}})
	var e *llm.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusUnauthorized || e.Retryable() {
		t.Fatalf("error %v, want a 401 that is not retryable", err)
	}
	if strings.Contains(e.Error(), "sk-ant-wrong") {
		t.Errorf("the key leaked into the error: %v", e)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests accepted, want 0", n)
	}
}

func TestCancelReturnsThePartialReply(t *testing.T) {
	c, fake := newClient(t)
	release := make(chan struct{})
	fake.Handle(func(anthropicfake.Request) anthropicfake.Response {
		<-release
		return anthropicfake.Reply(anthropicfake.Text("late"))
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(ctx, llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}}, nil)
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if _, err := fake.WaitRequests(wctx, 1); err != nil {
		cancel()
		t.Fatalf("the request never arrived: %v (Stream: %v)", err, <-done)
	}
	cancel()
	err := <-done
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func TestToolUseID(t *testing.T) {
	for in, want := range map[string]string{
		"toolu_01A": "toolu_01A", "functions.read:0": "functions_read_0", "": "toolu_none",
		strings.Repeat("x", 70): strings.Repeat("x", 64),
	} {
		if got := anthropic.ToolUseID(in); got != want {
			t.Errorf("ToolUseID(%q) = %q, want %q", in, got, want)
		}
	}
}

// A tool loop begun by another provider's model cannot be continued with
// thinking on (its turn has no signed thinking): that one request goes
// without, which the strict fake (like the API) requires.
func TestThinkingWaitsForATurnOfItsOwn(t *testing.T) {
	c, fake := newClient(t)
	fake.Push(anthropicfake.Reply(anthropicfake.Text("ok")), anthropicfake.Reply(anthropicfake.Text("ok")))
	msgs := []llm.Message{
		llm.UserText("list"),
		{Role: llm.RoleAssistant, Provider: "openai", StopReason: llm.StopReasonToolUse, Content: []llm.Content{
			{Type: llm.ContentToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}}},
		{Role: llm.RoleToolResult, ToolCallID: "call_1", ToolName: "read", Content: []llm.Content{llm.Text("x")}},
	}
	if _, _, err := stream(t, c, llm.Request{Model: "m", Messages: msgs, MaxTokens: 100, Reasoning: "high"}); err != nil {
		t.Fatalf("mid-loop: %v", err)
	}
	if th := fake.Requests()[0].Thinking; th != nil {
		t.Errorf("thinking %+v sent mid-loop after another provider's turn, want none", th)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Provider: "anthropic", StopReason: llm.StopReasonStop, Content: []llm.Content{llm.Text("done")}}, llm.UserText("next"))
	if _, _, err := stream(t, c, llm.Request{Model: "m", Messages: msgs, MaxTokens: 100, Reasoning: "high"}); err != nil {
		t.Fatalf("next prompt: %v", err)
	}
	if th := fake.Requests()[1].Thinking; th == nil || th.BudgetTokens != 16384 {
		t.Errorf("thinking = %+v on a new prompt, want the high budget", th)
	}
}

func TestListModels(t *testing.T) {
	c, fake := newClient(t)
	fake.SetModels("claude-sonnet-4-5", "claude-haiku-4-5")
	ids, err := c.ListModels(context.Background())
	if err != nil || len(ids) != 2 || ids[0] != "claude-sonnet-4-5" {
		t.Fatalf("ListModels = %v, %v; want both ids", ids, err)
	}
	bad, _ := anthropic.New(anthropic.Config{BaseURL: fake.URL(), APIKey: "sk-ant-wrong-0000"})
	if _, err := bad.ListModels(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("ListModels with a wrong key = %v, want a 401", err)
	}
}

// A server that echoes the key it was sent — in an error's message, in its
// type, before or inside a stream — never gets it into the error, the
// message kept in the transcript or its JSON.
func TestAPIKeyEchoedByTheServerIsRedacted(t *testing.T) {
	c, fake := newClient(t)
	fake.Push(
		anthropicfake.HTTPError(401, "authentication_error", "invalid x-api-key: "+testKey),
		anthropicfake.HTTPError(400, testKey, "bad key"),
		anthropicfake.Reply(anthropicfake.Text("partial")).ThenError(testKey, "failed for "+testKey),
	)
	for i := range 3 {
		m, _, err := stream(t, c, llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}})
		if err == nil {
			t.Fatalf("call %d: no error", i)
		}
		b, _ := json.Marshal(m)
		for _, s := range []string{err.Error(), m.ErrorMessage, string(b)} {
			if strings.Contains(s, testKey) {
				t.Errorf("call %d: the API key leaked: %s", i, s)
			}
		}
		if !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("call %d: error %q, want the key replaced by [redacted]", i, err)
		}
	}
}
