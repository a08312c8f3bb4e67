package bridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/workspace"
)

func TestToolLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		tool, args   string
		done, failed bool
		d            time.Duration
		want         string
	}{
		{"running bash", "bash", `{"command":"go test ./..."}`, false, false, 0, "⏳ `bash` `go test ./...`"},
		{"done read", "read", `{"path":"main.go","offset":10}`, true, false, 12 * time.Millisecond, "✓ `read` `main.go` · 12ms"},
		{"failed bash", "bash", `{"command":"make"}`, true, true, 2340 * time.Millisecond, "✗ `bash` `make` · 2.3s"},
		{"long run", "bash", `{"command":"sleep 100"}`, true, false, 125 * time.Second, "✓ `bash` `sleep 100` · 2m5s"},
		{"grep shows the pattern", "grep", `{"path":"src","pattern":"TODO"}`, true, false, time.Millisecond, "✓ `grep` `TODO` · 1ms"},
		{"find falls back to the path", "find", `{"path":"src"}`, false, false, 0, "⏳ `find` `src`"},
		{"unknown tool shows a string argument", "deploy", `{"target":"prod"}`, false, false, 0, "⏳ `deploy` `prod`"},
		{"no arguments", "ls", `{}`, true, false, 3 * time.Millisecond, "✓ `ls` · 3ms"},
		{"invalid arguments", "ls", `not json`, false, false, 0, "⏳ `ls`"},
		{"backticks in the argument", "bash", "{\"command\":\"echo `date`\"}", false, false, 0, "⏳ `bash` `` echo `date` ``"},
		{"only the first line of a script", "bash", `{"command":"cd x\nmake all"}`, false, false, 0, "⏳ `bash` `cd x…`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toolLine(tc.tool, json.RawMessage(tc.args), tc.done, tc.failed, tc.d, nil)
			if got != tc.want {
				t.Errorf("toolLine = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestToolLineCutsLongArguments(t *testing.T) {
	t.Parallel()
	cmd := strings.Repeat("é", 200)
	got := toolLine("bash", json.RawMessage(`{"command":"`+cmd+`"}`), false, false, 0, nil)
	want := "⏳ `bash` `" + strings.Repeat("é", 80) + "…`"
	if got != want {
		t.Errorf("toolLine = %q, want %q (80 runes and an ellipsis)", got, want)
	}
}

// A secret is redacted before the line is cut: one the cut falls inside
// shows none of its characters.
func TestToolLineRedactsBeforeTheCut(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-0123456789"
	redact := tools.Redactor([]string{secret})
	for _, pad := range []int{0, 70, 76, 79} {
		cmd := strings.Repeat("x", pad) + secret + " tail"
		got := toolLine("bash", json.RawMessage(`{"command":"`+cmd+`"}`), true, false, 0, redact)
		if strings.Contains(got, secret[:4]) {
			t.Errorf("pad %d: toolLine = %q shows part of the secret", pad, got)
		}
		if want := strings.Repeat("x", pad) + "[r"; pad < 79 && !strings.Contains(got, want) {
			t.Errorf("pad %d: toolLine = %q, want %q in it", pad, got, want)
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "0"}, {950, "950"}, {999, "999"}, {1000, "1k"}, {1049, "1k"}, {1050, "1.1k"},
		{12345, "12.3k"}, {128000, "128k"}, {1_000_000, "1M"}, {1_200_000, "1.2M"}, {2_000_000, "2M"},
	} {
		if got := tokens(tc.n); got != tc.want {
			t.Errorf("tokens(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestTokensJustBelowAMillion: rounding must not show "1000k".
func TestTokensJustBelowAMillion(t *testing.T) {
	t.Parallel()

	if got := tokens(999_999); got != "1M" {
		t.Errorf("tokens(999999) = %q, want %q", got, "1M")
	}
}

func TestFooter(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	st := runStats{started: start, usage: llm.Usage{Input: 10_000, CacheRead: 2_345, Output: 812}}
	st.cost = Price{Input: 3, Output: 15, CacheRead: 0.3}.cost(st.usage)
	end := start.Add(83*time.Second + 420*time.Millisecond)

	got := footer(st, end, 64_000, 128_000, false)
	want := "_⏱ 1m23s · 12.3k in / 812 out · context 50% of 128k_"
	if got != want {
		t.Errorf("footer without price = %q, want %q", got, want)
	}
	got = footer(st, end, 64_000, 128_000, true)
	// 10,000×$3 + 812×$15 + 2,345×$0.3 per million tokens.
	want = "_⏱ 1m23s · 12.3k in / 812 out · context 50% of 128k · $0.0429_"
	if got != want {
		t.Errorf("footer with price = %q, want %q", got, want)
	}
	if got := footer(runStats{started: start}, start.Add(1500*time.Millisecond), 10, 0, false); got != "_⏱ 1.5s · 0 in / 0 out_" {
		t.Errorf("footer without a known window = %q, want no context part", got)
	}
	// A quick run (a local model, a cached reply) says how quick, not 0ms.
	for d, want := range map[time.Duration]string{42 * time.Millisecond: "42ms", 300 * time.Microsecond: "<1ms", 999 * time.Millisecond: "999ms"} {
		if got := footer(runStats{started: start}, start.Add(d), 10, 0, false); got != "_⏱ "+want+" · 0 in / 0 out_" {
			t.Errorf("footer of a %v run = %q, want ⏱ %s", d, got, want)
		}
	}
}

func TestPriceCost(t *testing.T) {
	t.Parallel()
	p := Price{Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2.5}
	got := p.cost(llm.Usage{Input: 1_000_000, Output: 500_000, CacheRead: 2_000_000, CacheWrite: 400_000})
	if want := 2 + 4 + 1 + 1.0; fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", want) {
		t.Errorf("cost = %v, want %v", got, want)
	}
	if !(Price{}).zero() || p.zero() {
		t.Error("zero() is wrong")
	}
}

func TestPushNoticeWithManyFiles(t *testing.T) {
	t.Parallel()
	var files []workspace.FileStat
	for i := range 20 {
		files = append(files, workspace.FileStat{Path: fmt.Sprintf("pkg/f%02d.go", i), Added: i, Deleted: 1})
	}
	got := pushNotice(workspace.PushResult{Branch: "bot/slack-c1-1", SHA: "0123456789abcdef", Files: files,
		CompareURL: "https://github.com/acme/app/compare/main...bot/slack-c1-1"})
	lines := strings.Split(got, "\n")
	if want := "⬆️ pushed `bot/slack-c1-1` @ `0123456` · 20 files changed (+190 −20)"; lines[0] != want {
		t.Errorf("first line = %q, want %q", lines[0], want)
	}
	if len(lines) != 1+15+1+1 {
		t.Fatalf("got %d lines, want the headline, 15 files, the rest counted, the link:\n%s", len(lines), got)
	}
	if lines[1] != "• `pkg/f00.go` +0 −1" || lines[15] != "• `pkg/f14.go` +14 −1" {
		t.Errorf("file lines = %q … %q", lines[1], lines[15])
	}
	if lines[16] != "• … and 5 more" {
		t.Errorf("overflow line = %q, want %q", lines[16], "• … and 5 more")
	}
	if !strings.Contains(lines[17], "(https://github.com/acme/app/compare/main...bot/slack-c1-1)") {
		t.Errorf("no compare link: %q", lines[17])
	}

	one := pushNotice(workspace.PushResult{Branch: "bot/x", SHA: "abc", Files: []workspace.FileStat{{Path: "a", Added: 1}}})
	if want := "⬆️ pushed `bot/x` @ `abc` · 1 file changed (+1 −0)\n• `a` +1 −0"; one != want {
		t.Errorf("one file = %q, want %q", one, want)
	}
}

func TestDiffStat(t *testing.T) {
	t.Parallel()
	if got, want := diffStat(workspace.DiffResult{}, "bot/x", "main"), "No changes on `bot/x` compared with `main`."; got != want {
		t.Errorf("empty diff = %q, want %q", got, want)
	}
	var stat []workspace.FileStat
	for i := range 32 {
		stat = append(stat, workspace.FileStat{Path: fmt.Sprintf("f%d", i), Added: 2, Deleted: 1})
	}
	got := diffStat(workspace.DiffResult{Stat: stat, CompareURL: "https://example.com/c"}, "bot/x", "main")
	lines := strings.Split(got, "\n")
	if want := "📄 `bot/x` vs `main`: 32 files changed (+64 −32)"; lines[0] != want {
		t.Errorf("headline = %q, want %q", lines[0], want)
	}
	if len(lines) != 1+30+1+1 || lines[31] != "• … and 2 more" || lines[32] != "[Compare](https://example.com/c)" {
		t.Errorf("diff stat lines (%d):\n%s", len(lines), got)
	}
}

func TestNoticeWording(t *testing.T) {
	t.Parallel()
	start := retryNotice(agent.AutoRetryStart{Attempt: 2, MaxAttempts: 3, Delay: 1500 * time.Millisecond, ErrorMessage: "503: overloaded\nstack trace here"})
	if want := "⚠️ retrying in 1.5s (attempt 2/3): 503: overloaded…"; start != want {
		t.Errorf("retry notice = %q, want %q", start, want)
	}
	for _, tc := range []struct {
		end  agent.AutoRetryEnd
		want string
	}{
		{agent.AutoRetryEnd{Success: true, Attempt: 2}, "\n✅ retry succeeded (attempt 2)"},
		{agent.AutoRetryEnd{Attempt: 1, FinalError: "cancelled"}, "\n⏹ retry cancelled"},
		{agent.AutoRetryEnd{Attempt: 3, FinalError: ""}, "\n❌ gave up after 3 retries: unknown error"},
	} {
		if got := retryEndNotice(start, tc.end); got != start+tc.want {
			t.Errorf("retryEndNotice(%+v) = %q, want %q", tc.end, got, start+tc.want)
		}
	}
	if got := compactionStartNotice(agent.CompactionThreshold, 120_000, 128_000); !strings.Contains(got, "compacting") || !strings.Contains(got, "120k of 128k") {
		t.Errorf("threshold start notice = %q", got)
	}
	if got := compactionStartNotice(agent.CompactionOverflow, 0, 0); !strings.Contains(got, "compacting") || !strings.Contains(got, "overflow") {
		t.Errorf("overflow start notice = %q", got)
	}
	if got := compactionEndNotice(agent.AutoCompactionEnd{Reason: agent.CompactionManual, TokensBefore: 5000, TokensAfter: 900}); got != "🗜️ compacted context: 5k → 900 tokens (requested)" {
		t.Errorf("manual end notice = %q", got)
	}
	if got := compactionEndNotice(agent.AutoCompactionEnd{Reason: agent.CompactionManual, ErrorMessage: "context canceled", Aborted: true}); got != "🗜️ compacting stopped (requested)" {
		t.Errorf("aborted end notice = %q", got)
	}
}

func TestUserErrorHidesInternals(t *testing.T) {
	t.Parallel()
	internal := fmt.Errorf("open /var/lib/threadsmith/db: permission denied (token ghp_secret)")
	if got := userError(internal); strings.Contains(got, "/var/lib") || strings.Contains(got, "ghp_") {
		t.Errorf("userError leaks details: %q", got)
	}
	if got := userError(fmt.Errorf("wrapped: %w", plainError{"say what"})); got != "wrapped: say what" {
		t.Errorf("plain error = %q", got)
	}
	um := &agent.UnknownModelError{Name: "x", Known: []string{"a", "b"}}
	if got := userError(um); got != um.Error() {
		t.Errorf("unknown model = %q, want %q", got, um.Error())
	}
}

// A tool the bridge does not know (an MCP server's) shows its first string
// argument as the model wrote it, at every render of its line: from a map,
// the running line and the finished one could show different arguments.
func TestMainArgOfAnUnknownToolIsItsFirstString(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"limit": 5, "query": "open bugs", "project": "web", "state": "all", "x": ""}`)
	for range 50 {
		if got := mainArg("tracker__search", args); got != "open bugs" {
			t.Fatalf("mainArg = %q, want the first string argument", got)
		}
	}
	for _, bad := range []string{``, `[]`, `"s"`, `{"a": 1}`, `{"a":`} {
		if got := mainArg("tracker__search", json.RawMessage(bad)); got != "" {
			t.Errorf("mainArg(%q) = %q, want none", bad, got)
		}
	}
	if got := mainArg("bash", json.RawMessage(`{"timeout": "5", "command": "go test ./..."}`)); got != "go test ./..." {
		t.Errorf("bash shows %q, want its command", got)
	}
}
