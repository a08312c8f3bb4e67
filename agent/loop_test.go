package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func TestRunEventSequenceWithTwoToolCalls(t *testing.T) {
	forEachProvider(t, runEventSequenceWithTwoToolCalls)
}

func runEventSequenceWithTwoToolCalls(t *testing.T, p provider) {
	// The first tool waits until the second has finished, so the second finishes
	// first; results must still come in call order.
	secondDone := make(chan struct{})
	var order []string
	first := &testTool{name: "first", readOnly: true, run: func(ctx context.Context, _ map[string]any) (agent.ToolResult, error) {
		<-secondDone
		order = append(order, "first")
		return agent.TextResult("first result"), nil
	}}
	second := &testTool{name: "second", readOnly: true, run: func(ctx context.Context, _ map[string]any) (agent.ToolResult, error) {
		order = append(order, "second")
		close(secondDone)
		return agent.TextResult("second result"), nil
	}}
	h := p.new(t, withTools(first, second))
	h.fake.Push(
		callTools(llmfake.Call{ID: "c1", Name: "first", Args: `{"x":"a"}`}, llmfake.Call{ID: "c2", Name: "second", Args: `{"x":"b"}`}),
		say("all ", "done"),
	)
	h.prompt("do two things")

	equalStrings(t, "events", eventNames(h.recorded()), []string{
		"agent_start", "turn_start",
		"message_start(user:do two things)", "message_end(user:do two things)",
		"message_start(assistant)", "message_end(assistant:toolUse)",
		"tool_start(c1)", "tool_start(c2)",
		"tool_end(c1)", "message_start(result:c1)", "message_end(result:c1)",
		"tool_end(c2)", "message_start(result:c2)", "message_end(result:c2)",
		"turn_end", "turn_start",
		"message_start(assistant)", "message_end(assistant:stop)",
		"turn_end", "agent_end",
	})
	if strings.Join(order, ",") != "second,first" {
		t.Fatalf("tools finished in order %v, want second before first", order)
	}
	if n := count[agent.MessageUpdate](h.recorded()); n < 2 {
		t.Fatalf("message_update events = %d, want the streamed deltas", n)
	}
	reqs := h.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	equalStrings(t, "tool results sent", reqs[1].results, []string{"c1=first result", "c2=second result"})
	ends := find[agent.AgentEnd](h.recorded())
	if len(ends) != 1 || len(ends[0].Messages) != 5 {
		t.Fatalf("agent_end messages = %+v, want user, assistant, 2 results, assistant", ends)
	}
	// Every ended message was persisted, in order, with increasing Seq.
	stored := h.store.all()
	if len(stored) != 5 {
		t.Fatalf("stored %d entries, want 5", len(stored))
	}
	for i, e := range stored {
		if e.Seq != int64(i) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
}

func TestSteerDuringToolsSkipsCallsNotStarted(t *testing.T) {
	g := newGate()
	h := newHarness(t, withTools(g.tool("work", false)))
	h.llm.Push(
		llmfake.ToolCallReply(
			llmfake.Call{ID: "c1", Name: "work", Args: `{}`},
			llmfake.Call{ID: "c2", Name: "work", Args: `{}`},
			llmfake.Call{ID: "c3", Name: "work", Args: `{}`},
		),
		llmfake.TextReply("ok, changing course"),
	)
	if out := h.start("start working", agent.PromptOptions{}); out != agent.Started {
		t.Fatalf("outcome %v, want started", out)
	}
	g.waitStarted(t)
	if out := h.start("stop, do this instead", agent.PromptOptions{Behavior: agent.BehaviorSteer}); out != agent.Queued {
		t.Fatalf("steer outcome %v, want queued", out)
	}
	close(g.open)
	h.wait()

	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	equalStrings(t, "results", toolResults(reqs[1]), []string{
		"c1=work done",
		"c2=skipped: a newer user message arrived",
		"c3=skipped: a newer user message arrived",
	})
	users := userTexts(reqs[1])
	if users[len(users)-1] != "stop, do this instead" {
		t.Fatalf("last user message of request 2 = %q, want the steer", users[len(users)-1])
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" {
		t.Fatalf("steer must follow the tool results; last message role %q", last.Role)
	}
	// Skipped calls still get their start and end events, in order.
	names := strings.Join(eventNames(h.recorded()), " ")
	if !strings.Contains(names, "tool_start(c2) tool_end(c2)") || !strings.Contains(names, "tool_start(c3) tool_end(c3)") {
		t.Fatalf("skipped calls lack start/end events: %s", names)
	}
}

func TestFollowUpWaitsUntilTheModelStopsCallingTools(t *testing.T) {
	forEachProvider(t, followUpWaitsUntilTheModelStopsCallingTools)
}

func followUpWaitsUntilTheModelStopsCallingTools(t *testing.T, p provider) {
	g := newGate()
	h := p.new(t, withTools(g.tool("work", false)))
	h.fake.Push(
		callTools(llmfake.Call{ID: "c1", Name: "work", Args: `{}`}),
		callTools(llmfake.Call{ID: "c2", Name: "work", Args: `{}`}),
		say("finished"),
		say("answer to the follow-up"),
	)
	h.start("task", agent.PromptOptions{})
	g.waitStarted(t)
	h.start("and then this", agent.PromptOptions{Behavior: agent.BehaviorFollowUp})
	close(g.open)
	h.wait()

	reqs := h.fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("requests = %d, want 4", len(reqs))
	}
	for i := 0; i < 3; i++ {
		for _, u := range reqs[i].users {
			if u == "and then this" {
				t.Fatalf("request %d carries the follow-up before the model stopped calling tools", i+1)
			}
		}
	}
	users := reqs[3].users
	if users[len(users)-1] != "and then this" {
		t.Fatalf("request 4 users = %v, want the follow-up last", users)
	}
	if r := reqs[1].results; len(r) != 1 || r[0] != "c1=work done" {
		t.Fatalf("follow-up must not skip tools: %v", r)
	}
}

