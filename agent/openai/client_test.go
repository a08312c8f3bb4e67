package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

const testKey = "sk-test-secret-key-123"

func newClient(t *testing.T, baseURL string) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: baseURL, APIKey: testKey, Provider: "fakeai"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// testCtx bounds every call so a regression fails instead of hanging.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type recorded struct {
	delta   llm.Delta
	partial llm.Message
}

// recorder keeps every delta and a copy of the partial message it came with.
type recorder struct{ got []recorded }

func (r *recorder) fn(d llm.Delta, partial *llm.Message) {
	r.got = append(r.got, recorded{d, partial.Clone()})
}

func simpleRequest(text string) llm.Request {
	return llm.Request{Model: "fake-model", SystemPrompt: "be brief", Messages: []llm.Message{llm.UserText(text)}, MaxTokens: 256}
}

func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %T %v, want *llm.Error", err, err)
	}
	return e
}

func TestStreamText(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(
		llmfake.Content("Hel", "lo", " world"),
		llmfake.Finish("stop"),
		llmfake.Usage(100, 20, 30),
		llmfake.Done(),
	).WithModel("fake-model-2025"))

	var rec recorder
	before := time.Now().UnixMilli()
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), rec.fn)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}

	wantDeltas := []string{"Hel", "lo", " world"}
	wantPartial := []string{"Hel", "Hello", "Hello world"}
	if len(rec.got) != len(wantDeltas) {
		t.Fatalf("got %d deltas, want %d", len(rec.got), len(wantDeltas))
	}
	for i, r := range rec.got {
		if r.delta.Kind != llm.DeltaText || r.delta.Index != 0 || r.delta.Text != wantDeltas[i] {
			t.Errorf("delta %d = %+v, want text %q at index 0", i, r.delta, wantDeltas[i])
		}
		if got := r.partial.TextContent(); got != wantPartial[i] {
			t.Errorf("partial after delta %d = %q, want %q", i, got, wantPartial[i])
		}
	}

	if got := msg.TextContent(); got != "Hello world" {
		t.Errorf("text = %q, want %q", got, "Hello world")
	}
	if msg.Role != llm.RoleAssistant || msg.StopReason != llm.StopReasonStop {
		t.Errorf("role, stop = %q, %q; want assistant, stop", msg.Role, msg.StopReason)
	}
	wantUsage := llm.Usage{Input: 70, Output: 20, CacheRead: 30, TotalTokens: 120}
	if msg.Usage == nil || *msg.Usage != wantUsage {
		t.Errorf("usage = %+v, want %+v", msg.Usage, wantUsage)
	}
	if msg.Model != "fake-model-2025" || msg.Provider != "fakeai" {
		t.Errorf("model, provider = %q, %q; want fake-model-2025, fakeai", msg.Model, msg.Provider)
	}
	if msg.Timestamp < before || msg.Timestamp > time.Now().UnixMilli() {
		t.Errorf("timestamp %d is not the time of the call (from %d)", msg.Timestamp, before)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if !r.Stream || !r.IncludeUsage {
		t.Errorf("stream=%v include_usage=%v, want both true", r.Stream, r.IncludeUsage)
	}
	if r.Model != "fake-model" || r.MaxTokens != 256 || r.MaxCompletionTokens != 0 {
		t.Errorf("model=%q max_tokens=%d max_completion_tokens=%d, want fake-model, 256, 0", r.Model, r.MaxTokens, r.MaxCompletionTokens)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the bearer key", got)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != "be brief" ||
		r.Messages[1].Role != "user" || r.Messages[1].Content != "hi" {
		t.Errorf("messages = %+v, want system 'be brief' then user 'hi'", r.Messages)
	}
}

func TestStreamModelFallsBackToRequest(t *testing.T) {
	srv := llmfake.New(t)
	// A server that reports no model name.
	srv.Push(llmfake.Stream(llmfake.Raw(`data: {"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}`+"\n\n"), llmfake.Done()))
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if msg.Model != "fake-model" {
		t.Errorf("model = %q, want the requested fake-model", msg.Model)
	}
	if msg.Usage != nil {
		t.Errorf("usage = %+v, want nil when the server sent none", msg.Usage)
	}
}

func TestStreamToolCallsInterleaved(t *testing.T) {
	srv := llmfake.New(t)
	calls := []llmfake.Call{
		{ID: "call_a", Name: "read", Args: `{"path":"README.md","limit":20}`},
		{ID: "call_b", Name: "bash", Args: `{"command":"ls -la ünïcode"}`},
	}
	srv.Push(llmfake.ToolCallReply(calls...))

	var rec recorder
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("go"), rec.fn)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if msg.StopReason != llm.StopReasonToolUse {
		t.Errorf("stop = %q, want toolUse", msg.StopReason)
	}
	got := msg.ToolCalls()
	if len(got) != 2 || len(msg.Content) != 2 {
		t.Fatalf("content = %+v, want exactly two tool calls", msg.Content)
	}
	for i, want := range calls {
		if got[i].ID != want.ID || got[i].Name != want.Name || string(got[i].Arguments) != want.Args {
			t.Errorf("call %d = %s %s %s, want %s %s %s", i, got[i].ID, got[i].Name, got[i].Arguments, want.ID, want.Name, want.Args)
		}
	}

	// Fragments interleave (a, b, a, b, …): each delta must land on its own call.
	perBlock := map[int]string{}
	sawInterleave := false
	for i, r := range rec.got {
		if r.delta.Kind != llm.DeltaToolCall {
			t.Fatalf("delta %d kind = %v, want tool call", i, r.delta.Kind)
		}
		want := calls[r.delta.Index]
		if r.delta.ToolCallID != want.ID || r.delta.ToolName != want.Name {
			t.Errorf("delta %d at block %d names %s/%s, want %s/%s", i, r.delta.Index, r.delta.ToolCallID, r.delta.ToolName, want.ID, want.Name)
		}
		perBlock[r.delta.Index] += r.delta.Text
		if string(r.partial.Content[r.delta.Index].Arguments) != perBlock[r.delta.Index] {
			t.Errorf("partial args of block %d = %s, want %s", r.delta.Index, r.partial.Content[r.delta.Index].Arguments, perBlock[r.delta.Index])
		}
		if i > 0 && rec.got[i-1].delta.Index != r.delta.Index {
			sawInterleave = true
		}
	}
	if !sawInterleave {
		t.Error("the fake did not interleave fragments; the test proves nothing")
	}
	for i, want := range calls {
		if perBlock[i] != want.Args {
			t.Errorf("fragments of call %d join to %s, want %s", i, perBlock[i], want.Args)
		}
	}
}

