package llmfake_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, srv *llmfake.Server) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "sk-fake-key"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ask(text string) llm.Request {
	return llm.Request{Model: "fake-model", Messages: []llm.Message{llm.UserText(text)}}
}

func TestQueueThenHandlerThenUnscripted(t *testing.T) {
	srv := llmfake.New(t)
	c := client(t, srv)
	ctx := testCtx(t)

	// Unscripted: a clear, non-retryable error.
	_, err := c.Stream(ctx, ask("first"), nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusNotImplemented || e.Code != "llmfake_unscripted" || e.Retryable() {
		t.Fatalf("unscripted answer: %v, want a non-retryable 501 llmfake_unscripted", err)
	}

	srv.Handle(func(r llmfake.Request) llmfake.Response {
		return llmfake.TextReply("handled #", r.LastMessage().Content)
	})
	srv.Push(llmfake.TextReply("queued 1"), llmfake.TextReply("queued 2"))
	var got []string
	for i := range 3 {
		msg, err := c.Stream(ctx, ask(strings.Repeat("x", i+1)), nil)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		got = append(got, msg.TextContent())
	}
	want := []string{"queued 1", "queued 2", "handled #xxx"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("answers = %q, want %q (queue first, in order, then the handler)", got, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("recorded %d requests, want 4", len(reqs))
	}
	for i, r := range reqs {
		if r.Seq != i+1 {
			t.Errorf("request %d has Seq %d, want %d", i, r.Seq, i+1)
		}
	}
	if reqs[3].Header.Get("Authorization") != "Bearer sk-fake-key" || !reqs[3].Stream || !reqs[3].IncludeUsage {
		t.Errorf("request 4 = %+v, want the client's bearer key, stream and include_usage", reqs[3])
	}
}

func TestRequestsAreCopies(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.TextReply("ok"))
	if _, err := client(t, srv).Stream(testCtx(t), ask("original"), nil); err != nil {
		t.Fatal(err)
	}
	first := srv.Requests()
	first[0].Messages[0].Content = "mutated"
	first[0].Header.Set("Authorization", "mutated")
	first[0].Body[0] = 'X'
	again := srv.Requests()[0]
	if again.Messages[0].Content != "original" || again.Header.Get("Authorization") == "mutated" || again.Body[0] == 'X' {
		t.Errorf("changing a returned request changed the record: %+v", again)
	}
}

func TestWaitRequests(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Hang()))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := client(t, srv).Stream(ctx, ask("waiting"), nil)
		done <- err
	}()

	reqs, err := srv.WaitRequests(ctx, 1)
	if err != nil || len(reqs) != 1 || reqs[0].LastMessage().Content != "waiting" {
		t.Fatalf("WaitRequests = %+v, %v; want the hanging request", reqs, err)
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if _, err := srv.WaitRequests(short, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRequests for a request that never comes = %v, want the context's error", err)
	}

	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Stream = %v, want context.Canceled", err)
	}
	if err := srv.WaitDisconnects(testCtx(t), 1); err != nil || srv.Disconnects() != 1 {
		t.Errorf("disconnects = %d (%v), want 1", srv.Disconnects(), err)
	}
}

func TestEndlessStreamsUntilDisconnect(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Endless("tick ", time.Millisecond)))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	deltas := 0
	msg, err := client(t, srv).Stream(ctx, ask("go"), func(llm.Delta, *llm.Message) {
		if deltas++; deltas == 5 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(msg.TextContent(), "tick tick tick tick tick ") {
		t.Errorf("Stream = %q, %v; want five ticks then context.Canceled", msg.TextContent(), err)
	}
	if err := srv.WaitDisconnects(testCtx(t), 1); err != nil {
		t.Errorf("the endless stream never saw the disconnect: %v", err)
	}
}

func TestChunkDelayRespectsDisconnect(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.TextReply("a", "b").WithChunkDelay(time.Hour))
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		if _, err := srv.WaitRequests(ctx, 1); err == nil {
			cancel()
		}
	}()
	if _, err := client(t, srv).Stream(ctx, ask("slow"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Stream = %v, want context.Canceled", err)
	}
	if err := srv.WaitDisconnects(testCtx(t), 1); err != nil {
		t.Errorf("the delayed script never saw the disconnect: %v", err)
	}
}

func TestCloseDoesNotWaitForHangingScripts(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(llmfake.Content("a"), llmfake.Hang()))
	got := make(chan error, 1)
	go func() {
		_, err := client(t, srv).Stream(testCtx(t), ask("x"), nil)
		got <- err
	}()
	if _, err := srv.WaitRequests(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a hanging script", d)
	}
	var e *llm.Error
	if err := <-got; !errors.As(err, &e) || !e.Retryable() {
		t.Errorf("Stream after Close = %v, want a retryable transport error", err)
	}
	if srv.Disconnects() != 0 {
		t.Errorf("Close counted %d client disconnects, want 0", srv.Disconnects())
	}
}