// queueOrderRun queues F1, F2 as followUp and S1 as steer while a tool runs and
// returns the user texts of each request after the first.
func queueOrderRun(t *testing.T, p provider, mode agent.QueueMode) [][]string {
	g := newGate()
	h := p.new(t, withTools(g.tool("work", false)), func(c *agent.Config) {
		c.SteerMode, c.FollowUpMode = mode, mode
	})
	h.fake.Handle(func(seq int) reply {
		if seq == 1 {
			return callTools(llmfake.Call{ID: "c1", Name: "work", Args: `{}`})
		}
		return say("reply")
	})
	h.start("go", agent.PromptOptions{})
	g.waitStarted(t)
	h.start("F1", agent.PromptOptions{Behavior: agent.BehaviorFollowUp})
	h.start("F2", agent.PromptOptions{Behavior: agent.BehaviorFollowUp})
	h.start("S1", agent.PromptOptions{Behavior: agent.BehaviorSteer})
	close(g.open)
	h.wait()
	var out [][]string
	reqs := h.fake.Requests()
	prev := 1 // "go"
	for _, r := range reqs[1:] {
		u := r.users
		out = append(out, u[prev:])
		prev = len(u)
	}
	return out
}

func TestQueueOrderSteerBeforeFollowUpsOneAtATime(t *testing.T) {
	forEachProvider(t, queueOrderSteerBeforeFollowUpsOneAtATime)
}

func queueOrderSteerBeforeFollowUpsOneAtATime(t *testing.T, p provider) {
	got := queueOrderRun(t, p, agent.OneAtATime)
	want := [][]string{{"S1"}, {"F1"}, {"F2"}}
	if len(got) != len(want) {
		t.Fatalf("new user messages per request = %v, want %v", got, want)
	}
	for i := range want {
		if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
			t.Fatalf("new user messages per request = %v, want %v", got, want)
		}
	}
}

func TestQueueOrderAllAtOnce(t *testing.T) { forEachProvider(t, queueOrderAllAtOnce) }

func queueOrderAllAtOnce(t *testing.T, p provider) {
	got := queueOrderRun(t, p, agent.AllAtOnce)
	want := [][]string{{"S1"}, {"F1", "F2"}}
	if len(got) != len(want) {
		t.Fatalf("new user messages per request = %v, want %v", got, want)
	}
	for i := range want {
		if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
			t.Fatalf("new user messages per request = %v, want %v", got, want)
		}
	}
}