func TestStreamToolCallsFinalOrderByIndex(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(
		llmfake.Content("Let me look."),
		llmfake.ToolCallFragment(1, "call_1", "ls", `{"path":`),
		llmfake.ToolCallFragment(0, "call_0", "read", `{"path":"a"}`),
		llmfake.ToolCallFragment(1, "", "", `"."}`),
		llmfake.Finish("stop"), // sloppy: "stop" after tool calls
		llmfake.Done(),
	))
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("go"), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if msg.StopReason != llm.StopReasonToolUse {
		t.Errorf("stop = %q, want toolUse for tool calls finished with stop", msg.StopReason)
	}
	want := []llm.Content{
		llm.Text("Let me look."),
		llm.ToolCall("call_0", "read", json.RawMessage(`{"path":"a"}`)),
		llm.ToolCall("call_1", "ls", json.RawMessage(`{"path":"."}`)),
	}
	if !reflect.DeepEqual(msg.Content, want) {
		t.Errorf("content = %+v\nwant %+v", msg.Content, want)
	}
}

func TestStreamToolCallsWithoutIndex(t *testing.T) {
	srv := llmfake.New(t)
	// Some servers send every call with index 0 (or none) and distinct ids.
	srv.Push(llmfake.Stream(
		llmfake.Raw(`data: {"choices":[{"delta":{"tool_calls":[{"id":"c1","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}`+"\n\n"),
		llmfake.Raw(`data: {"choices":[{"delta":{"tool_calls":[{"id":"c2","function":{"name":"read","arguments":{"path":"b"}}}]}}]}`+"\n\n"),
		llmfake.Finish("tool_calls"), llmfake.Done(),
	))
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("go"), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	got := msg.ToolCalls()
	if len(got) != 2 || got[0].ID != "c1" || got[1].ID != "c2" ||
		string(got[0].Arguments) != `{"path":"a"}` || string(got[1].Arguments) != `{"path":"b"}` {
		t.Errorf("calls = %+v, want c1 read {path:a} and c2 read {path:b} (object arguments kept as JSON)", got)
	}
}

