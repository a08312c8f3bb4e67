package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/outbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// newFakeClock is the test's manual clock.
func newFakeClock() *clock.Manual {
	return clock.NewManual(time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC))
}

// viewRig drives a view the way a thread does (status posted, arm, session
// events, endRun) and carries out what it returns against an outbox on the
// in-process chat platform, answers posted without storing them.
type viewRig struct {
	t     testing.TB
	chat  *chatfake.Adapter
	out   *outbox.Outbox
	ref   chat.ThreadRef
	v     *view
	clock *clock.Manual
	price Price // the thread's model's
	// What the view returned besides its operations.
	delivered []string
	rerenders []viewResult
}

const rigRepoLine = "`app` · `bot/test-C1-100.1`"

func newViewRig(t testing.TB, limit int) *viewRig {
	return newViewRigWith(t, limit, outbox.Config{})
}

// newViewRigWith is newViewRig with the outbox's config (budgets).
func newViewRigWith(t testing.TB, limit int, cfg outbox.Config) *viewRig {
	return newViewRigThrough(t, limit, cfg, func(c *chatfake.Adapter) chat.Adapter { return c })
}

// newViewRigThrough is newViewRigWith whose outbox posts through wrap(the
// in-process platform): one that refuses some calls, say.
func newViewRigThrough(t testing.TB, limit int, cfg outbox.Config, wrap func(*chatfake.Adapter) chat.Adapter) *viewRig {
	t.Helper()
	c := chatfake.New("test", limit)
	out := outbox.New(wrap(c), cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := out.Close(ctx); err != nil {
			t.Errorf("closing the outbox: %v", err)
		}
	})
	r := &viewRig{t: t, chat: c, out: out, ref: chat.ThreadRef{Platform: "test", Team: "T1", Channel: "C1", Thread: "100.1"}, clock: newFakeClock()}
	r.v = newView(limit, nil, r.clock.Now, nil)
	return r
}

// apply carries out what the view returned.
func (r *viewRig) apply(res viewResult) viewResult {
	r.delivered = append(r.delivered, res.delivered...)
	if res.rerender != 0 {
		r.rerenders = append(r.rerenders, res)
	}
	applyOps(r.out, r.ref, res.ops, func(a viewAnswer) { postAnswerPlain(r.out, r.ref, a) }, nil)
	return res
}

// start posts the status message as the thread does, arms the view and plays
// the run's opening events.
func (r *viewRig) start(request string) {
	header := workingHeaderPrefix + " · " + rigRepoLine
	status := r.out.Post(r.ref, header, outbox.High, nil)
	r.v.arm(rigRepoLine, status, header)
	r.play(agent.AgentStart{}, agent.TurnStart{}, agent.MessageStart{Message: llm.UserText(request)}, agent.MessageEnd{Message: llm.UserText(request)})
}

func (r *viewRig) play(evs ...agent.Event) {
	for _, ev := range evs {
		r.apply(r.v.handle(ev, r.price))
	}
}

// end closes the run as finishRunWith does: footer from the run's stats, then
// endRun.
func (r *viewRig) end(contextTokens, window int, priced bool) {
	st := r.v.stats()
	r.apply(r.v.endRun(footer(st, r.clock.Now(), contextTokens, window, priced), ""))
}

// messages waits for the outbox and returns the thread's messages.
func (r *viewRig) messages() []chatfake.Msg {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.out.Flush(ctx); err != nil {
		r.t.Fatalf("flushing the outbox: %v", err)
	}
	return r.chat.Messages(r.ref)
}

func render(msgs []chatfake.Msg) string {
	var b strings.Builder
	for i, m := range msgs {
		fmt.Fprintf(&b, "=== message %d\n%s\n", i+1, m.Text)
	}
	return b.String()
}

