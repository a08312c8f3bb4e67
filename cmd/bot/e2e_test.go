package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func isSummaryReq(r llmfake.Request) bool {
	return len(r.Messages) > 0 && r.Messages[0].Role == "system" && strings.HasPrefix(r.Messages[0].Content, "You write context checkpoints")
}

func lastUserText(r llmfake.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

func hasReaction(e *env, id, emoji string) bool {
	for _, r := range e.chat.Reactions(id) {
		if r == emoji {
			return true
		}
	}
	return false
}

func (e *env) waitReaction(id, emoji string) {
	e.t.Helper()
	if err := e.chat.WaitFor(e.ctx, func() bool { return hasReaction(e, id, emoji) }); err != nil {
		e.t.Fatalf("waiting for reaction %s on %s: %v (have %v)", emoji, id, err, e.chat.Reactions(id))
	}
}

// gate makes the fake LLM hold chat requests until opened.
type gate struct {
	arrived chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{arrived: make(chan struct{}, 16), open: make(chan struct{})} }

func (g *gate) hold() {
	g.arrived <- struct{}{}
	<-g.open
}

func (e *env) waitArrived(g *gate) {
	e.t.Helper()
	select {
	case <-g.arrived:
	case <-e.ctx.Done():
		e.t.Fatal("the LLM request never arrived")
	}
}

func TestFollowUpWhileBusyIsQueuedAcknowledgedAndDelivered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := newGate()
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
			return llmfake.TextReply("first answer")
		}
		return llmfake.TextReply("answer to: " + lastUserText(r))
	})
	th := thread("200.1")
	e.say(th, "first request", true)
	e.waitArrived(g)
	second := e.say(th, "and also this", false)
	e.waitReaction(second, "hourglass_flowing_sand")
	close(g.open)
	e.waitText(th, "answer to: and also this")
	e.waitReaction(second, "eyes")
	if hasReaction(e, second, "hourglass_flowing_sand") {
		t.Fatal("the queued reaction was not removed on delivery")
	}
	tr := e.chat.Transcript(th)
	if strings.Index(tr, "first answer") > strings.Index(tr, "answer to: and also this") {
		t.Fatalf("answers out of order:\n%s", tr)
	}
}

func TestSteerIsDeliveredInsideTheSameRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := newGate()
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		switch n.Add(1) {
		case 1:
			g.hold()
			return llmfake.ToolCallReply(
				llmfake.Call{ID: "c1", Name: "ls", Args: `{}`},
				llmfake.Call{ID: "c2", Name: "bash", Args: `{"command":"echo should-be-skipped"}`},
			)
		}
		return llmfake.TextReply("steered: " + lastUserText(r))
	})
	th := thread("300.1")
	e.say(th, "look around", true)
	e.waitArrived(g)
	steer := e.say(th, "!steer change course", false)
	e.waitReaction(steer, "arrow_right_hook")
	close(g.open)
	e.waitText(th, "steered: change course")
	e.waitReaction(steer, "eyes")
	reqs := e.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2 (one run: the steer joined it)", len(reqs))
	}
	var skipped bool
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" && m.ToolCallID == "c2" && strings.Contains(m.Content, "skipped") {
			skipped = true
		}
	}
	if !skipped {
		t.Fatal("the tool call after the steer was not skipped")
	}
}

func TestStopAbortsWithinASecondAndKeepsTheQueue(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	e := newEnv(t)
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			return llmfake.Stream(llmfake.Content("thinking about it"), llmfake.Hang())
		}
		return llmfake.TextReply("later: " + lastUserText(r))
	})
	th := thread("400.1")
	e.say(th, "do a long thing", true)
	if _, err := e.llm.WaitRequests(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.say(th, "queued behind it", false)
	start := time.Now()
	e.say(th, "!stop", false)
	e.waitText(th, "stopped")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("!stop answered after %s", d)
	}
	e.waitText(th, "queued behind it")
	if err := e.llm.WaitDisconnects(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The queued message is still there and goes with the next message.
	if n.Load() != 1 {
		t.Fatalf("the queue was delivered after !stop (%d requests)", n.Load())
	}
	e.say(th, "go on", false)
	e.waitText(th, "later: ")
}

func TestRetryNoticeAfterTwoRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.Agent.Retry.BaseDelay = 20 * time.Millisecond })
	e.llm.Push(
		llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached for requests"),
		llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached for requests"),
		llmfake.TextReply("made it"),
	)
	th := thread("500.1")
	e.say(th, "hello", true)
	e.waitText(th, "made it")
	e.waitText(th, "retry succeeded")
	// One notice, updated for the second attempt, then with the outcome.
	tr := e.chat.Transcript(th)
	if strings.Count(tr, "retrying in") != 1 || !strings.Contains(tr, "(attempt 2/3): ") {
		t.Fatalf("retry notices:\n%s", tr)
	}
}

func TestRetryGivesUpVisibly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) {
		c.Agent.Retry.BaseDelay = 10 * time.Millisecond
		c.Agent.Retry.MaxRetries = 2
	})
	e.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.HTTPError(503, "", "Service Unavailable") })
	th := thread("510.1")
	e.say(th, "hello", true)
	e.waitText(th, "gave up")
	e.waitText(th, "⏱")
}

func compactionConfig(c *config.Config) {
	c.LLM.ContextWindow = 4000
	c.LLM.MaxOutputTokens = 500
	c.Agent.Compaction.ReserveTokens = 1000
	c.Agent.Compaction.KeepRecentTokens = 50
}

func bigReply(prompt int) llmfake.Response {
	return llmfake.Stream(llmfake.Content(strings.Repeat("word ", 80)), llmfake.Finish("stop"), llmfake.Usage(prompt, 100, 0), llmfake.Done())
}

func TestCompactionNoticeAndSummaryInTheNextRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, compactionConfig)
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if isSummaryReq(r) {
			return llmfake.TextReply("## Goal\nTHE-SUMMARY")
		}
		if n.Add(1) == 2 {
			return bigReply(3500)
		}
		return bigReply(200)
	})
	th := thread("600.1")
	e.say(th, "first "+strings.Repeat("x", 300), true)
	e.waitText(th, "⏱")
	e.say(th, "second", false)
	e.waitText(th, "compacted context")
	tr := e.chat.Transcript(th)
	if !strings.Contains(tr, "(threshold)") || !strings.Contains(tr, "→") {
		t.Fatalf("compaction notice lacks the numbers or the reason:\n%s", tr)
	}
	e.say(th, "third", false)
	if err := e.chat.WaitFor(e.ctx, func() bool { return n.Load() >= 3 }); err != nil {
		t.Fatal(err)
	}
	var last llmfake.Request
	for _, r := range e.llm.Requests() {
		if !isSummaryReq(r) {
			last = r
		}
	}
	if !strings.Contains(last.Messages[1].Content, "THE-SUMMARY") {
		t.Fatalf("the request after compaction does not start with the summary: %q", last.Messages[1].Content)
	}
}

func TestOverflowIsRecoveredWithoutUserAction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, compactionConfig)
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if isSummaryReq(r) {
			return llmfake.TextReply("## Goal\nsummary")
		}
		switch n.Add(1) {
		case 1:
			return bigReply(300)
		case 2:
			return llmfake.ContextOverflow()
		}
		return llmfake.TextReply("recovered answer")
	})
	th := thread("700.1")
	e.say(th, "first "+strings.Repeat("y", 300), true)
	e.waitText(th, "⏱")
	e.say(th, "second", false)
	e.waitText(th, "recovered answer")
	tr := e.chat.Transcript(th)
	if !strings.Contains(tr, "context overflow") || !strings.Contains(tr, "retrying the request") {
		t.Fatalf("overflow notice:\n%s", tr)
	}
}

// An unknown repository is refused privately, as one the channel may not
// open is, naming the ones it may; nothing public is posted.
func TestUnknownRepoIsRefusedPrivately(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	th := thread("800.1")
	_, r, err := e.chat.Say(e.ctx, th, alice, "repo=nope fix it", true)
	if err != nil || r != chat.Refused {
		t.Fatalf("receipt %v, %v", r, err)
	}
	want := alice.ID + ": Sorry, `nope` can't be opened in this channel: a repository is kept to the channels mapped to it. Here you may use: app."
	if w := e.chat.Whispers(); len(w) != 1 || w[0] != want {
		t.Errorf("private notes = %q, want %q", w, want)
	}
	if tr := e.chat.Transcript(th); tr != "" {
		t.Errorf("the bot posted in the thread:\n%s", tr)
	}
}

func TestDuplicateDeliveryRunsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("once") })
	th := thread("900.1")
	id := e.say(th, "hi", true)
	for range 2 {
		r, err := e.chat.Redeliver(e.ctx, id, true)
		if err != nil || r != chat.Duplicate {
			t.Fatalf("redelivery: %v %v", r, err)
		}
	}
	e.waitText(th, "⏱")
	if n := len(e.llm.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1", n)
	}
}

func TestRestartContinuesTheThreadAndDeliversQueuedInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.ShutdownGrace = 2 * time.Second })
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		switch n.Add(1) {
		case 1:
			return llmfake.TextReply("nice to meet you, Ada")
		case 2:
			return llmfake.Stream(llmfake.Content("working"), llmfake.Hang())
		}
		return llmfake.TextReply("reply to: " + lastUserText(r))
	})
	th := thread("1000.1")
	e.say(th, "my name is Ada", true)
	e.waitText(th, "nice to meet you")
	e.say(th, "do something long", false)
	if _, err := e.llm.WaitRequests(e.ctx, 2); err != nil {
		t.Fatal(err)
	}
	queued := e.say(th, "queued across the restart", false)
	e.waitReaction(queued, "hourglass_flowing_sand")
	e.stop() // the grace period ends the long run
	e.waitText(th, "interrupted")

	e.start()
	e.waitText(th, "reply to: queued across the restart")
	reqs := e.llm.Requests()
	last := reqs[len(reqs)-1]
	joined := strings.Join(userTexts(last), "|")
	if !strings.HasPrefix(joined, "my name is Ada|") || strings.Count(joined, "my name is Ada") != 1 {
		t.Fatalf("context after restart = %q, want the earlier messages once", joined)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("chat requests = %d, want 3 (nothing re-run)", got)
	}
}

func TestManyThreadsAtOnceAllGetTheirAnswer(t *testing.T) {
	t.Parallel()
	const threads = 50
	e := newEnv(t, func(c *config.Config) { c.MaxConcurrentRuns = 8 })
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		return llmfake.TextReply("answer for ", lastUserText(r))
	})
	for i := range threads {
		e.say(chat.ThreadRef{Platform: "test", Team: "T1", Channel: "C" + itoa(i), Thread: "1.1"}, "thread "+itoa(i), true)
	}
	for i := range threads {
		th := chat.ThreadRef{Platform: "test", Team: "T1", Channel: "C" + itoa(i), Thread: "1.1"}
		e.waitText(th, "answer for thread "+itoa(i))
		e.waitText(th, "⏱")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestInvalidConfigNamesTheKeyAndExits2(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("llm:\n  context_window: 100\n  max_output_tokens: 8192\n  api_key: x\nslack:\n  enabled: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code := run([]string{"-config", path})
	if code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %s", d)
	}
	m := NewMain()
	m.ConfigPath = path
	err := m.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "llm.context_window") {
		t.Fatalf("Run = %v, want an error naming llm.context_window", err)
	}
}

func TestBusyModeSteerMakesPlainMessagesSteer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.Agent.BusyMode = config.BusySteer })
	g := newGate()
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		switch n.Add(1) {
		case 1:
			g.hold()
			return llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "ls", Args: `{}`})
		}
		return llmfake.TextReply("reply to: " + lastUserText(r))
	})
	th := thread("1100.1")
	e.say(th, "look around", true)
	e.waitArrived(g)
	plain := e.say(th, "actually, check the tests", false)
	e.waitReaction(plain, "arrow_right_hook")
	close(g.open)
	e.waitText(th, "reply to: actually, check the tests")
	e.waitReaction(plain, "eyes")
	// As a steer it reached the model right after the tool, in the second
	// request; as a followUp it would have waited for a third.
	if reqs := e.llm.Requests(); len(reqs) != 2 || lastUserText(reqs[1]) != "actually, check the tests" {
		t.Fatalf("requests = %d, last user text of the second %q", len(reqs), lastUserText(reqs[len(reqs)-1]))
	}
}