func TestPromptWhileBusyWithoutBehaviorFails(t *testing.T) {
	forEachProvider(t, promptWhileBusyWithoutBehaviorFails)
}

func promptWhileBusyWithoutBehaviorFails(t *testing.T, p provider) {
	g := newGate()
	h := p.new(t, withTools(g.tool("work", false)))
	h.fake.Push(callTools(llmfake.Call{ID: "c1", Name: "work", Args: `{}`}), say("done"))
	h.start("go", agent.PromptOptions{})
	g.waitStarted(t)
	_, err := h.sess.Start(context.Background(), "hello?", agent.PromptOptions{})
	if !errors.Is(err, agent.ErrBusy) {
		t.Fatalf("Start while busy = %v, want ErrBusy", err)
	}
	if !strings.Contains(err.Error(), "specify steer or followUp") {
		t.Fatalf("error %q must say what to do", err)
	}
	close(g.open)
	h.wait()
	if s, f := h.sess.Queued(); len(s)+len(f) != 0 {
		t.Fatalf("refused input was queued: %v %v", s, f)
	}
}

func TestAbortKeepsBothQueuesForTheNextRun(t *testing.T) {
	forEachProvider(t, abortKeepsBothQueuesForTheNextRun)
}

func abortKeepsBothQueuesForTheNextRun(t *testing.T, p provider) {
	g := newGate()
	h := p.new(t, withTools(g.tool("work", false)))
	h.fake.Handle(func(seq int) reply {
		if seq == 1 {
			return callTools(llmfake.Call{ID: "c1", Name: "work", Args: `{}`})
		}
		return say("reply")
	})
	h.start("go", agent.PromptOptions{})
	g.waitStarted(t)
	h.start("steer me", agent.PromptOptions{Behavior: agent.BehaviorSteer})
	h.start("follow me", agent.PromptOptions{Behavior: agent.BehaviorFollowUp})
	h.sess.Abort()
	h.wait()

	steer, follow := h.sess.Queued()
	if len(steer) != 1 || len(follow) != 1 {
		t.Fatalf("queues after abort: steer %d followUp %d, want 1 and 1", len(steer), len(follow))
	}
	if n := len(h.fake.Requests()); n != 1 {
		t.Fatalf("requests after abort = %d, want 1 (nothing sent after the abort)", n)
	}
	// The aborted tool got an error result, so the transcript stays valid.
	res := find[agent.ToolExecutionEnd](h.recorded())
	if len(res) != 1 || !res[0].Result.IsError {
		t.Fatalf("aborted tool result = %+v, want one error result", res)
	}

	// The next run delivers them right after its prompt: steer, then followUp.
	h.prompt("next")
	reqs := h.fake.Requests()
	got := reqs[1].users
	if strings.Join(got, "|") != "go|next|steer me|follow me" {
		t.Fatalf("request after abort users = %v, want go|next|steer me|follow me", got)
	}
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2 (one model call answers all three)", len(reqs))
	}
	if s, f := h.sess.Queued(); len(s)+len(f) != 0 {
		t.Fatalf("queues not drained: %v %v", s, f)
	}
}

func TestInputQueuedWhileIdleFollowsTheNextPrompt(t *testing.T) {
	forEachProvider(t, inputQueuedWhileIdleFollowsTheNextPrompt)
}

func inputQueuedWhileIdleFollowsTheNextPrompt(t *testing.T, p provider) {
	h := p.new(t)
	h.fake.Handle(func(int) reply { return say("ok") })
	h.sess.FollowUp(llm.UserText("followUp while idle"))
	h.sess.Steer(llm.UserText("steer while idle"))
	h.prompt("the prompt")
	reqs := h.fake.Requests()
	if got := reqs[0].users; strings.Join(got, "|") != "the prompt|steer while idle|followUp while idle" {
		t.Fatalf("first request users = %v, want the prompt, then steer, then followUp", got)
	}
}

