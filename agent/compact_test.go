package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func isSummaryRequest(req llmfake.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" &&
		strings.HasPrefix(req.Messages[0].Content, "You write context checkpoints")
}

// summaryGate holds the model's summary requests until opened; the others
// are answered by reply.
type summaryGate struct {
	summarizing chan struct{} // told of each summary request as it arrives
	release     chan struct{}
	once        sync.Once
}

func holdSummaries(h *harness, reply func(llmfake.Request) llmfake.Response) *summaryGate {
	g := &summaryGate{summarizing: make(chan struct{}, 4), release: make(chan struct{})}
	h.t.Cleanup(g.open)
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			g.summarizing <- struct{}{}
			<-g.release
			return llmfake.TextReply("## Goal\nsummary")
		}
		return reply(req)
	})
	return g
}

func (g *summaryGate) open() { g.once.Do(func() { close(g.release) }) }

// queueWhileSummarizing sends text as follow-up input while g holds a
// compaction's summary (it must be queued), then lets the summary through
// and waits for the compaction (done: its error) and the session to end.
func queueWhileSummarizing(h *harness, g *summaryGate, done <-chan error, text string) {
	h.t.Helper()
	if out := h.start(text, agent.PromptOptions{Behavior: agent.BehaviorFollowUp}); out != agent.Queued {
		h.t.Fatalf("input during compaction: %v, want queued", out)
	}
	g.open()
	if err := <-done; err != nil {
		h.t.Fatal(err)
	}
	h.wait()
}

// withCompaction gives a small window: 4000 tokens, compaction above 3000, about
// 50 tokens kept verbatim.
func withCompaction(c *agent.Config) {
	c.ContextWindow = 4000
	c.Compaction = compaction.Settings{Enabled: true, ReserveTokens: 1000, KeepRecentTokens: 50}
}

// bigReply is a 400-character answer whose usage says the prompt took prompt tokens.
func bigReply(prompt int) llmfake.Response {
	return llmfake.Stream(llmfake.Content(strings.Repeat("word ", 80)), llmfake.Finish("stop"), llmfake.Usage(prompt, 100, 0), llmfake.Done())
}

func summaryCount(h *harness) (n int) {
	for _, r := range h.llm.Requests() {
		if isSummaryRequest(r) {
			n++
		}
	}
	return n
}

func compactionEntries(h *harness) []transcript.Entry {
	var out []transcript.Entry
	for _, e := range h.store.all() {
		if e.Type == transcript.EntryCompaction {
			out = append(out, e)
		}
	}
	return out
}

func TestThresholdCompactionAfterARun(t *testing.T) {
	h := newHarness(t, withCompaction)
	var turn atomic.Int32
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			return llmfake.TextReply("## Goal\nthe summary text")
		}
		if turn.Add(1) == 2 {
			return bigReply(3500) // over 4000 − 1000
		}
		return bigReply(500)
	})
	h.prompt("first request " + strings.Repeat("x", 400))
	if n := count[agent.AutoCompactionStart](h.recorded()); n != 0 {
		t.Fatalf("compacted below the threshold")
	}
	h.prompt("second request")

	starts := find[agent.AutoCompactionStart](h.recorded())
	ends := find[agent.AutoCompactionEnd](h.recorded())
	if len(starts) != 1 || starts[0].Reason != agent.CompactionThreshold {
		t.Fatalf("compaction starts = %+v, want one threshold compaction", starts)
	}
	if starts[0].Tokens != 3600 || starts[0].ContextWindow != 4000 {
		t.Fatalf("compaction start = %+v, want the context's 3600 tokens of 4000", starts[0])
	}
	if len(ends) != 1 || ends[0].ErrorMessage != "" || ends[0].TokensBefore != 3600 || ends[0].TokensAfter >= ends[0].TokensBefore {
		t.Fatalf("compaction end = %+v, want before 3600 and fewer after", ends)
	}
	if !strings.Contains(ends[0].Summary, "the summary text") {
		t.Fatalf("summary %q", ends[0].Summary)
	}
	if ce := compactionEntries(h); len(ce) != 1 || ce[0].Compaction.Reason != "threshold" {
		t.Fatalf("compaction entries = %+v", ce)
	}
	if got := h.sess.ContextTokens(); got != ends[0].TokensAfter {
		t.Fatalf("context tokens after compaction = %d, want the estimate %d", got, ends[0].TokensAfter)
	}

	// The next request starts with the summary instead of the old history.
	h.prompt("third request")
	reqs := h.llm.Requests()
	last := reqs[len(reqs)-1]
	users := userTexts(last)
	if !strings.Contains(users[0], "compacted into the following summary") || !strings.Contains(users[0], "the summary text") {
		t.Fatalf("first user message after compaction = %q", users[0])
	}
	for _, u := range users {
		if strings.HasPrefix(u, "first request") {
			t.Fatal("compacted history still sent to the model")
		}
	}
	// The kept reply's usage (3600) predates the compaction: it must not trigger
	// another compaction before or after the third prompt.
	if n := count[agent.AutoCompactionStart](h.recorded()); n != 1 {
		t.Fatalf("compactions = %d, want 1 (stale usage must not count)", n)
	}
}