// golden compares the thread's messages with testdata/<name>.golden.
func (r *viewRig) golden(name string) []chatfake.Msg {
	r.t.Helper()
	msgs := r.messages()
	got := render(msgs)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatalf("reading %s (run with -update to create it): %v", path, err)
	}
	if got != string(want) {
		r.t.Errorf("thread differs from %s\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
	for i, m := range msgs {
		if n := utf8.RuneCountInString(m.Text); n > r.v.limit {
			r.t.Errorf("message %d has %d characters, over the limit %d", i+1, n, r.v.limit)
		}
	}
	return msgs
}

// Event builders.

func usage(in, out int) *llm.Usage { return &llm.Usage{Input: in, Output: out} }

func call(id, name, args string) llm.Content {
	return llm.ToolCall(id, name, json.RawMessage(args))
}

// reply streams an assistant message: start, one update per text chunk (the
// clock moves 100 ms each), end.
func (r *viewRig) reply(final llm.Message, chunks ...string) {
	final.Role = llm.RoleAssistant
	r.play(agent.TurnStart{}, agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}})
	for _, c := range chunks {
		r.clock.Advance(100 * time.Millisecond)
		r.play(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: c}})
	}
	r.play(agent.MessageEnd{Message: final})
}

func textReply(text string, u *llm.Usage) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(text)}, StopReason: llm.StopReasonStop, Usage: u}
}

func toolReply(narration string, u *llm.Usage, calls ...llm.Content) llm.Message {
	var content []llm.Content
	if narration != "" {
		content = append(content, llm.Text(narration))
	}
	return llm.Message{Role: llm.RoleAssistant, Content: append(content, calls...), StopReason: llm.StopReasonToolUse, Usage: u}
}

func errorReply(e *llm.Error) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError, ErrorMessage: e.Error(), ErrorInfo: e, Usage: &llm.Usage{}}
}

// tool plays one tool call's start and end.
func (r *viewRig) tool(c llm.Content, d time.Duration, failed bool) {
	r.play(agent.ToolExecutionStart{ToolCallID: c.ID, ToolName: c.Name, Args: c.Arguments})
	r.clock.Advance(d)
	res := agent.TextResult("ok")
	if failed {
		res = agent.ErrorResult("exit status 1")
	}
	r.play(agent.ToolExecutionEnd{ToolCallID: c.ID, ToolName: c.Name, Args: c.Arguments, Result: res, Duration: d})
	r.play(agent.MessageStart{Message: llm.Message{Role: llm.RoleToolResult, ToolCallID: c.ID}}, agent.MessageEnd{Message: llm.Message{Role: llm.RoleToolResult, ToolCallID: c.ID}})
}

func TestViewGoldenToolCallsAndAnswer(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("fix the failing test")
	read := call("c1", "read", `{"path":"parser/parser.go"}`)
	bash := call("c2", "bash", `{"command":"go test ./parser/..."}`)
	r.reply(toolReply("", usage(1200, 40), read, bash))
	r.tool(read, 12*time.Millisecond, false)
	r.tool(bash, 2300*time.Millisecond, true)
	r.reply(textReply("The test fails because `Parse` drops the last token.\n\nI fixed the loop bound in `parser.go`.", usage(1800, 60)),
		"The test fails because ", "`Parse` drops the last token.\n\n", "I fixed the loop bound in `parser.go`.")
	r.play(agent.AgentEnd{})
	r.clock.Advance(time.Second)
	r.end(1860, 128000, false)
	msgs := r.golden("tool_calls_and_answer")
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2 (status, answer)", len(msgs))
	}
	if strings.Contains(msgs[0].Text, "working…") {
		t.Errorf("the status message still says it is working after the run:\n%s", msgs[0].Text)
	}
}