func TestAbortDuringStreamingKeepsPartialReply(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(llmfake.Stream(llmfake.Content("partial "), llmfake.Hang()))
	h.start("talk", agent.PromptOptions{})
	// Wait until the partial text reached us, then abort.
	h.waitEvents(func(evs []agent.Event) bool { return count[agent.MessageUpdate](evs) > 0 })
	h.sess.Abort()
	h.wait()
	ends := find[agent.MessageEnd](h.recorded())
	last := ends[len(ends)-1].Message
	if last.StopReason != llm.StopReasonAborted || last.TextContent() != "partial " {
		t.Fatalf("final message = %q stop %q, want the partial text, aborted", last.TextContent(), last.StopReason)
	}
	if err := h.llm.WaitDisconnects(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}

func TestTransportErrorBecomesAnAssistantMessage(t *testing.T) {
	h := newHarness(t, func(c *agent.Config) { c.Retry.Enabled = false })
	h.llm.Push(llmfake.HTTPError(401, "invalid_api_key", "Incorrect API key provided"))
	h.prompt("hi")
	equalStrings(t, "events", eventNames(h.recorded()), []string{
		"agent_start", "turn_start",
		"message_start(user:hi)", "message_end(user:hi)",
		"message_start(assistant)", "message_end(assistant:error)",
		"turn_end", "agent_end",
	})
	end := find[agent.MessageEnd](h.recorded())[1].Message
	if end.ErrorInfo == nil || end.ErrorInfo.StatusCode != 401 || end.ErrorMessage == "" {
		t.Fatalf("error message = %+v, want status 401 and a message", end)
	}
}

func TestToolCallMistakesBecomeErrorResults(t *testing.T) {
	forEachProvider(t, toolCallMistakesBecomeErrorResults)
}

func toolCallMistakesBecomeErrorResults(t *testing.T, p provider) {
	strict := &testTool{name: "strict", schema: `{"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer"}},"required":["path"]}`,
		run: func(_ context.Context, args map[string]any) (agent.ToolResult, error) {
			return agent.TextResult(fmt.Sprintf("strict ran with %v", args["path"])), nil
		}}
	h := p.new(t, withTools(strict))
	h.fake.Push(
		callTools(
			llmfake.Call{ID: "c1", Name: "nosuch", Args: `{}`},
			llmfake.Call{ID: "c2", Name: "strict", Args: `{"n":"x"}`},
			llmfake.Call{ID: "c3", Name: "strict", Args: `{"path": "a", oops`},
			llmfake.Call{ID: "c4", Name: "strict", Args: `{"path":"a","n":2}`},
		),
		say("sorry"),
	)
	h.prompt("call tools badly")
	res := h.fake.Requests()[1].results
	want := []string{
		"c1=tool nosuch not found",
		`c2=invalid arguments: missing required property "path"; n must be integer, got string`,
		"c3=invalid arguments: not a JSON object",
		"c4=strict ran with a",
	}
	if len(res) != len(want) {
		t.Fatalf("results = %v", res)
	}
	for i := range want {
		if !strings.HasPrefix(res[i], want[i]) {
			t.Fatalf("result %d = %q, want prefix %q", i, res[i], want[i])
		}
	}
}

func TestToolPanicAndErrorAreReportedToTheModel(t *testing.T) {
	forEachProvider(t, toolPanicAndErrorAreReportedToTheModel)
}

func toolPanicAndErrorAreReportedToTheModel(t *testing.T, p provider) {
	boom := &testTool{name: "boom", run: func(context.Context, map[string]any) (agent.ToolResult, error) { panic("kaboom") }}
	broken := &testTool{name: "broken", run: func(context.Context, map[string]any) (agent.ToolResult, error) {
		return agent.ToolResult{}, errors.New("disk on fire")
	}}
	h := p.new(t, withTools(boom, broken))
	h.fake.Push(
		callTools(llmfake.Call{ID: "c1", Name: "boom", Args: `{}`}, llmfake.Call{ID: "c2", Name: "broken", Args: `{}`}),
		say("noted"),
	)
	h.prompt("go")
	res := h.fake.Requests()[1].results
	if len(res) != 2 || res[0] != "c1=tool boom failed unexpectedly" || res[1] != "c2=disk on fire" {
		t.Fatalf("results = %v", res)
	}
}

func TestEndpointDownEndsTheRunWithAnError(t *testing.T) {
	h := newHarness(t, func(c *agent.Config) { c.Retry.MaxRetries = 1 })
	h.llm.Close() // connection refused from now on
	h.prompt("anyone there?")
	ends := find[agent.MessageEnd](h.recorded())
	last := ends[len(ends)-1].Message
	if last.StopReason != llm.StopReasonError || last.ErrorInfo == nil || last.ErrorInfo.Kind != llm.ErrorNetwork {
		t.Fatalf("last message = %+v, want a network error", last)
	}
	retry := find[agent.AutoRetryEnd](h.recorded())
	if len(retry) != 1 || retry[0].Success {
		t.Fatalf("retry end = %+v, want one failure after the retry", retry)
	}
}

func TestSetToolsChangesWhatTheNextCallOffers(t *testing.T) {
	forEachProvider(t, setToolsChangesWhatTheNextCallOffers)
}

func setToolsChangesWhatTheNextCallOffers(t *testing.T, p provider) {
	old := &testTool{name: "old", run: func(context.Context, map[string]any) (agent.ToolResult, error) {
		return agent.TextResult("old ran"), nil
	}}
	fresh := &testTool{name: "fresh", run: func(context.Context, map[string]any) (agent.ToolResult, error) {
		return agent.TextResult("fresh ran"), nil
	}}
	h := p.new(t, withTools(old))
	h.fake.Push(say("first"))
	h.prompt("one")
	h.sess.SetTools([]agent.Tool{fresh})
	if got := h.sess.Tools(); len(got) != 1 || got[0].Spec().Name != "fresh" {
		t.Fatalf("Tools() = %v, want [fresh]", got)
	}
	h.fake.Push(
		callTools(llmfake.Call{ID: "c1", Name: "fresh", Args: `{}`}, llmfake.Call{ID: "c2", Name: "old", Args: `{}`}),
		say("second"),
	)
	h.prompt("two")
	reqs := h.fake.Requests()
	equalStrings(t, "tools of the first call", reqs[0].tools, []string{"old"})
	equalStrings(t, "tools of the second call", reqs[1].tools, []string{"fresh"})
	equalStrings(t, "results", reqs[2].results, []string{"c1=fresh ran", "c2=tool old not found"})
}

// A steer the run already took off the queue, while a parallel
// tool still ran, is not lost when the abort lands before the next turn: the
// aborted run keeps it, and the next run delivers it.
func TestAbortAfterSteerWasTakenKeepsTheSteer(t *testing.T) {
	forEachProvider(t, abortAfterSteerWasTakenKeepsTheSteer)
}

func abortAfterSteerWasTakenKeepsTheSteer(t *testing.T, p provider) {
	var h *harness
	taken := make(chan struct{})
	queued := false
	first := &testTool{name: "first", readOnly: true, run: func(context.Context, map[string]any) (agent.ToolResult, error) {
		if out := h.start("steer me", agent.PromptOptions{Behavior: agent.BehaviorSteer}); out != agent.Queued {
			t.Errorf("steer outcome %v, want queued", out)
		}
		return agent.TextResult("first done"), nil
	}}
	second := &testTool{name: "second", readOnly: true, run: func(context.Context, map[string]any) (agent.ToolResult, error) {
		<-taken // the run has dequeued the steer after the first tool
		h.sess.Abort()
		return agent.TextResult("second done"), nil
	}}
	h = p.new(t, withTools(first, second))
	h.sess.Subscribe(func(ev agent.Event) {
		qu, ok := ev.(agent.QueueUpdate)
		switch {
		case !ok:
		case len(qu.Steer) > 0:
			queued = true
		case queued:
			queued = false
			close(taken)
		}
	})
	h.fake.Handle(func(seq int) reply {
		if seq == 1 {
			return callTools(llmfake.Call{ID: "c1", Name: "first", Args: `{}`}, llmfake.Call{ID: "c2", Name: "second", Args: `{}`})
		}
		return say("reply")
	})
	h.start("go", agent.PromptOptions{})
	h.wait()

	if steer, _ := h.sess.Queued(); len(steer) != 1 {
		t.Fatalf("steer queue after the abort has %d messages, want the taken steer back", len(steer))
	}
	h.prompt("next")
	reqs := h.fake.Requests()
	if got := reqs[len(reqs)-1].users; strings.Join(got, "|") != "go|next|steer me" {
		t.Fatalf("users of the next request = %v, want go|next|steer me", got)
	}
}

// Input given with Join joins the active run and never starts one: on an
// idle session it fails with ErrIdle, before any hook sees it, and nothing
// runs; while a run goes on it is queued as its Behavior says.
func TestJoinOnlyJoinsARun(t *testing.T) {
	g := newGate()
	var hooked []string // the input the hook saw; Start calls it on this goroutine
	h := newHarness(t, withTools(g.tool("work", false)), func(c *agent.Config) {
		c.Extensions = []agent.Extension{{Name: "seen", Input: func(_ context.Context, in agent.Input) agent.InputResult {
			hooked = append(hooked, in.Text)
			return agent.InputResult{}
		}}}
	})
	h.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "work", Args: `{}`}),
		llmfake.TextReply("done"),
	)
	out, err := h.sess.Start(context.Background(), "join me", agent.PromptOptions{Behavior: agent.BehaviorFollowUp, Join: true})
	if !errors.Is(err, agent.ErrIdle) || h.sess.IsRunning() || len(h.llm.Requests()) != 0 || len(hooked) != 0 {
		t.Fatalf("Join on an idle session: outcome %v, err %v, running %v, requests %d, hooks saw %q; want ErrIdle and nothing run or hooked", out, err, h.sess.IsRunning(), len(h.llm.Requests()), hooked)
	}
	h.start("task", agent.PromptOptions{})
	g.waitStarted(t)
	if out := h.start("and this", agent.PromptOptions{Behavior: agent.BehaviorFollowUp, Join: true}); out != agent.Queued {
		t.Fatalf("Join during a run: outcome %v, want queued", out)
	}
	close(g.open)
	h.wait()
	if _, err := h.sess.Start(context.Background(), "late", agent.PromptOptions{Behavior: agent.BehaviorFollowUp, Join: true}); !errors.Is(err, agent.ErrIdle) {
		t.Fatalf("Join after the run: err %v, want ErrIdle", err)
	}
	if want := []string{"task", "and this"}; !slices.Equal(hooked, want) {
		t.Errorf("the input hooks saw %q, want %q: refused input is not hooked", hooked, want)
	}
}