func TestStreamInvalidToolArgumentsStayStorable(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.ToolCallReply(
		llmfake.Call{ID: "c1", Name: "edit", Args: `{"path": "x", "old": `},
		llmfake.Call{ID: "c2", Name: "noargs"},
	))
	c := newClient(t, srv.URL())
	msg, err := c.Stream(testCtx(t), simpleRequest("go"), nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	calls := msg.ToolCalls()
	if len(calls) != 2 {
		t.Fatalf("calls = %+v, want 2", calls)
	}
	var raw string
	if err := json.Unmarshal(calls[0].Arguments, &raw); err != nil || raw != `{"path": "x", "old": ` {
		t.Errorf("invalid arguments = %s, want the raw text as a JSON string", calls[0].Arguments)
	}
	if string(calls[1].Arguments) != "{}" {
		t.Errorf("empty arguments = %s, want {}", calls[1].Arguments)
	}
	if _, err := json.Marshal(msg); err != nil {
		t.Errorf("the message does not marshal for storage: %v", err)
	}

	// Sent back, the model sees exactly what it produced.
	srv.Push(llmfake.TextReply("ok"))
	req := simpleRequest("go")
	req.Messages = append(req.Messages, msg)
	if _, err := c.Stream(testCtx(t), req, nil); err != nil {
		t.Fatalf("second Stream: %v", err)
	}
	sent := srv.Requests()[1].LastMessage().ToolCalls
	if len(sent) != 2 || sent[0].Arguments != `{"path": "x", "old": ` || sent[1].Arguments != "{}" {
		t.Errorf("arguments sent back = %+v, want the raw invalid text and {}", sent)
	}
}

func TestStreamReasoning(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(
		llmfake.Reasoning("Let me", " think."),
		llmfake.Content("Answer: 42"),
		llmfake.Finish("stop"), llmfake.Done(),
	))
	var rec recorder
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("q"), rec.fn)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []llm.Content{{Type: llm.ContentThinking, Thinking: "Let me think."}, llm.Text("Answer: 42")}
	if !reflect.DeepEqual(msg.Content, want) {
		t.Errorf("content = %+v, want %+v", msg.Content, want)
	}
	wantDeltas := []llm.Delta{
		{Kind: llm.DeltaThinking, Index: 0, Text: "Let me"},
		{Kind: llm.DeltaThinking, Index: 0, Text: " think."},
		{Kind: llm.DeltaText, Index: 1, Text: "Answer: 42"},
	}
	var got []llm.Delta
	for _, r := range rec.got {
		got = append(got, r.delta)
	}
	if !reflect.DeepEqual(got, wantDeltas) {
		t.Errorf("deltas = %+v, want %+v", got, wantDeltas)
	}
}

func TestStreamReasoningAfterTextIsReordered(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(
		llmfake.Content("Hi"),
		llmfake.Raw(`data: {"choices":[{"delta":{"reasoning":"late thought"}}]}`+"\n\n"), // vLLM / OpenRouter name
		llmfake.Finish("stop"), llmfake.Done(),
	))
	var rec recorder
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("q"), rec.fn)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(rec.got) != 2 || rec.got[1].delta.Kind != llm.DeltaThinking || rec.got[1].delta.Index != 1 {
		t.Fatalf("deltas = %+v, want text at 0 then thinking at 1 (arrival order in the partial)", rec.got)
	}
	want := []llm.Content{{Type: llm.ContentThinking, Thinking: "late thought"}, llm.Text("Hi")}
	if !reflect.DeepEqual(msg.Content, want) {
		t.Errorf("final content = %+v, want thinking before text", msg.Content)
	}
}