func TestViewGoldenNarrationBetweenToolCalls(t *testing.T) {
	r := newViewRig(t, 2000)
	r.price = Price{Input: 2, Output: 8}
	r.start("add a health endpoint")
	ls := call("c1", "ls", `{"path":"internal/http"}`)
	r.reply(toolReply("Let me look at how the routes are registered first.", usage(900, 20), ls), "Let me look at how ", "the routes are registered first.")
	r.tool(ls, 5*time.Millisecond, false)
	edit := call("c2", "edit", `{"path":"internal/http/routes.go","oldText":"a","newText":"b"}`)
	r.reply(toolReply("Routes live in `routes.go`; adding `/healthz` there.", usage(1100, 30), edit))
	r.tool(edit, 3*time.Millisecond, false)
	r.reply(textReply("Added `GET /healthz` returning 200.", usage(1300, 15)), "Added `GET /healthz` returning 200.")
	r.clock.Advance(500 * time.Millisecond)
	r.end(1315, 128000, true)
	msgs := r.golden("narration_between_tool_calls")
	// 3,300 tokens in at $2/M and 65 out at $8/M.
	if !strings.HasSuffix(msgs[len(msgs)-1].Text, "$0.0071_") {
		t.Errorf("footer lacks the run's cost: %q", msgs[len(msgs)-1].Text)
	}
	status := msgs[0].Text
	if strings.Index(status, "Let me look at") > strings.Index(status, "`ls`") || strings.Index(status, "`ls`") > strings.Index(status, "Routes live in") {
		t.Errorf("narration and tool lines are out of order in the status:\n%s", status)
	}
}

func TestViewGoldenRetrySucceeds(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("hello")
	rl := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "rate_limit_exceeded", Message: "Rate limit reached for requests"}
	r.reply(errorReply(rl))
	r.play(agent.AgentEnd{}, agent.AutoRetryStart{Attempt: 1, MaxAttempts: 3, Delay: 2 * time.Second, ErrorMessage: rl.Error()})
	r.clock.Advance(2 * time.Second)
	r.play(agent.AgentStart{})
	// Streamed in one piece: a preview below a notice is
	// TestViewNoStalePreviewBelowANotice's case.
	r.reply(textReply("Hi! What can I do for you?", usage(30, 8)))
	r.play(agent.AutoRetryEnd{Success: true, Attempt: 1}, agent.AgentEnd{})
	r.end(38, 128000, false)
	msgs := r.golden("retry_succeeds")
	tr := render(msgs)
	if !strings.Contains(tr, "retrying in 2s (attempt 1/3)") || !strings.Contains(tr, "retry succeeded") {
		t.Errorf("retry notice wording:\n%s", tr)
	}
}

func TestViewGoldenRetryGivesUp(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("hello")
	unavailable := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 503, Message: "Service Unavailable"}
	r.reply(errorReply(unavailable))
	r.play(agent.AgentEnd{}, agent.AutoRetryStart{Attempt: 1, MaxAttempts: 2, Delay: 2 * time.Second, ErrorMessage: unavailable.Error()})
	r.play(agent.AgentStart{})
	r.reply(errorReply(unavailable))
	r.play(agent.AgentEnd{}, agent.AutoRetryStart{Attempt: 2, MaxAttempts: 2, Delay: 4 * time.Second, ErrorMessage: unavailable.Error()})
	r.play(agent.AgentStart{})
	r.reply(errorReply(unavailable))
	r.play(agent.AgentEnd{}, agent.AutoRetryEnd{Success: false, Attempt: 2, FinalError: unavailable.Error()})
	r.end(0, 128000, false)
	msgs := r.golden("retry_gives_up")
	tr := render(msgs)
	if !strings.Contains(tr, "gave up after 2 retries: 503: Service Unavailable") {
		t.Errorf("no \"gave up\" notice:\n%s", tr)
	}
	if !strings.HasPrefix(msgs[len(msgs)-1].Text, "_⏱") && !strings.Contains(msgs[len(msgs)-1].Text, "\n_⏱") {
		t.Errorf("the run's last message does not end with the footer:\n%s", msgs[len(msgs)-1].Text)
	}
}

