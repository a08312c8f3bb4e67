package agent_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/anthropic"
	anthropicfake "github.com/threadsmith/threadsmith/internal/fakes/anthropic"
)

// The agent behaviour that depends on the provider — retry classes, overflow
// recovery, tools, steer — holds on the native Anthropic client too, against
// the strict fake through the real SDK.

func newAnthropicHarness(t *testing.T, opts ...func(*agent.Config)) (*harness, *anthropicfake.Server) {
	t.Helper()
	fake := anthropicfake.New(t)
	fake.RequireAPIKey("sk-ant-test")
	client, err := anthropic.New(anthropic.Config{BaseURL: fake.URL(), APIKey: "sk-ant-test"})
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]func(*agent.Config){func(c *agent.Config) { c.Model, c.ModelName = client, "claude-sonnet-4-5" }}, opts...)
	return newHarness(t, opts...), fake
}

func TestAnthropicOverloadAndRateLimitAreRetried(t *testing.T) {
	h, fake := newAnthropicHarness(t)
	fake.Push(
		anthropicfake.Overloaded(),
		anthropicfake.RateLimited(3),
		anthropicfake.Reply(anthropicfake.Text("partial")).ThenError("overloaded_error", "Overloaded"),
		anthropicfake.Reply(anthropicfake.Text("finally")),
	)
	h.prompt("hello")
	if got := h.sleepsSeen(); len(got) != 3 || got[0] != 2*time.Second || got[1] != 3*time.Second || got[2] != 8*time.Second {
		t.Errorf("retry waits = %v, want [2s 3s (retry-after) 8s]", got)
	}
	ends := find[agent.AutoRetryEnd](h.recorded())
	if len(ends) != 1 || !ends[0].Success {
		t.Errorf("retry end = %+v, want one success", ends)
	}
	msgs := find[agent.MessageEnd](h.recorded())
	if got := msgs[len(msgs)-1].Message.TextContent(); got != "finally" {
		t.Errorf("last reply %q, want finally", got)
	}
	if n := len(fake.Requests()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

func TestAnthropicPromptTooLongIsCompactedAndRetried(t *testing.T) {
	h, fake := newAnthropicHarness(t, withCompaction)
	var chats atomic.Int32
	fake.Handle(func(req anthropicfake.Request) anthropicfake.Response {
		if strings.Contains(string(req.System), "You write context checkpoints") {
			return anthropicfake.Reply(anthropicfake.Text("## Goal\nsummary"))
		}
		switch chats.Add(1) {
		case 1:
			return anthropicfake.Reply(anthropicfake.Text(strings.Repeat("word ", 80))).WithUsage(anthropicfake.Usage{Input: 500, Output: 100})
		case 2:
			return anthropicfake.PromptTooLong()
		}
		return anthropicfake.Reply(anthropicfake.Text("answer after compaction"))
	})
	h.prompt("first " + strings.Repeat("y", 400))
	h.prompt("second")
	starts := find[agent.AutoCompactionStart](h.recorded())
	if len(starts) != 1 || starts[0].Reason != agent.CompactionOverflow {
		t.Fatalf("compactions = %+v, want one for the overflow", starts)
	}
	if n := count[agent.AutoRetryStart](h.recorded()); n != 0 {
		t.Fatal("an overflow went through auto-retry")
	}
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	if first := last.Messages[0].Text(); !strings.Contains(first, "summary") {
		t.Errorf("retried request starts with %q, want the summary", first)
	}
	if got := last.LastMessage().Text(); got != "second" {
		t.Errorf("retried request ends with %q, want the prompt", got)
	}
}

func TestAnthropicSteerSkipsToolCallsNotStarted(t *testing.T) {
	g := newGate()
	h, fake := newAnthropicHarness(t, withTools(g.tool("work", false)))
	fake.Push(
		anthropicfake.Reply(
			anthropicfake.ToolUse("toolu_1", "work", `{}`),
			anthropicfake.ToolUse("toolu_2", "work", `{}`),
		),
		anthropicfake.Reply(anthropicfake.Text("ok, changing course")),
	)
	h.start("start working", agent.PromptOptions{})
	g.waitStarted(t)
	h.start("stop, do this instead", agent.PromptOptions{Behavior: agent.BehaviorSteer})
	close(g.open)
	h.wait()
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	results := msgs[len(msgs)-2]
	if len(results.Content) != 2 || results.Content[0].ToolUseID != "toolu_1" || results.Content[1].Content[0].Text != "skipped: a newer user message arrived" {
		t.Errorf("tool results = %+v, want toolu_1's result and toolu_2 skipped", results.Content)
	}
	if got := reqs[1].LastMessage().Text(); got != "stop, do this instead" {
		t.Errorf("last message %q, want the steer", got)
	}
}
