package bridge

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/outbox"
)

// These tests read what the view returns, with no outbox: the operations in
// their order and what the thread must act on.

// armedView is a view whose run is armed with a status message the thread
// posted, started, and given the storage id runID.
func armedView(t *testing.T, limit int, runID int64) (*view, *outbox.Message) {
	t.Helper()
	v := newView(limit, nil, newFakeClock().Now, nil)
	status := &outbox.Message{}
	v.arm(rigRepoLine, status, workingHeaderPrefix+" · "+rigRepoLine)
	v.setRunID(runID)
	for _, ev := range []agent.Event{agent.AgentStart{}, agent.MessageStart{Message: llm.UserText("go")}} {
		v.handle(ev, Price{})
	}
	return v, status
}

func replyEvents(v *view, m llm.Message) viewResult {
	m.Role = llm.RoleAssistant
	v.handle(agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}}, Price{})
	return v.handle(agent.MessageEnd{Message: m}, Price{})
}

func opsOf(res viewResult, kind viewOpKind) []viewOp {
	var ops []viewOp
	for _, op := range res.ops {
		if op.kind == kind {
			ops = append(ops, op)
		}
	}
	return ops
}

// An answer held back when a notice comes is returned before the notice's
// post, so that the thread stores and posts it first: the answer reads above
// the notice.
func TestViewAnswerIsReturnedBeforeTheNoticeBelowIt(t *testing.T) {
	v, _ := armedView(t, 2000, 7)
	replyEvents(v, textReply("The module parses config files.", usage(3500, 12)))
	v.handle(agent.AgentEnd{}, Price{})
	res := v.handle(agent.AutoCompactionStart{Reason: agent.CompactionThreshold}, Price{})
	answer, notice := -1, -1
	for i, op := range res.ops {
		switch {
		case op.kind == opAnswer:
			answer = i
			if op.answer.runID != 7 || !slices.Equal(op.answer.chunks, []string{"The module parses config files."}) || op.answer.notify != "" {
				t.Errorf("answer = %+v, want run 7's text, mentioning nobody", op.answer)
			}
		case op.kind == opPost && strings.Contains(op.text, "compacting"):
			notice = i
		}
	}
	if answer < 0 || notice < 0 || answer > notice {
		t.Fatalf("answer at %d, notice at %d in %+v: want the answer first", answer, notice, res.ops)
	}
}

// The closing answer carries its run's id and the person to notify, split
// with room for the mention; the status message it closes gets its final
// text and loses Stop in the same call, before it.
func TestViewClosingAnswerCarriesRunAndMention(t *testing.T) {
	const limit = 100
	v, status := armedView(t, limit, 42)
	text := strings.Repeat("word ", 30)
	replyEvents(v, textReply(text, usage(10, 10)))
	res := v.endRun("_⏱ 1s_", "U0ALICE")
	answers := opsOf(res, opAnswer)
	if len(answers) != 1 {
		t.Fatalf("%d answers returned, want 1: %+v", len(answers), res.ops)
	}
	a := answers[0].answer
	if a.runID != 42 || a.notify != "U0ALICE" || len(a.chunks) < 2 {
		t.Fatalf("answer = %+v, want run 42's, notifying U0ALICE, in several chunks", a)
	}
	for i, c := range a.chunks {
		if n := utf8.RuneCountInString(c); n > limit-mentionRoom {
			t.Errorf("chunk %d has %d characters, over %d (the limit less the mention's room)", i, n, limit-mentionRoom)
		}
	}
	if all := strings.Join(a.chunks, " "); !strings.Contains(all, "word word") || !strings.HasSuffix(all, "_⏱ 1s_") {
		t.Errorf("chunks %q lost the answer or the footer", a.chunks)
	}
	last := res.ops[len(res.ops)-1]
	if last.kind != opAnswer {
		t.Errorf("the answer is not the last operation: %+v", res.ops)
	}
	var final, stop bool
	for _, op := range res.ops {
		if op.msg == nil || op.msg.m != status {
			continue
		}
		final = final || op.kind == opEditFinal && op.save && op.text == "✓ "+rigRepoLine
		stop = stop || op.kind == opSetActions && len(op.actions) == 0
	}
	if !final || !stop {
		t.Errorf("the status message's final text saved: %v, its buttons taken off: %v, in %+v", final, stop, res.ops)
	}
}

// Notices are not the run's status: only the status messages' texts go to
// the saver.
func TestViewSavesOnlyStatusTexts(t *testing.T) {
	v, status := armedView(t, 2000, 1)
	var ops []viewOp
	add := func(res viewResult) { ops = append(ops, res.ops...) }
	add(v.handle(agent.ToolExecutionStart{ToolCallID: "c1", ToolName: "ls", Args: []byte(`{}`)}, Price{}))
	rl := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 503, Message: "overloaded"}
	add(replyEvents(v, errorReply(rl)))
	add(v.handle(agent.AutoRetryStart{Attempt: 1, MaxAttempts: 2, ErrorMessage: rl.Error()}, Price{}))
	add(v.handle(agent.AutoRetryEnd{Success: true, Attempt: 1}, Price{}))
	add(v.endRun("_⏱ 1s_", ""))
	savedStatus := false
	for _, op := range ops {
		notice := strings.Contains(op.text, "retry")
		if op.save && notice {
			t.Errorf("a notice's text is saved: %+v", op)
		}
		if !op.save && !notice && (op.kind == opEdit || op.kind == opEditFinal || op.kind == opPost) {
			t.Errorf("a status text is not saved: %+v", op)
		}
		savedStatus = savedStatus || op.save && op.msg.m == status
	}
	if !savedStatus {
		t.Errorf("the armed status message's text was never saved: %+v", ops)
	}
}

// A render asked for streamed text is dropped when the reply ends first: the
// next reply asks for its own, and the stale one does not render it.
func TestViewTrailingRenderIsDroppedOnceTheReplyEnded(t *testing.T) {
	v, _ := armedView(t, 2000, 1)
	v.handle(agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}}, Price{})
	first := v.handle(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: "a"}}, Price{})
	if first.rerender == 0 {
		t.Fatal("no render asked for text that came too soon after the last one")
	}
	v.handle(agent.MessageEnd{Message: toolReply("a", usage(1, 1), call("c1", "ls", `{}`))}, Price{})
	v.handle(agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}}, Price{})
	second := v.handle(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: "b"}}, Price{})
	if second.rerender == 0 || second.rerender == first.rerender {
		t.Fatalf("the next reply's render = %d, want a new one (the first was %d)", second.rerender, first.rerender)
	}
	if res := v.tick(first.rerender); len(res.ops) != 0 {
		t.Errorf("a stale render renders the next reply: %+v", res.ops)
	}
	if res := v.tick(second.rerender); len(opsOf(res, opEdit)) != 1 {
		t.Errorf("the render asked renders %+v, want one edit", res.ops)
	}
}
