package compaction

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/threadsmith/threadsmith/agent/llm"
)

func TestEstimateTokensVectors(t *testing.T) {
	exit := 0
	tests := []struct {
		name string
		m    llm.Message
		want int
	}{
		{"user abcde", userMsg("abcde"), 2},
		{"tool result with 9 chars and an image", llm.Message{Role: llm.RoleToolResult, Content: []llm.Content{
			llm.Text("123456789"), llm.Image("image/png", "AAAA"),
		}}, 1203},
		{"user with only an image", llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Image("image/png", "AAAA")}}, 0},
		{"assistant read call", toolCallMsg("read", `{"path":"a.ts"}`), 5},
		{"bash ls", llm.Message{Role: llm.RoleBashExecution, Bash: &llm.BashExecution{Command: "ls", Output: "a\nb", ExitCode: &exit}}, 2},
		{"custom message with an image", llm.Message{Role: llm.RoleCustom, Content: []llm.Content{llm.Text("ab"), llm.Image("image/png", "x")}}, 1201},
		{"compaction summary", llm.Message{Role: llm.RoleCompactionSummary, Summary: strings.Repeat("s", 41)}, 11},
		{"assistant text, thinking and call", llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{
			llm.Text("abcd"), {Type: llm.ContentThinking, Thinking: "efgh"}, llm.ToolCall("1", "ls", json.RawMessage(`{ "path" : "." }`)),
		}}, 6}, // 4 + 4 + 2 + len(`{"path":"."}`) = 22 chars
		// `{"path":"<a>.ts"}` is 17 characters (the raw text is 28): 4 + 17 → 6.
		{"arguments re-serialized as JavaScript does", toolCallMsg("read", `{"path": "\u003ca\u003e.ts"}`), 6},
		{"arguments that are not JSON count raw", toolCallMsg("read", `{"path": "a.t`), 5}, // 4 + 13
		{"missing arguments count as {}", llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{{Type: llm.ContentToolCall, Name: "ls"}}}, 1},
		{"unknown role", llm.Message{Role: "mystery", Content: []llm.Content{llm.Text("abcdef")}}, 0},
		{"empty", llm.Message{Role: llm.RoleUser}, 0},
	}
	for _, tt := range tests {
		if got := EstimateTokens(tt.m); got != tt.want {
			t.Errorf("%s: EstimateTokens = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestEstimateCountsUTF16Units(t *testing.T) {
	tests := []struct {
		text  string
		units int
	}{
		{"abc", 3},
		{"é", 1},            // 2 bytes, 1 unit
		{"中文", 2},           // 6 bytes, 2 units
		{"😀", 2},            // 4 bytes, a surrogate pair
		{"a\xffb", 3},       // an invalid byte counts as one U+FFFD
		{"\xf0\x9f", 2},     // a cut 4-byte sequence: two U+FFFD
		{"x\U0010FFFFy", 4}, // the last code point, a pair
	}
	for _, tt := range tests {
		if got := llm.UTF16Len(tt.text); got != tt.units {
			t.Errorf("llm.UTF16Len(%q) = %d, want %d", tt.text, got, tt.units)
		}
	}
	// CJK: 40 characters are about 40 tokens for a real tokenizer, but pi's rule
	// (and ours) says 10 — the documented under-estimate.
	if got := EstimateTokens(userMsg(strings.Repeat("中", 40))); got != 10 {
		t.Errorf("40 CJK characters: got %d, want 10", got)
	}
}

func TestContextTokens(t *testing.T) {
	withUsage := func(m llm.Message, u llm.Usage, stop llm.StopReason) llm.Message {
		m.Usage, m.StopReason = &u, stop
		return m
	}
	msgs := []llm.Message{
		userMsg("hello"),
		withUsage(assistantMsg("a"), llm.Usage{Input: 1000, Output: 10, CacheRead: 5, CacheWrite: 1}, llm.StopReasonStop), // no total: sum 1016
		userMsg("abcdefgh"), // 2
		withUsage(assistantMsg("b"), llm.Usage{Input: 9000, Output: 900, TotalTokens: 50000}, llm.StopReasonError),
		withUsage(assistantMsg("c"), llm.Usage{Input: 9000, TotalTokens: 60000}, llm.StopReasonAborted),
		toolResultMsg("12345678"), // 2
	}
	total, last := ContextTokens(msgs)
	// The error and aborted replies are estimated (1 each), not trusted for usage.
	if total != 1016+2+1+1+2 || last != 1 {
		t.Errorf("ContextTokens: got %d at %d, want %d at 1", total, last, 1016+2+1+1+2)
	}

	msgs[1].Usage.TotalTokens = 2000
	if total, _ := ContextTokens(msgs); total != 2000+6 {
		t.Errorf("ContextTokens with a reported total: got %d, want %d", total, 2006)
	}

	noUsage := []llm.Message{userMsg("abcd"), userMsg("abcdefgh")}
	if total, last := ContextTokens(noUsage); total != 3 || last != -1 {
		t.Errorf("ContextTokens without usage: got %d at %d, want 3 at -1", total, last)
	}
}

func TestShouldCompact(t *testing.T) {
	s := Settings{Enabled: true, ReserveTokens: 10000, KeepRecentTokens: 20000}
	if !ShouldCompact(95000, 100000, s) {
		t.Error("95000 of 100000 with 10000 reserved: got false, want true")
	}
	if ShouldCompact(90000, 100000, s) {
		t.Error("exactly at the threshold: got true, want false (pi triggers only above it)")
	}
	s.Enabled = false
	if ShouldCompact(99999, 100000, s) {
		t.Error("disabled: got true, want false")
	}
	if d := DefaultSettings(); d != (Settings{Enabled: true, ReserveTokens: 16384, KeepRecentTokens: 20000}) {
		t.Errorf("DefaultSettings: got %+v", d)
	}
}

// FuzzUTF16Len checks the word-at-a-time count against converting to UTF-16
// (invalid bytes become one U+FFFD each, as []rune does).
func FuzzUTF16Len(f *testing.F) {
	for _, seed := range []string{"", "abc", "héllo wörld, a longer line of text ✓ ✓ ✓ 😀😀😀 and more ASCII after it",
		strings.Repeat("ü", 40), strings.Repeat("😀", 17) + "x", "a\xffb\xf0\x9f\x98", "\xf0\x9f\x98\x80\x80\x80\x80\x80" + strings.Repeat("a", 40),
		strings.Repeat("a", 70) + "é", strings.Repeat("b", 64) + "\xff" + strings.Repeat("c", 9)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := llm.UTF16Len(s), len(utf16.Encode([]rune(s))); got != want {
			t.Fatalf("llm.UTF16Len(%q) = %d, want %d", s, got, want)
		}
	})
}