func TestThresholdCompactionThenQueuedInputIsDelivered(t *testing.T) {
	h := newHarness(t, withCompaction)
	var turn atomic.Int32
	g := holdSummaries(h, func(llmfake.Request) llmfake.Response {
		if turn.Add(1) == 1 {
			return bigReply(3500)
		}
		return llmfake.TextReply("follow-up answered")
	})
	h.start("big "+strings.Repeat("q", 400), agent.PromptOptions{})
	<-g.summarizing
	if out := h.start("after compaction", agent.PromptOptions{Behavior: agent.BehaviorFollowUp}); out != agent.Queued {
		t.Fatalf("outcome %v, want queued", out)
	}
	g.open()
	h.wait()
	msgs := find[agent.MessageEnd](h.recorded())
	if got := msgs[len(msgs)-1].Message.TextContent(); got != "follow-up answered" {
		t.Fatalf("last reply %q, want the follow-up's answer", got)
	}
}

func TestOverflowIsCompactedAndRetriedWithoutUserAction(t *testing.T) {
	h := newHarness(t, withCompaction)
	var chats atomic.Int32
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			return llmfake.TextReply("## Goal\nsummary")
		}
		switch chats.Add(1) {
		case 1:
			return bigReply(500)
		case 2:
			return llmfake.ContextOverflow()
		}
		return llmfake.TextReply("answer after compaction")
	})
	h.prompt("first " + strings.Repeat("y", 400))
	h.prompt("second")

	starts := find[agent.AutoCompactionStart](h.recorded())
	ends := find[agent.AutoCompactionEnd](h.recorded())
	if len(starts) != 1 || starts[0].Reason != agent.CompactionOverflow || len(ends) != 1 || !ends[0].WillRetry || ends[0].ErrorMessage != "" {
		t.Fatalf("compaction = %+v %+v, want one overflow compaction that retries", starts, ends)
	}
	if n := count[agent.AutoRetryStart](h.recorded()); n != 0 {
		t.Fatal("an overflow went through auto-retry")
	}
	msgs := find[agent.MessageEnd](h.recorded())
	if got := msgs[len(msgs)-1].Message.TextContent(); got != "answer after compaction" {
		t.Fatalf("last reply %q", got)
	}
	reqs := h.llm.Requests()
	users := userTexts(reqs[len(reqs)-1])
	if !strings.Contains(users[0], "summary") || users[len(users)-1] != "second" {
		t.Fatalf("retried request users = %q, want the summary first and the prompt last", users)
	}
}

func TestSecondOverflowInARowStops(t *testing.T) {
	h := newHarness(t, withCompaction)
	var chats atomic.Int32
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			return llmfake.TextReply("## Goal\nsummary")
		}
		if chats.Add(1) == 1 {
			return bigReply(500)
		}
		return llmfake.ContextOverflow()
	})
	h.prompt("first " + strings.Repeat("z", 400))
	h.prompt("second")
	ends := find[agent.AutoCompactionEnd](h.recorded())
	if len(ends) != 2 || ends[1].ErrorMessage == "" || !strings.Contains(ends[1].ErrorMessage, "still too long") {
		t.Fatalf("compaction ends = %+v, want a second one that gives up clearly", ends)
	}
	if n := summaryCount(h); n == 0 || chats.Load() != 3 {
		t.Fatalf("chat requests = %d (summaries %d), want 3 chats: ok, overflow, overflow", chats.Load(), n)
	}
}

