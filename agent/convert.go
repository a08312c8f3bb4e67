package agent

import (
	"encoding/json"
	"strings"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// summaryPreamble introduces a compaction summary to the model.
const summaryPreamble = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"

// ProviderMessages converts a live context into what a model request may carry:
// only user, assistant and toolResult messages. Custom messages, compaction
// summaries and bash executions become user messages; assistant replies that
// failed or were aborted are left out (they may hold half a tool call); tool
// calls without results get synthetic ones and results without calls are dropped.
func ProviderMessages(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser, llm.RoleToolResult:
			out = append(out, m)
		case llm.RoleAssistant:
			if m.StopReason == llm.StopReasonError || m.StopReason == llm.StopReasonAborted {
				continue
			}
			out = append(out, m)
		case llm.RoleCustom:
			out = append(out, llm.Message{Role: llm.RoleUser, Content: m.Content, Timestamp: m.Timestamp})
		case llm.RoleCompactionSummary:
			out = append(out, llm.UserText(summaryPreamble+m.Summary+"\n</summary>"))
		case llm.RoleBashExecution:
			if m.Bash != nil {
				out = append(out, llm.UserText(bashText(m.Bash)))
			}
		}
	}
	return transcript.RepairToolResults(out)
}

func bashText(b *llm.BashExecution) string {
	var sb strings.Builder
	sb.WriteString("Ran `")
	sb.WriteString(b.Command)
	sb.WriteString("`\n")
	if b.Output != "" {
		sb.WriteString("```\n")
		sb.WriteString(strings.TrimRight(b.Output, "\n"))
		sb.WriteString("\n```")
	} else {
		sb.WriteString("(no output)")
	}
	return sb.String()
}

// sanitizeToolArgs makes every tool call's arguments storable JSON. A model that
// sent broken JSON gets its raw text kept as a JSON string (model clients send a
// string argument back verbatim), and empty arguments become {}.
func sanitizeToolArgs(m *llm.Message) {
	for i := range m.Content {
		c := &m.Content[i]
		if c.Type != llm.ContentToolCall {
			continue
		}
		raw := strings.TrimSpace(string(c.Arguments))
		switch {
		case raw == "":
			c.Arguments = json.RawMessage("{}")
		case !json.Valid([]byte(raw)):
			b, _ := json.Marshal(raw)
			c.Arguments = b
		}
	}
}