func TestRequestConversion(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.TextReply("done"))
	req := llm.Request{
		Model:        "o3-mini",
		SystemPrompt: "system rules",
		MaxTokens:    1000,
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "now", Description: "the time"},
		},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Content{llm.Text("what is in this picture?"), llm.Image("image/png", "iVBORw0KGgo=")}},
			{Role: llm.RoleAssistant, Content: []llm.Content{
				{Type: llm.ContentThinking, Thinking: "secret thoughts"},
				llm.Text("Let me read it."),
				llm.ToolCall("call_1", "read", json.RawMessage(`{"path":"a.txt"}`)),
				llm.ToolCall("call_2", "read", json.RawMessage(`{"path":"b.png"}`)),
			}},
			{Role: llm.RoleToolResult, ToolCallID: "call_1", ToolName: "read", Content: []llm.Content{llm.Text("hello")}},
			{Role: llm.RoleToolResult, ToolCallID: "call_2", ToolName: "read", Content: []llm.Content{llm.Image("image/jpeg", "/9j/4AAQ")}},
			{Role: llm.RoleAssistant, StopReason: llm.StopReasonAborted}, // empty: must be skipped
			llm.UserText("thanks"),
		},
	}
	if _, err := newClient(t, srv.URL()).Stream(testCtx(t), req, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	r := srv.Requests()[0]
	if r.MaxCompletionTokens != 1000 || r.MaxTokens != 0 {
		t.Errorf("o3 model: max_completion_tokens=%d max_tokens=%d, want 1000, 0", r.MaxCompletionTokens, r.MaxTokens)
	}
	roles := []string{}
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	wantRoles := []string{"system", "user", "assistant", "tool", "tool", "user", "user"}
	if !reflect.DeepEqual(roles, wantRoles) {
		t.Fatalf("roles = %v, want %v", roles, wantRoles)
	}
	user := r.Messages[1]
	if user.Content != "what is in this picture?" || !reflect.DeepEqual(user.Images(), []string{"data:image/png;base64,iVBORw0KGgo="}) {
		t.Errorf("user message = %+v, want the text and a data URL image", user)
	}
	asst := r.Messages[2]
	if asst.Content != "Let me read it." || len(asst.ToolCalls) != 2 ||
		asst.ToolCalls[0] != (llmfake.ToolCall{ID: "call_1", Type: "function", Name: "read", Arguments: `{"path":"a.txt"}`}) {
		t.Errorf("assistant message = %+v, want text and two function tool calls", asst)
	}
	if strings.Contains(string(r.Body), "secret thoughts") {
		t.Error("thinking was sent back to the provider")
	}
	if r.Messages[3].ToolCallID != "call_1" || r.Messages[3].Content != "hello" {
		t.Errorf("tool result 1 = %+v, want tool_call_id call_1 with text hello", r.Messages[3])
	}
	if r.Messages[4].ToolCallID != "call_2" || r.Messages[4].Content == "" {
		t.Errorf("tool result 2 = %+v, want tool_call_id call_2 with a placeholder text", r.Messages[4])
	}
	if imgs := r.Messages[5].Images(); !reflect.DeepEqual(imgs, []string{"data:image/jpeg;base64,/9j/4AAQ"}) {
		t.Errorf("images after tool results = %v, want the tool's jpeg as a data URL", imgs)
	}
	if r.Messages[6].Content != "thanks" {
		t.Errorf("last message = %+v, want user 'thanks'", r.Messages[6])
	}
	if len(r.Tools) != 2 || r.Tools[0].Type != "function" || r.Tools[0].Name != "read" ||
		!strings.Contains(string(r.Tools[0].Parameters), `"required":["path"]`) {
		t.Errorf("tools = %+v, want function tools with their schemas", r.Tools)
	}
	if string(r.Tools[1].Parameters) != `{"type":"object","properties":{}}` {
		t.Errorf("schema of a tool without parameters = %s, want an empty object schema", r.Tools[1].Parameters)
	}
}