func TestViewGoldenCompactionThreshold(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("summarize the module")
	r.reply(textReply("The module parses config files.", usage(3500, 12)), "The module parses config files.")
	r.play(agent.AgentEnd{}, agent.AutoCompactionStart{Reason: agent.CompactionThreshold})
	r.play(agent.AutoCompactionEnd{Reason: agent.CompactionThreshold, TokensBefore: 3512, TokensAfter: 840, Summary: "## Goal"})
	r.end(840, 4000, false)
	tr := render(r.golden("compaction_threshold"))
	if !strings.Contains(tr, "compacted context: 3.5k → 840 tokens (threshold)") {
		t.Errorf("compaction notice lacks the token counts or the reason:\n%s", tr)
	}
}

// TestViewGoldenCompactionOverflow: the provider refuses the prompt as too
// long, the session compacts and retries on its own; the thread sees the
// compaction notice and the answer, not a failure.
func TestViewGoldenCompactionOverflow(t *testing.T) {

	r := newViewRig(t, 2000)
	r.start("second question")
	overflow := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 400, Code: "context_length_exceeded", ContextOverflow: true,
		Message: "This model's maximum context length is 8192 tokens."}
	r.reply(errorReply(overflow))
	r.play(agent.AgentEnd{}, agent.AutoCompactionStart{Reason: agent.CompactionOverflow})
	r.play(agent.AutoCompactionEnd{Reason: agent.CompactionOverflow, TokensBefore: 9120, TokensAfter: 1200, Summary: "## Goal", WillRetry: true})
	r.play(agent.AgentStart{})
	r.reply(textReply("Here is the answer.", usage(1300, 5)))
	r.play(agent.AgentEnd{})
	r.end(1305, 8192, false)
	tr := render(r.golden("compaction_overflow"))
	if strings.Contains(tr, "request failed") {
		t.Errorf("a recovered overflow is shown as a failure:\n%s", tr)
	}
	if !strings.Contains(tr, "(context overflow); retrying the request") {
		t.Errorf("overflow notice:\n%s", tr)
	}
}

func TestViewGoldenCompactionFails(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("go on")
	r.reply(textReply("Done.", usage(3500, 2)), "Done.")
	r.play(agent.AgentEnd{}, agent.AutoCompactionStart{Reason: agent.CompactionThreshold})
	r.play(agent.AutoCompactionEnd{Reason: agent.CompactionThreshold, ErrorMessage: "summarize: 500 server_error: The server had an error"})
	r.end(3502, 4000, false)
	tr := render(r.golden("compaction_fails"))
	if !strings.Contains(tr, "compacting context failed (threshold): summarize: 500") {
		t.Errorf("failed compaction notice:\n%s", tr)
	}
}

// TestViewCompactionStartNoticeHasNoBogusCounts: while the summary is being
// written (seconds) the thread shows the start notice; it must not claim "0 of
// 0 tokens".
func TestViewCompactionStartNoticeHasNoBogusCounts(t *testing.T) {

	r := newViewRig(t, 2000)
	r.start("go on")
	r.reply(textReply("Done.", usage(3500, 2)), "Done.")
	r.play(agent.AgentEnd{}, agent.AutoCompactionStart{Reason: agent.CompactionThreshold})
	tr := render(r.messages())
	if !strings.Contains(tr, "compacting") {
		t.Fatalf("no compaction notice while compacting:\n%s", tr)
	}
	if strings.Contains(tr, "0 of 0") {
		t.Errorf("the compaction notice shows made-up token counts:\n%s", tr)
	}
}

func TestViewGoldenAbortedStream(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("write a long essay")
	partial := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("Once upon a time, there was a")},
		StopReason: llm.StopReasonAborted, ErrorMessage: "context canceled"}
	r.reply(partial, "Once upon ", "a time, ", "there was a")
	r.play(agent.AgentEnd{})
	r.end(20, 128000, false)
	msgs := r.golden("aborted_stream")
	last := msgs[len(msgs)-1].Text
	if !strings.Contains(last, "there was a") || !strings.Contains(last, "stopped") {
		t.Errorf("the partial reply and its stop mark are not shown:\n%s", last)
	}
}

