package compaction

import (
	"encoding/json"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

func userMsg(text string) llm.Message { return llm.UserText(text) }

func assistantMsg(text string) llm.Message {
	return llm.Message{
		Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(text)},
		StopReason: llm.StopReasonStop, Usage: &llm.Usage{Input: 100, Output: 50},
	}
}

func toolCallMsg(name, args string) llm.Message {
	return llm.Message{
		Role:       llm.RoleAssistant,
		Content:    []llm.Content{llm.ToolCall("call-"+name, name, json.RawMessage(args))},
		StopReason: llm.StopReasonToolUse, Usage: &llm.Usage{Input: 100, Output: 50},
	}
}

func toolResultMsg(text string) llm.Message {
	return llm.Message{Role: llm.RoleToolResult, ToolCallID: "call", ToolName: "read", Content: []llm.Content{llm.Text(text)}}
}

// modelChange and compactionAt are non-message items for session().
type modelChange string

type compactionAt struct {
	summary   string
	firstKept int64
	read, mod []string
}

// session builds entries from messages, modelChange and compactionAt values,
// numbering Seq from 0.
func session(items ...any) []Entry {
	var out []Entry
	for i, it := range items {
		seq := int64(i)
		switch v := it.(type) {
		case llm.Message:
			out = append(out, transcript.MessageEntry(seq, v))
		case modelChange:
			out = append(out, Entry{Seq: seq, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Model: string(v)}})
		case compactionAt:
			out = append(out, Entry{Seq: seq, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{
				Summary: v.summary, FirstKeptSeq: v.firstKept, TokensBefore: 1000, ReadFiles: v.read, ModifiedFiles: v.mod,
			}})
		default:
			panic("session: unsupported item")
		}
	}
	return out
}

// texts returns the text of each message (the command for bash executions).
func texts[M llm.Message | *llm.Message](msgs []M) []string {
	out := make([]string, len(msgs))
	for i := range msgs {
		var m *llm.Message
		switch v := any(&msgs[i]).(type) {
		case *llm.Message:
			m = v
		case **llm.Message:
			m = *v
		}
		out[i] = m.TextContent()
		if m.Bash != nil {
			out[i] = m.Bash.Command
		}
	}
	return out
}