func TestStreamTruncated(t *testing.T) {
	tests := map[string]llmfake.Response{
		"body ends":                  llmfake.Stream(llmfake.Content("partial")),
		"[DONE] without finish":      llmfake.Stream(llmfake.Content("partial"), llmfake.Done()),
		"usage only, without finish": llmfake.Stream(llmfake.Content("partial"), llmfake.Usage(1, 1, 0), llmfake.Done()),
	}
	for name, resp := range tests {
		t.Run(name, func(t *testing.T) {
			srv := llmfake.New(t)
			srv.Push(resp)
			msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
			e := asLLMError(t, err)
			if e.Kind != llm.ErrorTruncated || !e.Retryable() {
				t.Errorf("error = %+v, want a retryable truncated error", e)
			}
			if msg.TextContent() != "partial" || msg.StopReason != llm.StopReasonError || msg.ErrorInfo != e {
				t.Errorf("partial = %+v, want text 'partial', stop reason error and the error attached", msg)
			}
		})
	}
}

func TestStreamMalformed(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Content("ok so far"), llmfake.Raw("data: {\"choices\": [oops\n\n"), llmfake.Finish("stop")))
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
	e := asLLMError(t, err)
	if e.Kind != llm.ErrorMalformed || e.Retryable() {
		t.Errorf("error = %+v, want a non-retryable malformed error", e)
	}
	if msg.TextContent() != "ok so far" {
		t.Errorf("partial text = %q, want what arrived before the bad event", msg.TextContent())
	}
}

func TestStreamProviderErrorMidStream(t *testing.T) {
	tests := []struct {
		name      string
		steps     []llmfake.Step
		wantCode  string
		wantState int
		retry     bool
	}{
		{
			name:     "error event",
			steps:    []llmfake.Step{llmfake.Content("a"), llmfake.StreamError("", "server_error", "The server had an error")},
			wantCode: "server_error", retry: true,
		},
		{
			name: "error event after keep-alive comments",
			steps: []llmfake.Step{
				llmfake.KeepAlive(), llmfake.Content("a"), llmfake.Comment("OPENROUTER PROCESSING"),
				llmfake.StreamError("overloaded_error", "overloaded_error", "Overloaded"),
			},
			wantCode: "overloaded_error", retry: true,
		},
		{
			name:     "error object spaced differently",
			steps:    []llmfake.Step{llmfake.Content("a"), llmfake.Raw(`data: {"error": {"message": "quota", "code": "insufficient_quota"}}` + "\n\n")},
			wantCode: "insufficient_quota", retry: false,
		},
		{
			name:      "numeric code is a status",
			steps:     []llmfake.Step{llmfake.Content("a"), llmfake.Raw(`data: {"error":{"code":502,"message":"upstream failed"}}` + "\n\n")},
			wantState: 502, retry: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmfake.New(t)
			srv.Push(llmfake.Stream(tt.steps...))
			msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
			e := asLLMError(t, err)
			if e.Kind != llm.ErrorProvider || e.Code != tt.wantCode || e.StatusCode != tt.wantState || e.Retryable() != tt.retry {
				t.Errorf("error = %+v (retryable %v), want provider error code %q status %d retryable %v",
					e, e.Retryable(), tt.wantCode, tt.wantState, tt.retry)
			}
			if msg.TextContent() != "a" {
				t.Errorf("partial text = %q, want a", msg.TextContent())
			}
		})
	}
}

func TestStreamFinishReasonsThatFail(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Content("I can't"), llmfake.Finish("content_filter"), llmfake.Done()))
	_, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
	if e := asLLMError(t, err); e.Code != "content_filter" || e.Retryable() {
		t.Errorf("error = %+v, want a non-retryable content_filter error", e)
	}

	srv.Push(llmfake.Stream(llmfake.Finish("length"), llmfake.Done()))
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
	if err != nil || msg.StopReason != llm.StopReasonLength {
		t.Errorf("finish length: stop %q err %v, want length and no error", msg.StopReason, err)
	}
}

