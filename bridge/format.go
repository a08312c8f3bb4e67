package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/workspace"
)

// Reaction names (Slack-style; adapters translate them).
const (
	reactFollowUp  = "hourglass_flowing_sand"
	reactSteer     = "arrow_right_hook"
	reactDelivered = "eyes"
)

// toolArgKeys says which argument is the "main" one shown for a built-in
// tool's call: the tool registry's MainArgs.
var toolArgKeys = tools.MainArgs()

// mainArg returns the argument worth showing for a tool call: the command of
// bash, the path of file tools, else the first non-empty string argument in
// the order the model wrote them (an MCP tool's), the same at every render
// of the call's line.
func mainArg(tool string, args json.RawMessage) string {
	if keys := toolArgKeys[tool]; len(keys) > 0 {
		var m map[string]any
		if json.Unmarshal(args, &m) != nil {
			return ""
		}
		for _, k := range keys {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
	}
	return firstStringArg(args)
}

// firstStringArg returns the first non-empty string among the members of a
// JSON object, in document order.
func firstStringArg(args json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(args))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the key
			return ""
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return ""
		}
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// toolLine is the one line shown for a tool call: running (done=false), or
// finished with ✓/✗ and its duration. The argument shown goes through
// redact (configured secrets) whole, before it is cut: a secret the cut
// would split is still replaced.
func toolLine(tool string, args json.RawMessage, done, failed bool, d time.Duration, redact func(string) string) string {
	arg := mainArg(tool, args)
	if redact != nil {
		arg = redact(arg)
	}
	arg = oneLine(arg, 80)
	var b strings.Builder
	switch {
	case !done:
		b.WriteString("⏳ ")
	case failed:
		b.WriteString("✗ ")
	default:
		b.WriteString("✓ ")
	}
	b.WriteString("`" + tool + "`")
	if arg != "" {
		b.WriteString(" " + codeSpan(arg))
	}
	if done {
		b.WriteString(" · " + shortDuration(d))
	}
	return b.String()
}

// codeSpan wraps s in backticks, using a longer fence when s contains one.
func codeSpan(s string) string {
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return "`` " + strings.ReplaceAll(s, "``", "` `") + " ``"
}

// oneLine keeps the first line of s, cut to max runes with an ellipsis.
func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = strings.TrimSpace(s[:i]), true
	}
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s, cut = string(r[:max]), true
	}
	if cut {
		s += "…"
	}
	return s
}

func shortDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "<1ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// tokens formats a token count as 950, 12.3k, 1.2M.
func tokens(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 999_950: // below this, one decimal of k does not round up to 1000k
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	}
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// cost of a usage at p.
func (p Price) cost(u llm.Usage) float64 {
	return (float64(u.Input)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6
}

func (p Price) zero() bool { return p == Price{} }

// runStats accumulates what a run's footer shows.
type runStats struct {
	started time.Time
	usage   llm.Usage // summed over the run's replies
	cost    float64
	priced  bool // a reply carried its own cost
	failed  bool // the last reply ended with an error
}

// footer is the one line that ends a run's last message.
func footer(st runStats, end time.Time, contextTokens, window int, priced bool) string {
	in := st.usage.Input + st.usage.CacheRead + st.usage.CacheWrite
	parts := []string{
		"⏱ " + shortDuration(end.Sub(st.started)),
		fmt.Sprintf("%s in / %s out", tokens(in), tokens(st.usage.Output)),
	}
	if window > 0 {
		parts = append(parts, fmt.Sprintf("context %d%% of %s", percent(contextTokens, window), tokens(window)))
	}
	if priced || st.priced {
		parts = append(parts, fmt.Sprintf("$%.4f", st.cost))
	}
	return "_" + strings.Join(parts, " · ") + "_"
}

func percent(n, of int) int {
	if of <= 0 {
		return 0
	}
	return int((int64(n)*100 + int64(of)/2) / int64(of))
}

// Notice texts. Their wording is part of the product (docs/behaviour.md §4): a retry
// notice contains "retrying", giving up "gave up", compaction "compacting" or
// "compacted", !stop "stopped", a run cut off by a restart "interrupted".

func retryNotice(e agent.AutoRetryStart) string {
	return fmt.Sprintf("⚠️ retrying in %s (attempt %d/%d): %s", retryDelay(e.Delay), e.Attempt, e.MaxAttempts, shortReason(e.ErrorMessage))
}

func retryDelay(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func retryEndNotice(start string, e agent.AutoRetryEnd) string {
	switch {
	case e.Success:
		return start + "\n✅ retry succeeded (attempt " + fmt.Sprint(e.Attempt) + ")"
	case e.FinalError == "cancelled":
		return start + "\n⏹ retry cancelled"
	default:
		return start + "\n❌ gave up after " + fmt.Sprint(e.Attempt) + " retries: " + shortReason(e.FinalError)
	}
}

// shortReason makes a provider error fit one line of chat.
func shortReason(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "unknown error"
	}
	return oneLine(s, 160)
}

func compactionStartNotice(r agent.CompactionReason, tokensNow, window int) string {
	if r == agent.CompactionThreshold && (tokensNow <= 0 || window <= 0) {
		return "🗜️ compacting context: it is close to the model's limit (threshold)…"
	}
	switch r {
	case agent.CompactionOverflow:
		return "🗜️ compacting context: the model refused the prompt as too long (context overflow)…"
	case agent.CompactionManual:
		return "🗜️ compacting context (requested)…"
	}
	return fmt.Sprintf("🗜️ compacting context: %s of %s tokens used (threshold)…", tokens(tokensNow), tokens(window))
}

func compactionEndNotice(e agent.AutoCompactionEnd) string {
	why := map[agent.CompactionReason]string{
		agent.CompactionThreshold: "threshold",
		agent.CompactionOverflow:  "context overflow",
		agent.CompactionManual:    "requested",
	}[e.Reason]
	if e.ErrorMessage != "" {
		if e.Aborted {
			return "🗜️ compacting stopped (" + why + ")"
		}
		return "❌ compacting context failed (" + why + "): " + shortReason(e.ErrorMessage)
	}
	s := fmt.Sprintf("🗜️ compacted context: %s → %s tokens (%s)", tokens(e.TokensBefore), tokens(e.TokensAfter), why)
	if e.WillRetry {
		s += "; retrying the request"
	}
	return s
}

// pushNotice describes a pushed branch.
func pushNotice(p workspace.PushResult) string {
	var b strings.Builder
	added, deleted := 0, 0
	for _, f := range p.Files {
		added += f.Added
		deleted += f.Deleted
	}
	fmt.Fprintf(&b, "⬆️ pushed `%s` @ `%s` · %d file%s changed (+%d −%d)", p.Branch, shortSHA(p.SHA), len(p.Files), plural(len(p.Files)), added, deleted)
	const maxFiles = 15
	for i, f := range p.Files {
		if i == maxFiles {
			fmt.Fprintf(&b, "\n• … and %d more", len(p.Files)-maxFiles)
			break
		}
		fmt.Fprintf(&b, "\n• `%s` +%d −%d", f.Path, f.Added, f.Deleted)
	}
	if p.CompareURL != "" {
		fmt.Fprintf(&b, "\n[Compare with the default branch](%s)", p.CompareURL)
	}
	return b.String()
}

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// diffStat is the text !diff posts: a stat of the branch against the default branch.
func diffStat(d workspace.DiffResult, branch, base string) string {
	if len(d.Stat) == 0 {
		return fmt.Sprintf("No changes on `%s` compared with `%s`.", branch, base)
	}
	var b strings.Builder
	added, deleted := 0, 0
	for _, f := range d.Stat {
		added += f.Added
		deleted += f.Deleted
	}
	fmt.Fprintf(&b, "📄 `%s` vs `%s`: %d file%s changed (+%d −%d)", branch, base, len(d.Stat), plural(len(d.Stat)), added, deleted)
	for i, f := range d.Stat {
		if i == 30 {
			fmt.Fprintf(&b, "\n• … and %d more", len(d.Stat)-30)
			break
		}
		fmt.Fprintf(&b, "\n• `%s` +%d −%d", f.Path, f.Added, f.Deleted)
	}
	if d.CompareURL != "" {
		fmt.Fprintf(&b, "\n[Compare](%s)", d.CompareURL)
	}
	return b.String()
}

// quoteList renders queued input for !stop and !status.
func quoteList(msgs []llm.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		text := m.TextContent()
		// Who wrote it ([From NAME], see attributed) goes after the text.
		if head, rest, ok := strings.Cut(text, "\n"); ok && strings.HasPrefix(head, "[From ") && strings.HasSuffix(head, "]") {
			text = rest + " — " + head[len("[From "):len(head)-1]
		}
		fmt.Fprintf(&b, "\n%d. %s", i+1, oneLine(text, 100))
	}
	return b.String()
}
