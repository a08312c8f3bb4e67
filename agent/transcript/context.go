package transcript

import (
	"slices"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// InterruptedToolResult is the text of the synthetic result given to a tool call
// whose result was never recorded (the process stopped while the tool ran).
const InterruptedToolResult = "interrupted: the tool did not finish (the bot stopped while it ran)"

// Context is what a session resumes from.
type Context struct {
	// Messages is the live context: the latest compaction summary (if any), then
	// every message from that compaction's first kept entry on.
	Messages []llm.Message
	// Model is the model of the latest model_change entry, "" when there is none.
	Model string
	// ThinkingLevel is the latest thinking level, "" when there is none.
	ThinkingLevel string
	// Compaction is the latest compaction, nil when there is none.
	Compaction *Compaction
	// NextSeq is the Seq the next appended entry must take.
	NextSeq int64
}

// BuildContext rebuilds the live context from a session's entries (in Seq order).
// Assistant messages that failed (StopReasonError) are left out: they were retried
// or reported, and carry nothing the model needs. Tool calls without a recorded
// result get a synthetic error result so that providers accept the history.
func BuildContext(entries []Entry) Context {
	var ctx Context
	last := -1
	for i, e := range entries {
		switch e.Type {
		case EntryCompaction:
			if e.Compaction != nil {
				last = i
			}
		case EntryModelChange:
			if e.ModelChange != nil {
				ctx.Model = e.ModelChange.Model
			}
		case EntryThinkingLevel:
			ctx.ThinkingLevel = e.ThinkingLevel
		}
		if e.Seq >= ctx.NextSeq {
			ctx.NextSeq = e.Seq + 1
		}
	}
	var firstKept int64 = -1 << 62
	n := 0 // the summary and the messages kept: one allocation
	if last >= 0 {
		firstKept, n = entries[last].Compaction.FirstKeptSeq, 1
	}
	for _, e := range entries {
		if e.Type == EntryMessage && e.Seq >= firstKept {
			n++
		}
	}
	if n > 0 {
		ctx.Messages = make([]llm.Message, 0, n)
	}
	if last >= 0 {
		c := entries[last].Compaction
		ctx.Compaction = c
		ctx.Messages = append(ctx.Messages, SummaryMessage(c.Summary, c.TokensBefore, entries[last].Timestamp))
	}
	for _, e := range entries {
		if e.Type != EntryMessage || e.Message == nil || e.Seq < firstKept {
			continue
		}
		m := *e.Message
		if m.Role == llm.RoleAssistant && m.StopReason == llm.StopReasonError {
			continue
		}
		ctx.Messages = append(ctx.Messages, m)
	}
	ctx.Messages = RepairToolResults(ctx.Messages)
	return ctx
}

// SummaryMessage returns the message that stands in for compacted history.
func SummaryMessage(summary string, tokensBefore int, ts int64) llm.Message {
	return llm.Message{Role: llm.RoleCompactionSummary, Summary: summary, TokensBefore: tokensBefore, Timestamp: ts}
}

// RepairToolResults makes a message list valid for providers: every tool call of a
// kept assistant message is followed by exactly one result (a synthetic
// InterruptedToolResult where none was recorded), and results whose call is not in
// the list are dropped. The input is not modified; when nothing needs repair the
// same slice is returned.
func RepairToolResults(msgs []llm.Message) []llm.Message {
	if toolResultsValid(msgs) {
		return msgs
	}
	out := make([]llm.Message, 0, len(msgs)+2)
	var pending []llm.Content // calls of the latest assistant message still without result
	flush := func() {
		for _, c := range pending {
			out = append(out, llm.Message{
				Role: llm.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, IsError: true,
				Content: []llm.Content{llm.Text(InterruptedToolResult)},
			})
		}
		pending = nil
	}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleToolResult:
			i := indexOfCall(pending, m.ToolCallID)
			if i < 0 {
				continue // orphaned result: its call is not in the context
			}
			pending = append(pending[:i:i], pending[i+1:]...)
			out = append(out, m)
			continue
		case llm.RoleAssistant:
			flush()
			out = append(out, m)
			pending = m.ToolCalls()
			continue
		}
		flush()
		out = append(out, m)
	}
	flush()
	return out
}

// toolResultsValid reports whether RepairToolResults has nothing to do. It
// runs on every context rebuilt, so it copies no blocks: it marks which of
// the latest assistant message's calls have their result.
func toolResultsValid(msgs []llm.Message) bool {
	var (
		blocks  []llm.Content // the latest assistant message's
		matched []bool        // per block: its call has its result
		pending int           // calls still without a result
	)
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleToolResult:
			i := unmatchedCall(blocks, matched, m.ToolCallID)
			if i < 0 {
				return false
			}
			matched[i] = true
			pending--
		case llm.RoleAssistant:
			if pending > 0 {
				return false
			}
			blocks = m.Content
			matched = slices.Grow(matched[:0], len(blocks))[:len(blocks)]
			clear(matched)
			for _, c := range blocks {
				if c.Type == llm.ContentToolCall {
					pending++
				}
			}
		default:
			if pending > 0 {
				return false
			}
		}
	}
	return pending == 0
}

// unmatchedCall is the index of the first tool call in blocks with the id
// whose result has not been seen, -1 when there is none.
func unmatchedCall(blocks []llm.Content, matched []bool, id string) int {
	for i, c := range blocks {
		if c.Type == llm.ContentToolCall && c.ID == id && !matched[i] {
			return i
		}
	}
	return -1
}

func indexOfCall(calls []llm.Content, id string) int {
	for i, c := range calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}