func TestStreamHTTPErrors(t *testing.T) {
	tests := []struct {
		name      string
		resp      llmfake.Response
		status    int
		code      string
		retry     bool
		overflow  bool
		wantAfter time.Duration
	}{
		{
			name:   "429 with Retry-After seconds",
			resp:   llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached").WithHeader("Retry-After", "7"),
			status: 429, code: "rate_limit_exceeded", retry: true, wantAfter: 7 * time.Second,
		},
		{
			name: "429 with retry-after-ms",
			resp: llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached").
				WithHeader("retry-after-ms", "1500").WithHeader("Retry-After", "2"),
			status: 429, code: "rate_limit_exceeded", retry: true, wantAfter: 1500 * time.Millisecond,
		},
		{
			name:   "429 insufficient_quota",
			resp:   llmfake.HTTPError(429, "insufficient_quota", "You exceeded your current quota"),
			status: 429, code: "insufficient_quota", retry: false,
		},
		{name: "500", resp: llmfake.HTTPError(500, "", "The server had an error"), status: 500, code: "server_error", retry: true},
		{name: "503 plain text", resp: llmfake.Response{Status: 503, Body: "upstream connect error"}, status: 503, retry: true},
		{name: "401", resp: llmfake.HTTPError(401, "invalid_api_key", "Incorrect API key provided"), status: 401, code: "invalid_api_key", retry: false},
		{name: "404 model", resp: llmfake.HTTPError(404, "model_not_found", "The model does not exist"), status: 404, code: "model_not_found", retry: false},
		{
			name:   "context_length_exceeded",
			resp:   llmfake.ContextOverflow(),
			status: 400, code: "context_length_exceeded", retry: false, overflow: true,
		},
		{
			name:   "overflow told in the message only",
			resp:   llmfake.Response{Status: 400, Body: `{"error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}`},
			status: 400, code: "invalid_request_error", retry: false, overflow: true,
		},
		{
			name:   "vLLM error shape",
			resp:   llmfake.Response{Status: 400, Body: `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","code":400}`},
			status: 400, code: "BadRequestError", retry: false, overflow: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmfake.New(t)
			srv.Push(tt.resp)
			msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
			e := asLLMError(t, err)
			if e.Kind != llm.ErrorHTTP || e.StatusCode != tt.status || e.Code != tt.code {
				t.Errorf("error = %+v, want http status %d code %q", e, tt.status, tt.code)
			}
			if e.Retryable() != tt.retry || e.ContextOverflow != tt.overflow || e.RetryAfter != tt.wantAfter {
				t.Errorf("retryable=%v overflow=%v retryAfter=%v, want %v %v %v",
					e.Retryable(), e.ContextOverflow, e.RetryAfter, tt.retry, tt.overflow, tt.wantAfter)
			}
			if e.Message == "" || msg.StopReason != llm.StopReasonError || msg.ErrorMessage != e.Error() {
				t.Errorf("message %q, partial %+v: want a message and an error partial", e.Message, msg)
			}
		})
	}
}

// Concurrent calls must each see their own response headers.
func TestRetryAfterPerRequest(t *testing.T) {
	srv := llmfake.New(t)
	srv.Handle(func(r llmfake.Request) llmfake.Response {
		return llmfake.HTTPError(429, "rate_limit_exceeded", "slow down").WithHeader("Retry-After", r.LastMessage().Content)
	})
	c := newClient(t, srv.URL())
	var wg sync.WaitGroup
	for i := 1; i <= 8; i++ {
		wg.Go(func() {
			secs := []string{"", "1", "2", "3", "4", "5", "6", "7", "8"}[i]
			_, err := c.Stream(testCtx(t), simpleRequest(secs), nil)
			var e *llm.Error
			if !errors.As(err, &e) || e.RetryAfter != time.Duration(i)*time.Second {
				t.Errorf("call %d: error %v, want RetryAfter %ds", i, err, i)
			}
		})
	}
	wg.Wait()
}

func TestStreamEndpointDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	msg, err := newClient(t, "http://"+addr+"/v1").Stream(testCtx(t), simpleRequest("hi"), nil)
	e := asLLMError(t, err)
	if e.Kind != llm.ErrorNetwork || !e.Retryable() || !strings.Contains(e.Message, "refused") {
		t.Errorf("error = %+v, want a retryable network error saying refused", e)
	}
	if msg.StopReason != llm.StopReasonError {
		t.Errorf("stop = %q, want error", msg.StopReason)
	}
}

func TestStreamConnectionCut(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Content("half an ans"), llmfake.Cut()))
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
	e := asLLMError(t, err)
	if e.Kind != llm.ErrorNetwork || !e.Retryable() {
		t.Errorf("error = %+v, want a retryable network error", e)
	}
	if msg.TextContent() != "half an ans" {
		t.Errorf("partial = %q, want what arrived before the cut", msg.TextContent())
	}
}