func TestManualCompactionWithFocus(t *testing.T) {
	h := newHarness(t, withCompaction, func(c *agent.Config) { c.Compaction.Enabled = false })
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			return llmfake.TextReply("## Goal\nfocused summary")
		}
		return bigReply(300)
	})
	h.prompt("one " + strings.Repeat("a", 400))
	h.prompt("two " + strings.Repeat("b", 400))
	res, err := h.sess.Compact(context.Background(), "the database schema")
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if !strings.Contains(res.Summary, "focused summary") || res.TokensBefore == 0 {
		t.Fatalf("result = %+v", res)
	}
	var sawFocus bool
	for _, r := range h.llm.Requests() {
		if isSummaryRequest(r) && strings.Contains(r.LastMessage().Content, "the database schema") {
			sawFocus = true
		}
	}
	if !sawFocus {
		t.Fatal("the focus text did not reach the summarizer")
	}
	starts := find[agent.AutoCompactionStart](h.recorded())
	if len(starts) != 1 || starts[0].Reason != agent.CompactionManual {
		t.Fatalf("starts = %+v", starts)
	}
	if h.sess.IsRunning() {
		t.Fatal("session still held after Compact")
	}
}

func TestInputQueuedDuringCompactionIsDeliveredAfterwards(t *testing.T) {
	h := newHarness(t, withCompaction)
	g := holdSummaries(h, func(llmfake.Request) llmfake.Response { return bigReply(300) })
	h.prompt("one " + strings.Repeat("a", 400))
	done := make(chan error, 1)
	go func() {
		_, err := h.sess.Compact(context.Background(), "")
		done <- err
	}()
	select {
	case <-g.summarizing:
	case err := <-done:
		t.Fatalf("Compact returned before asking for a summary: %v", err)
	}
	queueWhileSummarizing(h, g, done, "queued meanwhile")
	if got := lastUser(h); got != "queued meanwhile" {
		t.Fatalf("last request's user message = %q, want the queued input", got)
	}
}

// Input queued while the context is compacted (a manual compaction, or one
// at the end of a run) opens the next run as a prompt: before_agent_start
// hooks run for it, so what they tell (the bridge's "who asks" header) is told
// again when the compaction summarised it away. Delivered as a plain
// continuation it reached the model without it.
func TestInputQueuedDuringCompactionOpensARunThroughTheHooks(t *testing.T) {
	for _, manual := range []bool{true, false} {
		name := map[bool]string{true: "manual", false: "threshold"}[manual]
		t.Run(name, func(t *testing.T) {
			var hooked []string
			var mu sync.Mutex
			h := newHarness(t, withCompaction, func(c *agent.Config) {
				c.Extensions = append(c.Extensions, agent.Extension{Name: "header",
					BeforeAgentStart: func(_ context.Context, ev agent.BeforeAgentStart) agent.BeforeAgentStartResult {
						mu.Lock()
						hooked = append(hooked, ev.Prompt)
						mu.Unlock()
						return agent.BeforeAgentStartResult{Preface: []llm.Message{{Content: []llm.Content{llm.Text("[header for " + ev.Prompt + "]")}}}}
					}})
			})
			var turn atomic.Int32
			g := holdSummaries(h, func(llmfake.Request) llmfake.Response {
				if turn.Add(1) == 1 && !manual {
					return bigReply(3500) // past the threshold: compacted at the run's end
				}
				return bigReply(300)
			})
			done := make(chan error, 1)
			if manual {
				h.prompt("one " + strings.Repeat("a", 400))
				go func() {
					_, err := h.sess.Compact(context.Background(), "")
					done <- err
				}()
			} else {
				h.start("one "+strings.Repeat("a", 400), agent.PromptOptions{})
				close(done)
			}
			<-g.summarizing
			queueWhileSummarizing(h, g, done, "queued meanwhile")
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"one " + strings.Repeat("a", 400), "queued meanwhile"}; !slices.Equal(hooked, want) {
				t.Errorf("hooks ran for %.40q, want both prompts", hooked)
			}
			u := userTexts(h.llm.Requests()[len(h.llm.Requests())-1])
			if n := len(u); n < 2 || u[n-2] != "[header for queued meanwhile]" || u[n-1] != "queued meanwhile" {
				t.Errorf("the last request's user messages end %.60q, want the hook's header before the queued input", u)
			}
		})
	}
}

