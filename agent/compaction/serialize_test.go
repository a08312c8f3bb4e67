package compaction

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

func TestSerializeConversation(t *testing.T) {
	exit := 2
	msgs := []llm.Message{
		userMsg("fix the bug"),
		{Role: llm.RoleUser, Content: []llm.Content{llm.Image("image/png", "AAAA")}}, // nothing to show
		{Role: llm.RoleAssistant, Content: []llm.Content{
			llm.Text("Looking."),
			{Type: llm.ContentThinking, Thinking: "where is it?"},
			llm.ToolCall("1", "read", json.RawMessage(`{ "path" : "a.go", "limit": 1.50, "1": "\u003cx\u003e" }`)),
			llm.ToolCall("2", "bash", json.RawMessage(`{"command":"go test ./...\n"}`)),
			llm.Text("Then test."),
		}},
		toolResultMsg("package a"),
		{Role: llm.RoleBashExecution, Bash: &llm.BashExecution{Command: "make", Output: "error", ExitCode: &exit}},
		{Role: llm.RoleCustom, CustomType: "ctx", Content: []llm.Content{llm.Text("thread context")}},
		{Role: llm.RoleCompactionSummary, Summary: "## Goal\nold"},
	}
	want := strings.Join([]string{
		"[User]: fix the bug",
		"[Assistant thinking]: where is it?",
		"[Assistant]: Looking.\nThen test.",
		`[Assistant tool calls]: read(1="<x>", path="a.go", limit=1.5); bash(command="go test ./...\n")`,
		"[Tool result]: package a",
		"[User]: ran the command `make` (exit code 2), output:\n```\nerror\n```",
		"[User]: thread context",
		"[User]: Summary of the conversation before this point:\n## Goal\nold",
	}, "\n\n")
	if got := SerializeConversation(msgs); got != want {
		t.Errorf("SerializeConversation:\n got %q\nwant %q", got, want)
	}
}

func TestSerializeCutsLongToolResults(t *testing.T) {
	got := SerializeConversation([]llm.Message{toolResultMsg(strings.Repeat("x", 5000))})
	want := "[Tool result]: " + strings.Repeat("x", 2000) + "\n\n[3000 more characters cut]"
	if got != want {
		t.Errorf("5000-character result: got %d bytes ending %q, want %d bytes ending %q", len(got), got[len(got)-40:], len(want), want[len(want)-40:])
	}

	short := strings.Repeat("x", 2000)
	if got := SerializeConversation([]llm.Message{toolResultMsg(short)}); got != "[Tool result]: "+short {
		t.Errorf("2000-character result was changed")
	}

	long := strings.Repeat("y", 5000)
	got = SerializeConversation([]llm.Message{userMsg(long), assistantMsg(long)})
	if strings.Contains(got, "cut]") || strings.Count(got, long) != 2 {
		t.Error("user and assistant text must not be cut")
	}

	// The limit counts UTF-16 units and never splits a surrogate pair.
	emoji := strings.Repeat("a", 1999) + "😀😀"
	got = SerializeConversation([]llm.Message{toolResultMsg(emoji)})
	if want := "[Tool result]: " + strings.Repeat("a", 1999) + "\n\n[4 more characters cut]"; got != want {
		t.Errorf("cut at a surrogate pair: got %q", got[len(got)-40:])
	}
}
