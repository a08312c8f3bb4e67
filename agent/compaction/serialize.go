package compaction

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// ToolResultMaxChars is how much of a tool result the summarizer sees, in UTF-16
// code units as pi counts. The summary needs what a tool did, not all it printed.
const ToolResultMaxChars = 2000

// SerializeConversation renders messages as plain text for the summarizer, so the
// model reads a transcript to summarize rather than a conversation to continue:
//
//	[User]: …
//	[Assistant thinking]: …
//	[Assistant]: …
//	[Assistant tool calls]: read(path="a.go"); bash(command="go test")
//	[Tool result]: … (cut to ToolResultMaxChars, with a note of how much was cut)
//
// Parts are separated by blank lines. Custom messages, bash executions and earlier
// summaries reach the model as user content, so they are rendered as [User] parts.
// Images are left out; empty parts are skipped.
func SerializeConversation(msgs []llm.Message) string {
	ptrs := make([]*llm.Message, len(msgs))
	for i := range msgs {
		ptrs[i] = &msgs[i]
	}
	return serializeConversation(ptrs)
}

func serializeConversation(msgs []*llm.Message) string {
	var b strings.Builder
	part := func(label, text string) {
		if text == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(label)
		b.WriteString(": ")
		b.WriteString(text)
	}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser, llm.RoleCustom:
			part("[User]", joinText(m.Content, ""))
		case llm.RoleCompactionSummary:
			part("[User]", "Summary of the conversation before this point:\n"+m.Summary)
		case llm.RoleBashExecution:
			part("[User]", bashText(m.Bash))
		case llm.RoleAssistant:
			var thinking, text, calls []string
			for _, c := range m.Content {
				switch c.Type {
				case llm.ContentThinking:
					thinking = append(thinking, c.Thinking)
				case llm.ContentText:
					text = append(text, c.Text)
				case llm.ContentToolCall:
					calls = append(calls, c.Name+"("+formatArgs(c.Arguments)+")")
				}
			}
			part("[Assistant thinking]", strings.Join(thinking, "\n"))
			part("[Assistant]", strings.Join(text, "\n"))
			part("[Assistant tool calls]", strings.Join(calls, "; "))
		case llm.RoleToolResult:
			part("[Tool result]", truncateUTF16(joinText(m.Content, ""), ToolResultMaxChars))
		}
	}
	return b.String()
}

func joinText(cs []llm.Content, sep string) string {
	var parts []string
	for _, c := range cs {
		if c.Type == llm.ContentText {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, sep)
}

// bashText describes a command a person ran themselves.
func bashText(x *llm.BashExecution) string {
	if x == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ran the command `%s`", x.Command)
	switch {
	case x.Cancelled:
		b.WriteString(" (cancelled)")
	case x.ExitCode != nil && *x.ExitCode != 0:
		fmt.Fprintf(&b, " (exit code %d)", *x.ExitCode)
	}
	if x.Output == "" {
		b.WriteString(", no output")
	} else {
		b.WriteString(", output:\n```\n")
		b.WriteString(x.Output)
		b.WriteString("\n```")
	}
	if x.Truncated && x.FullOutputPath != "" {
		fmt.Fprintf(&b, "\n(output truncated; the full output is in %s)", x.FullOutputPath)
	}
	return b.String()
}

// formatArgs renders tool-call arguments as k=v pairs, each value as JavaScript's
// JSON.stringify writes it; arguments that are not a JSON object are shown as they are.
func formatArgs(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	p := jsParser{src: raw}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil || v.kind != jsObject {
		return string(raw)
	}
	var b strings.Builder
	for i := range v.members {
		if i > 0 {
			b.WriteString(", ")
		}
		var key string
		if json.Unmarshal(v.members[i].raw, &key) != nil {
			key = v.members[i].key[1 : len(v.members[i].key)-1]
		}
		b.WriteString(key)
		b.WriteByte('=')
		v.members[i].value.write(&b)
	}
	return b.String()
}

// truncateUTF16 keeps the first max UTF-16 code units of s (never half a surrogate
// pair) and says how many were left out.
func truncateUTF16(s string, max int) string {
	total := llm.UTF16Len(s)
	if total <= max {
		return s
	}
	units, cut := 0, len(s)
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > max {
			cut = i
			break
		}
		units += w
	}
	return fmt.Sprintf("%s\n\n[%d more characters cut]", s[:cut], total-units)
}