func TestCompactionFailureChangesNothing(t *testing.T) {
	h := newHarness(t, withCompaction, func(c *agent.Config) { c.Retry.Enabled = false })
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			return llmfake.Stream(llmfake.Content("## Goal\nhal"), llmfake.Cut())
		}
		return bigReply(300)
	})
	h.prompt("one " + strings.Repeat("a", 400))
	before := h.sess.Messages()
	_, err := h.sess.Compact(context.Background(), "")
	if err == nil {
		t.Fatal("Compact succeeded on a cut stream")
	}
	ends := find[agent.AutoCompactionEnd](h.recorded())
	if len(ends) != 1 || ends[0].ErrorMessage == "" {
		t.Fatalf("ends = %+v, want the error reported", ends)
	}
	if len(compactionEntries(h)) != 0 || len(h.sess.Messages()) != len(before) {
		t.Fatal("a failed compaction changed the session")
	}
	h.prompt("still works")
	if got := lastUser(h); got != "still works" {
		t.Fatalf("session did not go on: %q", got)
	}
}

func TestNothingToCompact(t *testing.T) {
	h := newHarness(t, withCompaction)
	_, err := h.sess.Compact(context.Background(), "")
	if !errors.Is(err, compaction.ErrNothingToCompact) {
		t.Fatalf("Compact on an empty session = %v, want ErrNothingToCompact", err)
	}
	if !strings.Contains(err.Error(), "nothing to compact") {
		t.Fatalf("error %q", err)
	}
	if n := count[agent.AutoCompactionStart](h.recorded()) + count[agent.AutoCompactionEnd](h.recorded()); n != 0 {
		t.Fatalf("nothing to compact emitted %d compaction events; it is an answer, not a compaction", n)
	}
}

// A session resumed over the threshold compacts before it sends the next
// prompt (docs/agent.md §3 stage 5): the run that grew the context ended without
// a check (the process stopped), and the first request must not carry it.
func TestThresholdCompactionBeforeThePrompt(t *testing.T) {
	first := newHarness(t, func(c *agent.Config) { c.ContextWindow = 4000 })
	first.llm.Push(bigReply(3500)) // over 4000 − 1000, compaction off
	first.prompt("first request " + strings.Repeat("x", 400))
	if n := count[agent.AutoCompactionStart](first.recorded()); n != 0 {
		t.Fatalf("compacted with compaction off")
	}

	h := newHarness(t, withCompaction, func(c *agent.Config) { c.Entries = first.store.all() })
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			return llmfake.TextReply("## Goal\nthe summary text")
		}
		return bigReply(500)
	})
	h.prompt("second request")

	starts := find[agent.AutoCompactionStart](h.recorded())
	if len(starts) != 1 || starts[0].Reason != agent.CompactionThreshold {
		t.Fatalf("compaction starts = %+v, want one threshold compaction", starts)
	}
	reqs := h.llm.Requests()
	last := reqs[len(reqs)-1]
	if isSummaryRequest(last) {
		t.Fatal("the last request is the summary's: compacted after the prompt, not before")
	}
	users := userTexts(last)
	if len(users) == 0 || !strings.Contains(users[0], "the summary text") {
		t.Fatalf("the prompt's request opens with %q, want the summary", users)
	}
	for _, u := range users {
		if strings.HasPrefix(u, "first request") {
			t.Fatal("the compacted history was sent with the prompt")
		}
	}
}

// A run a before-model-call hook stopped (a budget) is not compacted after,
// even past the threshold: compacting is a model call the hook refused.
func TestNoCompactionAfterAHaltedRun(t *testing.T) {
	h := newHarness(t, withCompaction, withTools(&testTool{name: "work"}),
		withBeforeModelCall(func(context.Context) error { return errors.New("over budget") }))
	var turn atomic.Int32
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if isSummaryRequest(req) {
			return llmfake.TextReply("## Goal\nthe summary text")
		}
		if turn.Add(1) == 1 {
			return bigReply(500) // a first run: history to summarize
		}
		// Over 4000 − 1000: a run that ended here would compact.
		return llmfake.Stream(llmfake.ToolCalls(llmfake.Call{ID: "c1", Name: "work", Args: `{}`}),
			llmfake.Finish("tool_calls"), llmfake.Usage(3500, 10, 0), llmfake.Done())
	})
	h.prompt("first request " + strings.Repeat("x", 400)) // one call: the hook is not asked
	h.prompt("go")
	if n := count[agent.Halted](h.recorded()); n != 1 {
		t.Fatalf("halted events = %d, want 1: %v", n, eventNames(h.recorded()))
	}
	if n := count[agent.AutoCompactionStart](h.recorded()); n != 0 || summaryCount(h) != 0 {
		t.Fatalf("a halted run was compacted: %d compaction starts, %d summary requests", n, summaryCount(h))
	}
}