func TestViewGoldenLongAnswerWithCodeBlock(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("show me the generated table")
	var b strings.Builder
	b.WriteString("Here is the generated lookup table:\n\n```go\nvar table = []entry{\n")
	for i := 0; b.Len() < 4600; i++ {
		fmt.Fprintf(&b, "\t{key: %4d, value: \"value-%04d\", weight: %d},\n", i, i*7, i%13)
	}
	b.WriteString("}\n```\n\nEach entry maps a key to its value and weight.")
	for b.Len() < 5000 {
		b.WriteString(" More notes.")
	}
	answer := b.String()
	if n := utf8.RuneCountInString(answer); n < 5000 || n > 5100 {
		t.Fatalf("answer has %d characters, want about 5,000", n)
	}
	r.reply(textReply(answer, usage(400, 1500)), answer[:100], answer[100:])
	r.end(1900, 128000, false)
	msgs := r.golden("long_answer_code_block")
	answers := msgs[1:]
	if len(answers) < 3 {
		t.Fatalf("a 5,000-character answer at 2,000 came as %d messages, want at least 3", len(answers))
	}
	var joined []string
	for i, m := range answers {
		if n := strings.Count(m.Text, "```"); n%2 != 0 {
			t.Errorf("answer message %d leaves a code fence open (%d fences):\n%s", i+1, n, m.Text)
		}
		joined = append(joined, m.Text)
	}
	if all := strings.Join(joined, "\n"); !strings.Contains(all, "value-0000") || !strings.Contains(all, "More notes.") {
		t.Error("the answer lost its start or end when split")
	}
	if !strings.Contains(answers[len(answers)-1].Text, "_⏱") {
		t.Errorf("the footer is not in the last message:\n%s", answers[len(answers)-1].Text)
	}
}

func TestViewGoldenFollowUpDeliveredMidRun(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("rename Foo to Bar")
	grep := call("c1", "grep", `{"pattern":"Foo"}`)
	r.reply(toolReply("", usage(500, 10), grep))
	r.tool(grep, 40*time.Millisecond, false)
	r.reply(textReply("Renamed `Foo` to `Bar` in 3 files.", usage(700, 12)), "Renamed `Foo` to `Bar` in 3 files.")
	// The queued follow-up is delivered within the same run.
	follow := llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("also update the docs")}, InputID: "42"}
	r.play(agent.TurnStart{}, agent.MessageStart{Message: follow}, agent.MessageEnd{Message: follow})
	edit := call("c2", "edit", `{"path":"README.md"}`)
	r.reply(toolReply("", usage(800, 10), edit))
	r.tool(edit, 8*time.Millisecond, false)
	r.reply(textReply("Docs updated too.", usage(900, 5)), "Docs updated too.")
	r.play(agent.AgentEnd{})
	r.end(905, 128000, false)
	msgs := r.golden("followup_mid_run")
	if len(r.delivered) != 1 || r.delivered[0] != "42" {
		t.Errorf("delivered = %v, want [42] (the follow-up's acknowledgement must change)", r.delivered)
	}
	// status 1, first answer, status 2 (below the follow-up), second answer.
	if len(msgs) != 4 {
		t.Fatalf("got %d messages, want 4:\n%s", len(msgs), render(msgs))
	}
	if !strings.Contains(msgs[0].Text, "`grep`") || strings.Contains(msgs[0].Text, "`edit`") {
		t.Errorf("first status message = %q, want only the first part's tool line", msgs[0].Text)
	}
	if !strings.Contains(msgs[1].Text, "Renamed") || !strings.Contains(msgs[2].Text, "`edit`") || !strings.Contains(msgs[3].Text, "Docs updated") {
		t.Errorf("the status does not continue below the delivered follow-up:\n%s", render(msgs))
	}
}