func TestStreamResponseHeaderTimeout(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Delay(time.Minute), llmfake.Content("late")))
	c, err := openai.New(openai.Config{
		BaseURL:    srv.URL(),
		HTTPClient: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, err = c.Stream(ctx, simpleRequest("hi"), nil)
	e := asLLMError(t, err)
	if e.Kind != llm.ErrorTimeout || !e.Retryable() {
		t.Errorf("error = %+v, want a retryable timeout", e)
	}
	if ctx.Err() != nil {
		t.Fatal("the test context ended; the timeout proves nothing")
	}
	if err := srv.WaitDisconnects(ctx, 1); err != nil {
		t.Errorf("the server never saw the client give up: %v", err)
	}
}

// A slow stream is not cut by a header timeout once headers have arrived.
func TestStreamOutlivesHeaderTimeout(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Content("a"), llmfake.Delay(150*time.Millisecond), llmfake.Content("b"), llmfake.Finish("stop"), llmfake.Done()))
	c, err := openai.New(openai.Config{
		BaseURL:    srv.URL(),
		HTTPClient: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}, Timeout: time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.Stream(testCtx(t), simpleRequest("hi"), nil)
	if err != nil || msg.TextContent() != "ab" {
		t.Errorf("Stream = %q, %v; want ab and no error (Client.Timeout must be ignored too)", msg.TextContent(), err)
	}
}

func TestStreamCancelWhileServerHangs(t *testing.T) {
	for _, name := range []string{"before headers", "mid-stream"} {
		t.Run(name, func(t *testing.T) {
			srv := llmfake.New(t)
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			var fn llm.StreamFunc
			if name == "before headers" {
				srv.Push(llmfake.Stream(llmfake.Delay(time.Hour)))
				go func() {
					if _, err := srv.WaitRequests(ctx, 1); err == nil {
						cancel()
					}
				}()
			} else {
				srv.Push(llmfake.Stream(llmfake.Content("first"), llmfake.Hang()))
				fn = func(llm.Delta, *llm.Message) { cancel() }
			}

			start := time.Now()
			msg, err := newClient(t, srv.URL()).Stream(ctx, simpleRequest("hi"), fn)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error = %v, want context.Canceled", err)
			}
			var e *llm.Error
			if errors.As(err, &e) {
				t.Errorf("cancellation came back as *llm.Error %+v", e)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Stream took %v to notice the cancellation", d)
			}
			if msg.StopReason != llm.StopReasonAborted {
				t.Errorf("stop = %q, want aborted", msg.StopReason)
			}
			if name == "mid-stream" && msg.TextContent() != "first" {
				t.Errorf("partial = %q, want first", msg.TextContent())
			}
			if err := srv.WaitDisconnects(testCtx(t), 1); err != nil {
				t.Errorf("the server never saw the disconnect: %v", err)
			}
		})
	}
}

