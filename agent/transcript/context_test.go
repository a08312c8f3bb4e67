package transcript

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

func user(s string) llm.Message { return llm.UserText(s) }

func reply(s string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(s)}, StopReason: llm.StopReasonStop}
}

func calls(ids ...string) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonToolUse}
	for _, id := range ids {
		m.Content = append(m.Content, llm.ToolCall(id, "bash", json.RawMessage(`{}`)))
	}
	return m
}

func result(id string) llm.Message {
	return llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "bash", Content: []llm.Content{llm.Text("ok")}}
}

func describe(msgs []llm.Message) string {
	var parts []string
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleToolResult:
			parts = append(parts, "result:"+m.ToolCallID+map[bool]string{true: "!", false: ""}[m.IsError])
		case llm.RoleCompactionSummary:
			parts = append(parts, "summary:"+m.Summary)
		case llm.RoleAssistant:
			if len(m.ToolCalls()) > 0 {
				parts = append(parts, "calls")
			} else {
				parts = append(parts, "reply:"+m.TextContent())
			}
		default:
			parts = append(parts, string(m.Role)+":"+m.TextContent())
		}
	}
	return strings.Join(parts, " ")
}

func TestBuildContextFromTheLatestCompaction(t *testing.T) {
	entries := []Entry{
		MessageEntry(0, user("old question")),
		MessageEntry(1, reply("old answer")),
		{Seq: 2, Type: EntryModelChange, ModelChange: &ModelChange{Model: "big"}},
		MessageEntry(3, user("kept question")),
		MessageEntry(4, reply("kept answer")),
		{Seq: 5, Type: EntryCompaction, Compaction: &Compaction{Summary: "S1", FirstKeptSeq: 3, TokensBefore: 900}},
		MessageEntry(6, user("new question")),
		MessageEntry(7, llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError, ErrorMessage: "boom"}),
		MessageEntry(8, reply("new answer")),
		{Seq: 9, Type: EntryCustom, Custom: &Custom{Kind: "note"}},
		{Seq: 10, Type: "future_kind", Raw: json.RawMessage(`{"x":1}`)},
	}
	ctx := BuildContext(entries)
	if got, want := describe(ctx.Messages), "summary:S1 user:kept question reply:kept answer user:new question reply:new answer"; got != want {
		t.Fatalf("context = %s\nwant      %s", got, want)
	}
	if ctx.Model != "big" || ctx.NextSeq != 11 || ctx.Compaction == nil || ctx.Compaction.Summary != "S1" {
		t.Fatalf("model %q, next seq %d, compaction %+v", ctx.Model, ctx.NextSeq, ctx.Compaction)
	}
	if ctx.Messages[0].TokensBefore != 900 {
		t.Fatalf("summary tokens before = %d", ctx.Messages[0].TokensBefore)
	}
}

func TestBuildContextGivesUnfinishedToolCallsAnInterruptedResult(t *testing.T) {
	entries := []Entry{
		MessageEntry(0, user("run two things")),
		MessageEntry(1, calls("a", "b")),
		MessageEntry(2, result("a")),
	}
	ctx := BuildContext(entries)
	if got, want := describe(ctx.Messages), "user:run two things calls result:a result:b!"; got != want {
		t.Fatalf("context = %s, want %s", got, want)
	}
	if !strings.HasPrefix(ctx.Messages[3].TextContent(), "interrupted") {
		t.Fatalf("synthetic result = %q", ctx.Messages[3].TextContent())
	}
}

func TestRepairToolResults(t *testing.T) {
	tests := []struct {
		name string
		in   []llm.Message
		want string
	}{
		{"valid is untouched", []llm.Message{user("q"), calls("a"), result("a"), reply("done")}, "user:q calls result:a reply:done"},
		{"missing result before the next user message", []llm.Message{calls("a"), user("stop")}, "calls result:a! user:stop"},
		{"orphan result dropped", []llm.Message{user("q"), result("x"), reply("r")}, "user:q reply:r"},
		{"results out of order keep their order", []llm.Message{calls("a", "b"), result("b"), result("a")}, "calls result:b result:a"},
		{"a second call list closes the first", []llm.Message{calls("a"), calls("b"), result("b")}, "calls result:a! calls result:b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]llm.Message(nil), tt.in...)
			got := RepairToolResults(in)
			if d := describe(got); d != tt.want {
				t.Fatalf("RepairToolResults = %s, want %s", d, tt.want)
			}
			if describe(in) != describe(tt.in) {
				t.Fatal("the input was modified")
			}
		})
	}
}

// toolResultsValid, which copies nothing, agrees with the rule it checks
// (every call answered once, in its own turn, by a result naming it) on
// every sequence of up to five messages drawn from calls (one, two, and two
// with the same id), results, replies and user messages.
func TestToolResultsValidAgreesWithTheRule(t *testing.T) {
	pool := []llm.Message{calls("a"), calls("a", "b"), calls("a", "a"), result("a"), result("b"), reply("r"), user("u")}
	valid := func(msgs []llm.Message) bool {
		var pending []string
		for _, m := range msgs {
			switch m.Role {
			case llm.RoleToolResult:
				i := -1
				for j, id := range pending {
					if id == m.ToolCallID {
						i = j
						break
					}
				}
				if i < 0 {
					return false
				}
				pending = append(pending[:i:i], pending[i+1:]...)
			default:
				if len(pending) > 0 {
					return false
				}
				for _, c := range m.ToolCalls() {
					pending = append(pending, c.ID)
				}
			}
		}
		return len(pending) == 0
	}
	var walk func(msgs []llm.Message)
	checked := 0
	walk = func(msgs []llm.Message) {
		checked++
		if got, want := toolResultsValid(msgs), valid(msgs); got != want {
			t.Fatalf("toolResultsValid(%s) = %v, want %v", describe(msgs), got, want)
		}
		if len(msgs) == 5 {
			return
		}
		for _, m := range pool {
			walk(append(msgs[:len(msgs):len(msgs)], m))
		}
	}
	walk(nil)
	if checked < 19_000 {
		t.Fatalf("checked %d sequences", checked)
	}
}