// Input given with Join whose run ends while its input hooks run is
// refused with an *IdleError that holds what the hooks made of it: given
// again with SkipExpansion it starts the next run, and the hooks saw it once.
func TestJoinRefusedAfterTheHooksKeepsTheirWork(t *testing.T) {
	g := newGate()
	var hooked []string
	var h *harness
	h = newHarness(t, withTools(g.tool("work", false)), func(c *agent.Config) {
		c.Extensions = []agent.Extension{{Name: "review", Input: func(_ context.Context, in agent.Input) agent.InputResult {
			hooked = append(hooked, in.Text)
			if in.Text != "!review" {
				return agent.InputResult{}
			}
			// The run settles while the hook reads the forge.
			close(g.open)
			h.wait()
			return agent.InputResult{Action: agent.InputTransform, Text: "the review comments"}
		}}}
	})
	h.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "work", Args: `{}`}),
		llmfake.TextReply("done"),
		llmfake.TextReply("addressed"),
	)
	h.start("task", agent.PromptOptions{})
	g.waitStarted(t)
	_, err := h.sess.Start(context.Background(), "!review", agent.PromptOptions{Behavior: agent.BehaviorFollowUp, Join: true})
	var idle *agent.IdleError
	if !errors.Is(err, agent.ErrIdle) || !errors.As(err, &idle) || idle.Text != "the review comments" {
		t.Fatalf("Join as the run ended during the hooks: err %v, want an *IdleError with the hooks' text", err)
	}
	if out := h.start(idle.Text, agent.PromptOptions{SkipExpansion: true, Images: idle.Images}); out != agent.Started {
		t.Fatalf("the refused input given again: %v, want started", out)
	}
	h.wait()
	reqs := h.llm.Requests()
	if last := reqs[len(reqs)-1].Messages; last[len(last)-1].Content != "the review comments" {
		t.Errorf("the next run's request ends with %+v, want the hooks' text", last[len(last)-1])
	}
	if want := []string{"task", "!review"}; !slices.Equal(hooked, want) {
		t.Errorf("the input hooks saw %q, want %q: each input once", hooked, want)
	}
}
