package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func TestRetryAfterTwoRateLimits(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(
		llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached"),
		llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached"),
		llmfake.TextReply("finally"),
	)
	h.prompt("hello")

	starts := find[agent.AutoRetryStart](h.recorded())
	if len(starts) != 2 || starts[0].Attempt != 1 || starts[1].Attempt != 2 || starts[0].MaxAttempts != 3 {
		t.Fatalf("retry starts = %+v, want attempts 1 and 2 of 3", starts)
	}
	if starts[0].Delay != 2*time.Second || starts[1].Delay != 4*time.Second {
		t.Fatalf("delays = %v, %v; want 2s, 4s", starts[0].Delay, starts[1].Delay)
	}
	if !strings.Contains(starts[0].ErrorMessage, "Rate limit") {
		t.Fatalf("retry reason %q", starts[0].ErrorMessage)
	}
	if got := h.sleepsSeen(); len(got) != 2 || got[0] != 2*time.Second || got[1] != 4*time.Second {
		t.Fatalf("slept %v, want [2s 4s]", got)
	}
	ends := find[agent.AutoRetryEnd](h.recorded())
	if len(ends) != 1 || !ends[0].Success || ends[0].Attempt != 2 {
		t.Fatalf("retry end = %+v, want success after attempt 2", ends)
	}
	// The failed replies stay in the record but not in the context.
	reqs := h.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d, want 3", len(reqs))
	}
	for _, m := range reqs[2].Messages {
		if m.Role == "assistant" {
			t.Fatal("a failed reply was sent back to the model")
		}
	}
	var failed int
	for _, e := range h.store.all() {
		if e.Message != nil && e.Message.StopReason == llm.StopReasonError {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("failed replies in the record = %d, want 2", failed)
	}
	// Retry end comes right after the successful reply's message_end.
	names := eventNames(h.recorded())
	if tail := strings.Join(names[len(names)-4:], " "); tail != "message_end(assistant:stop) auto_retry_end turn_end agent_end" {
		t.Fatalf("event order tail = %v", tail)
	}
}

func TestRetryAfterHeaderWinsAndIsCapped(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(
		llmfake.HTTPError(429, "rate_limit_exceeded", "slow down").WithHeader("Retry-After", "7"),
		llmfake.HTTPError(503, "", "busy").WithHeader("retry-after-ms", "1500"),
		llmfake.HTTPError(429, "rate_limit_exceeded", "slow down a lot").WithHeader("Retry-After", "600"),
		llmfake.TextReply("ok"),
	)
	h.prompt("hi")
	got := h.sleepsSeen()
	want := []time.Duration{7 * time.Second, 1500 * time.Millisecond, 60 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("slept %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("slept %v, want %v", got, want)
		}
	}
}

func TestRetryGivesUpAfterMaxRetries(t *testing.T) {
	h := newHarness(t)
	h.llm.Handle(func(llmfake.Request) llmfake.Response {
		return llmfake.HTTPError(503, "", "Service Unavailable")
	})
	h.prompt("hi")
	if n := len(h.llm.Requests()); n != 4 {
		t.Fatalf("requests = %d, want 1 + 3 retries", n)
	}
	starts := find[agent.AutoRetryStart](h.recorded())
	if len(starts) != 3 || starts[2].Delay != 8*time.Second {
		t.Fatalf("retry starts = %+v, want 3 with the last after 8s", starts)
	}
	ends := find[agent.AutoRetryEnd](h.recorded())
	if len(ends) != 1 || ends[0].Success || ends[0].Attempt != 3 || !strings.Contains(ends[0].FinalError, "Service Unavailable") {
		t.Fatalf("retry end = %+v, want a failure after attempt 3 with the error", ends)
	}
	if h.sess.IsRunning() {
		t.Fatal("session still running after giving up")
	}
}

func TestRetryWaitIsCancelledByAbort(t *testing.T) {
	h := newHarness(t)
	waiting := make(chan struct{})
	h.sleep = func(ctx context.Context, d time.Duration) error {
		close(waiting)
		<-ctx.Done()
		return ctx.Err()
	}
	h.llm.Push(llmfake.HTTPError(500, "server_error", "boom"))
	h.start("hi", agent.PromptOptions{})
	<-waiting
	h.sess.Abort()
	h.wait()
	ends := find[agent.AutoRetryEnd](h.recorded())
	if len(ends) != 1 || ends[0].Success || ends[0].FinalError != "cancelled" {
		t.Fatalf("retry end = %+v, want cancelled", ends)
	}
	if n := len(h.llm.Requests()); n != 1 {
		t.Fatalf("requests = %d, want no retry after the abort", n)
	}
}