// TestViewStatusStreamsThePreview: while a reply streams, the status message
// shows it (edited in place), and stops showing it once the reply is done.
func TestViewStatusStreamsThePreview(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("explain")
	r.play(agent.TurnStart{}, agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}})
	r.clock.Advance(time.Second)
	r.play(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: "The parser reads "}})
	r.clock.Advance(time.Second)
	r.play(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: "tokens one by one"}})
	msgs := r.messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "The parser reads tokens one by one") || !strings.Contains(msgs[0].Text, "working…") {
		t.Fatalf("status while streaming = %q, want the working line and the preview", render(msgs))
	}
	r.play(agent.MessageEnd{Message: textReply("The parser reads tokens one by one.", usage(10, 10))})
	r.end(20, 1000, false)
	msgs = r.messages()
	if strings.Contains(msgs[0].Text, "tokens one by one") {
		t.Errorf("the finished answer is still in the status message: %q", msgs[0].Text)
	}
	if len(msgs) != 2 || !strings.Contains(msgs[1].Text, "The parser reads tokens one by one.") {
		t.Errorf("the answer was not posted as its own message:\n%s", render(msgs))
	}
}

// TestViewStreamShowsWhatCameBeforeAPause: text that arrives too soon after
// the last render is still shown once the throttle interval has passed, even
// when no further delta comes (a model thinking, a slow provider).
func TestViewStreamShowsWhatCameBeforeAPause(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("explain")
	r.play(agent.TurnStart{}, agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}})
	r.play(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: "The parser "}})
	r.play(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: "reads tokens"}})
	if len(r.rerenders) != 1 {
		t.Fatalf("%d trailing renders asked for two quick deltas, want 1", len(r.rerenders))
	}
	if d := r.rerenders[0].rerenderIn; d <= 0 || d > streamRenderEvery {
		t.Errorf("trailing render asked in %v, want within (0, %v]", d, streamRenderEvery)
	}
	r.clock.Advance(streamRenderEvery)
	r.apply(r.v.tick(r.rerenders[0].rerender))
	msgs := r.messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "The parser reads tokens") {
		t.Fatalf("status after the pause = %q, want the preview of both deltas", render(msgs))
	}
}

// TestViewStreamingIsThrottled: deltas arriving faster than streamRenderEvery
// do not each become an edit request.
func TestViewStreamingIsThrottled(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("explain")
	r.play(agent.TurnStart{}, agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}})
	before := r.out.Stats().EditsRequested
	for range 100 {
		r.clock.Advance(10 * time.Millisecond) // 1 s in all
		r.play(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: "x"}})
	}
	got := r.out.Stats().EditsRequested - before
	if want := int64(time.Second/streamRenderEvery) + 1; got > want || got < 2 {
		t.Errorf("100 deltas over 1 s requested %d edits, want between 2 and %d", got, want)
	}
}

// TestViewNoStalePreviewBelowANotice: after a notice (or a delivered
// follow-up) the status continues in a new message; a reply streamed there
// must not leave its partial preview behind once the answer is posted.
func TestViewNoStalePreviewBelowANotice(t *testing.T) {

	for _, tc := range []struct {
		name      string
		interrupt func(r *viewRig)
	}{
		{"retry notice", func(r *viewRig) {
			e := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow down"}
			r.reply(errorReply(e))
			r.play(agent.AgentEnd{}, agent.AutoRetryStart{Attempt: 1, MaxAttempts: 3, Delay: time.Second, ErrorMessage: e.Error()})
			r.clock.Advance(time.Second)
			r.play(agent.AgentStart{})
		}},
		{"delivered follow-up", func(r *viewRig) {
			r.reply(textReply("First answer.", usage(10, 2)), "First answer.")
			f := llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("and then?")}, InputID: "7"}
			r.play(agent.MessageStart{Message: f}, agent.MessageEnd{Message: f})
			r.clock.Advance(time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newViewRig(t, 2000)
			r.start("hello")
			tc.interrupt(r)
			r.reply(textReply("Hi! What can I do for you?", usage(30, 8)), "Hi! ", "What can I ", "do for you?")
			r.play(agent.AgentEnd{})
			r.end(38, 128000, false)
			for i, m := range r.messages() {
				if strings.Contains(m.Text, "Hi! ") && !strings.Contains(m.Text, "Hi! What can I do for you?") {
					t.Errorf("message %d is a stale preview of the answer: %q", i+1, m.Text)
				}
				if strings.HasPrefix(m.Text, "\n") {
					t.Errorf("message %d starts with blank lines: %q", i+1, m.Text)
				}
			}
		})
	}
}