func TestStreamKeepAliveComments(t *testing.T) {
	srv := llmfake.New(t)
	steps := []llmfake.Step{llmfake.KeepAlive(), llmfake.Raw("event: message\nid: 1\nretry: 100\n")}
	for range 500 { // beyond go-openai's default limit of 300 empty lines
		steps = append(steps, llmfake.Raw("\n"))
	}
	steps = append(steps, llmfake.Content("a"), llmfake.KeepAlive(), llmfake.Comment("OPENROUTER PROCESSING"), llmfake.Raw("data: \n\n"),
		llmfake.Content("b"), llmfake.KeepAlive(), llmfake.Finish("stop"), llmfake.Done())
	srv.Push(llmfake.Stream(steps...))
	msg, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
	if err != nil || msg.TextContent() != "ab" {
		t.Errorf("Stream = %q, %v; want ab and no error", msg.TextContent(), err)
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(
		llmfake.HTTPError(401, "invalid_api_key", "Incorrect API key provided: "+testKey+"."),
		llmfake.Response{Status: 502, Body: "<html>bad gateway for key " + testKey + "</html>"},
		llmfake.Stream(llmfake.Content("a"), llmfake.StreamError(testKey, "server_error", "failed for "+testKey)),
	)
	c := newClient(t, srv.URL())
	for i := range 3 {
		msg, err := c.Stream(testCtx(t), simpleRequest("hi"), nil)
		if err == nil {
			t.Fatalf("call %d: no error", i)
		}
		b, _ := json.Marshal(msg)
		for _, s := range []string{err.Error(), msg.ErrorMessage, string(b)} {
			if strings.Contains(s, testKey) {
				t.Errorf("call %d: the API key leaked: %s", i, s)
			}
		}
		if !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("call %d: error %q, want the key replaced by [redacted]", i, err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = newClient(t, "http://"+addr+"/v1").Stream(testCtx(t), simpleRequest("hi"), nil)
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("network error %v: want an error without the key", err)
	}
}

func TestListModels(t *testing.T) {
	srv := llmfake.New(t)
	srv.SetModels("gpt-a", "gpt-b")
	srv.RequireAPIKey(testKey)
	ids, err := newClient(t, srv.URL()).ListModels(testCtx(t))
	if err != nil || !reflect.DeepEqual(ids, []string{"gpt-a", "gpt-b"}) {
		t.Errorf("ListModels = %v, %v; want [gpt-a gpt-b]", ids, err)
	}

	bad, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "sk-wrong-key-456"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.ListModels(testCtx(t))
	if e := asLLMError(t, err); e.StatusCode != 401 || e.Code != "invalid_api_key" || e.Retryable() {
		t.Errorf("wrong key: error %+v, want a non-retryable 401 invalid_api_key", e)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	for _, base := range []string{"", "not a url", "ftp://host/v1", "http://"} {
		if _, err := openai.New(openai.Config{BaseURL: base}); err == nil {
			t.Errorf("New(BaseURL %q) succeeded, want an error", base)
		} else if !strings.Contains(err.Error(), "BaseURL") {
			t.Errorf("New(BaseURL %q) error %q does not name BaseURL", base, err)
		}
	}
	srv := llmfake.New(t)
	srv.Push(llmfake.TextReply("x"))
	c, err := openai.New(openai.Config{BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.Stream(testCtx(t), simpleRequest("hi"), nil)
	if err != nil || msg.Provider != "openai" {
		t.Errorf("default provider = %q (err %v), want openai", msg.Provider, err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q without an API key, want none", got)
	}
}

// Some gateways answer 200 and then send a bare JSON error instead of events.
func TestStreamBareJSONErrorWith200(t *testing.T) {
	for _, ct := range []string{"text/event-stream", "application/json"} {
		t.Run(ct, func(t *testing.T) {
			srv := llmfake.New(t)
			srv.Push(llmfake.Response{
				Header: http.Header{"Content-Type": {ct}},
				Body:   `{"error":{"message":"upstream overloaded","type":"overloaded_error"}}`,
			})
			_, err := newClient(t, srv.URL()).Stream(testCtx(t), simpleRequest("hi"), nil)
			e := asLLMError(t, err)
			if e.Kind != llm.ErrorProvider || e.Code != "overloaded_error" || e.Message != "upstream overloaded" || !e.Retryable() {
				t.Errorf("error = %+v, want a retryable provider error overloaded_error", e)
			}
		})
	}
}

// A base URL with a query (a proxy that takes its key as ?key=) reaches the
// model: the query goes on every request, after the endpoint's path, not
// before it.
func TestBaseURLQueryIsSentWithEveryRequest(t *testing.T) {
	srv := llmfake.New(t)
	srv.RequireQueryKey("proxy-key-1")
	srv.SetModels("gpt-a")
	srv.Push(llmfake.Stream(llmfake.Content("ok"), llmfake.Finish("stop"), llmfake.Done()))
	c := newClient(t, srv.URL()+"?key=proxy-key-1")
	if ids, err := c.ListModels(testCtx(t)); err != nil || len(ids) != 1 {
		t.Fatalf("ListModels = %v, %v", ids, err)
	}
	var rec recorder
	msg, err := c.Stream(testCtx(t), simpleRequest("hi"), rec.fn)
	if err != nil || msg.TextContent() != "ok" {
		t.Fatalf("Stream = %q, %v; want ok", msg.TextContent(), err)
	}
}