// The compaction summarizer may ask without streaming: the same script answers
// as one chat.completion object.
func TestNonStreamingAnswer(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.Stream(
		llmfake.Reasoning("think"),
		llmfake.Content("Sum", "mary"),
		llmfake.ToolCalls(llmfake.Call{ID: "c1", Name: "read", Args: `{"path":"a"}`}),
		llmfake.Finish("stop"),
		llmfake.Usage(50, 7, 10),
		llmfake.Done(),
	).WithModel("served-model"))
	cfg := goopenai.DefaultConfig("k")
	cfg.BaseURL = srv.URL()
	resp, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletion(testCtx(t), goopenai.ChatCompletionRequest{
		Model:    "fake-model",
		Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "summarize"}},
	})
	if err != nil {
		t.Fatalf("CreateChatCompletion: %v", err)
	}
	m := resp.Choices[0].Message
	if m.Content != "Summary" || m.ReasoningContent != "think" || resp.Choices[0].FinishReason != "stop" || resp.Model != "served-model" {
		t.Errorf("answer = %+v, want Summary, reasoning think, finish stop, model served-model", resp)
	}
	if len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "c1" || m.ToolCalls[0].Function.Arguments != `{"path":"a"}` {
		t.Errorf("tool calls = %+v, want c1 read {path:a}", m.ToolCalls)
	}
	if resp.Usage.PromptTokens != 50 || resp.Usage.CompletionTokens != 7 || resp.Usage.TotalTokens != 57 ||
		resp.Usage.PromptTokensDetails == nil || resp.Usage.PromptTokensDetails.CachedTokens != 10 {
		t.Errorf("usage = %+v, want 50/7/57 with 10 cached", resp.Usage)
	}
	if r := srv.Requests()[0]; r.Stream {
		t.Error("recorded request says stream=true for a non-streaming call")
	}

	srv.Push(llmfake.ContextOverflow())
	_, err = goopenai.NewClientWithConfig(cfg).CreateChatCompletion(testCtx(t), goopenai.ChatCompletionRequest{
		Model: "fake-model", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "x"}},
	})
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.Code != "context_length_exceeded" {
		t.Errorf("overflow answer = %v, want 400 context_length_exceeded", err)
	}
}

// Like OpenAI, the usage chunk comes only when the request asks for it; every
// event is a complete SSE event.
func TestUsageOnlyWhenAsked(t *testing.T) {
	srv := llmfake.New(t)
	for _, includeUsage := range []bool{false, true} {
		srv.Push(llmfake.TextReply("hi"))
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
		if includeUsage {
			body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`
		}
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type = %q, want text/event-stream", ct)
		}
		if got := strings.Contains(string(raw), `"prompt_tokens"`); got != includeUsage {
			t.Errorf("include_usage=%v: usage present = %v in\n%s", includeUsage, got, raw)
		}
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		for sc.Scan() {
			if line := sc.Text(); line != "" && !strings.HasPrefix(line, "data: ") {
				t.Errorf("line %q is not an SSE data line", line)
			}
		}
		if !strings.HasSuffix(string(raw), "data: [DONE]\n\n") {
			t.Errorf("stream does not end with [DONE]:\n%s", raw)
		}
	}
}

func TestModelsAndAPIKey(t *testing.T) {
	srv := llmfake.New(t)
	srv.RequireAPIKey("sk-fake-key")
	ids, err := client(t, srv).ListModels(testCtx(t))
	if err != nil || !reflect.DeepEqual(ids, []string{"fake-model"}) {
		t.Errorf("models = %v, %v; want the default [fake-model]", ids, err)
	}
	wrong, _ := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "sk-other"})
	_, err = wrong.Stream(testCtx(t), ask("x"), nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.StatusCode != 401 {
		t.Errorf("wrong key: %v, want 401", err)
	}
}

func TestSplitToolCallsInterleave(t *testing.T) {
	srv := llmfake.New(t)
	srv.Push(llmfake.ToolCallReply(
		llmfake.Call{ID: "a", Name: "one", Args: `{"k":"αβγδεζηθ"}`},
		llmfake.Call{ID: "b", Name: "two", Args: `{"n":1}`},
	))
	var order []int
	msg, err := client(t, srv).Stream(testCtx(t), ask("x"), func(d llm.Delta, _ *llm.Message) {
		order = append(order, d.Index)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Both first fragments (id + name), then three argument pieces each, alternating.
	want := []int{0, 1, 0, 1, 0, 1, 0, 1}
	if !reflect.DeepEqual(order, want) {
		t.Errorf("fragment order = %v, want %v", order, want)
	}
	if calls := msg.ToolCalls(); len(calls) != 2 || string(calls[0].Arguments) != `{"k":"αβγδεζηθ"}` {
		t.Errorf("calls = %+v, want the multibyte arguments intact", calls)
	}
}

// Await holds the stream after flushing what came before it: the client sees
// that text while the gate is shut, and the rest once it opens; a client that
// goes away while held is counted as a disconnect.
func TestAwaitHoldsTheStreamUntilTheGateOpens(t *testing.T) {
	srv := llmfake.New(t)
	gate := make(chan struct{})
	srv.Push(llmfake.Stream(llmfake.Content("held "), llmfake.Await(gate), llmfake.Content("released"), llmfake.Finish("stop"), llmfake.Done()))
	seen := ""
	msg, err := client(t, srv).Stream(testCtx(t), ask("x"), func(d llm.Delta, _ *llm.Message) {
		if seen += d.Text; seen == "held " {
			close(gate) // the text before the gate arrived while the stream was held
		}
	})
	if err != nil || msg.TextContent() != "held released" {
		t.Fatalf("Stream = %q, %v; want all of it once the gate opened", msg.TextContent(), err)
	}

	srv.Push(llmfake.Stream(llmfake.Content("held "), llmfake.Await(make(chan struct{}))))
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	if _, err := client(t, srv).Stream(ctx, ask("y"), func(llm.Delta, *llm.Message) { cancel() }); !errors.Is(err, context.Canceled) {
		t.Errorf("Stream = %v, want context.Canceled", err)
	}
	if err := srv.WaitDisconnects(testCtx(t), 1); err != nil {
		t.Errorf("the held stream never saw the disconnect: %v", err)
	}
}