func TestNonRetryableErrorsAreNotRetried(t *testing.T) {
	cases := []struct {
		name string
		resp llmfake.Response
	}{
		{"bad request", llmfake.HTTPError(400, "invalid_request_error", "rate limited after 1500 requests")},
		{"unauthorized", llmfake.HTTPError(401, "invalid_api_key", "bad key")},
		{"forbidden", llmfake.HTTPError(403, "", "forbidden")},
		{"not found", llmfake.HTTPError(404, "model_not_found", "no such model")},
		{"quota", llmfake.HTTPError(429, "insufficient_quota", "You exceeded your current quota")},
		{"overflow", llmfake.ContextOverflow()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t) // compaction disabled: an overflow just ends the run
			h.llm.Push(tc.resp)
			h.prompt("hi")
			if n := len(h.llm.Requests()); n != 1 {
				t.Fatalf("requests = %d, want 1", n)
			}
			if n := count[agent.AutoRetryStart](h.recorded()); n != 0 {
				t.Fatalf("retried %d times", n)
			}
		})
	}
}

// pi's hang: a transport error after a successful tool turn in the same run. The
// retry must happen (or be released) and Prompt must return.
func TestTransportErrorAfterToolTurnIsRetriedAndPromptReturns(t *testing.T) {
	for _, retry := range []bool{true, false} {
		name := map[bool]string{true: "retry enabled", false: "retry disabled"}[retry]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withTools(&testTool{name: "look"}), func(c *agent.Config) { c.Retry.Enabled = retry })
			h.llm.Push(
				llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "look", Args: `{}`}),
				llmfake.Stream(llmfake.Content("half an ans"), llmfake.Cut()),
				llmfake.TextReply("the whole answer"),
			)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := h.sess.Prompt(ctx, "look around", agent.PromptOptions{}); err != nil {
				t.Fatalf("Prompt: %v", err)
			}
			ends := find[agent.MessageEnd](h.recorded())
			last := ends[len(ends)-1].Message
			if retry {
				if last.TextContent() != "the whole answer" {
					t.Fatalf("last reply %q, want the retried answer", last.TextContent())
				}
				// The retry continues after the tool result, without repeating the tool.
				reqs := h.llm.Requests()
				if got := toolResults(reqs[2]); len(got) != 1 {
					t.Fatalf("retried request tool results = %v", got)
				}
			} else if last.StopReason != llm.StopReasonError {
				t.Fatalf("last reply %+v, want the error", last)
			}
		})
	}
}

func TestSuccessResetsTheRetryCounter(t *testing.T) {
	h := newHarness(t, withTools(&testTool{name: "look"}))
	h.llm.Push(
		llmfake.HTTPError(429, "rate_limit_exceeded", "slow"),
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "look", Args: `{}`}),
		llmfake.HTTPError(429, "rate_limit_exceeded", "slow"),
		llmfake.TextReply("done"),
	)
	h.prompt("go")
	starts := find[agent.AutoRetryStart](h.recorded())
	if len(starts) != 2 || starts[0].Attempt != 1 || starts[1].Attempt != 1 {
		t.Fatalf("retry starts = %+v, want two first attempts", starts)
	}
	if got := h.sleepsSeen(); len(got) != 2 || got[1] != 2*time.Second {
		t.Fatalf("slept %v, want 2s twice", got)
	}
	if n := count[agent.AutoRetryEnd](h.recorded()); n != 2 {
		t.Fatalf("retry ends = %d, want 2", n)
	}
}

// The doubling delay is capped like a Retry-After: with a 2 s base
// and a 5 s cap the waits are 2, 4, 5, 5 s, and many retries neither overflow
// nor exceed the cap.
func TestRetryDelayIsCappedByMaxDelay(t *testing.T) {
	h := newHarness(t, func(c *agent.Config) {
		c.Retry = agent.RetrySettings{Enabled: true, MaxRetries: 70, BaseDelay: 2 * time.Second, MaxDelay: 5 * time.Second}
	})
	h.llm.Handle(func(llmfake.Request) llmfake.Response {
		return llmfake.HTTPError(503, "", "Service Unavailable")
	})
	h.prompt("hi")
	got := h.sleepsSeen()
	if len(got) != 70 {
		t.Fatalf("slept %d times, want 70", len(got))
	}
	for i, d := range got {
		want := 5 * time.Second
		if i < 2 {
			want = 2 * time.Second << i
		}
		if d != want {
			t.Fatalf("wait before attempt %d = %v, want %v (all waits: %v)", i+1, d, want, got[:min(len(got), 6)])
		}
	}
}