// While a retry waits (its notice below the status), the status still says
// the run is working; only the run's end gives it its ✓.
func TestViewStatusSaysWorkingWhileARetryWaits(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("hello")
	rl := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 503, Message: "overloaded"}
	r.reply(errorReply(rl))
	r.play(agent.AgentEnd{}, agent.AutoRetryStart{Attempt: 1, MaxAttempts: 3, Delay: 2 * time.Second, ErrorMessage: rl.Error()})
	msgs := r.messages()
	if len(msgs) < 2 || !strings.HasPrefix(msgs[0].Text, workingHeaderPrefix) {
		t.Fatalf("while the retry waits, the status is:\n%s", render(msgs))
	}
	r.clock.Advance(2 * time.Second)
	r.play(agent.AgentStart{})
	r.reply(textReply("done", usage(3, 1)))
	r.play(agent.AutoRetryEnd{Success: true, Attempt: 1}, agent.AgentEnd{})
	r.end(4, 128000, false)
	msgs = r.messages()
	if strings.Contains(msgs[0].Text, "working") || !strings.HasPrefix(msgs[0].Text, "✓ ") {
		t.Fatalf("after the run, the status is:\n%s", render(msgs))
	}
}

// An overflow that compaction could not fix says what to do about it.
func TestViewOverflowThatStaysSaysWhatToDo(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("hello")
	r.reply(errorReply(&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 400, Code: "context_length_exceeded", Message: "This model's maximum context length is 8192 tokens"}))
	r.play(agent.AgentEnd{})
	r.end(9000, 8192, false)
	tr := render(r.messages())
	if !strings.Contains(tr, "no longer fits the model's context window") || !strings.Contains(tr, "`!reset`") || !strings.Contains(tr, "maximum context length") {
		t.Fatalf("the thread shows:\n%s", tr)
	}
}

// refusingEdits is the in-process platform refusing every edit for good, as
// Slack refuses a chat.update over 4,000 characters (msg_too_long).
type refusingEdits struct{ *chatfake.Adapter }

func (refusingEdits) Edit(context.Context, chat.ThreadRef, string, string) error {
	return errors.New("msg_too_long")
}

// A status message whose edits the platform refuses does not stay "working…"
// for good: its final text is posted as a new message, while the refused
// previews are only dropped.
func TestViewStatusNeverStaysWorkingWhenEditsAreRefused(t *testing.T) {
	r := newViewRigThrough(t, 2000, outbox.Config{}, func(c *chatfake.Adapter) chat.Adapter { return refusingEdits{c} })
	r.start("fix it")
	r.messages() // the status is posted before anything edits it
	r.reply(textReply("Fixed the loop bound.", usage(100, 10)), "Fixed the ", "loop bound.")
	r.play(agent.AgentEnd{})
	r.clock.Advance(time.Second)
	r.end(110, 128000, false)

	msgs := r.messages()
	var last string
	for _, m := range msgs {
		if strings.Contains(m.Text, rigRepoLine) {
			last = m.Text
		}
	}
	if strings.Contains(last, "working…") || strings.Contains(last, "Fixed the") {
		t.Errorf("the status's last form in the thread is\n%s\nwant it sealed (no working line, no preview):\n%s", last, render(msgs))
	}
	for _, m := range msgs {
		if m.Edits != 0 {
			t.Errorf("message %q was edited, though the platform refuses edits", m.Text)
		}
	}
}
