package discord

import (
	"strings"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/chat/mdsplit"
)

// maxThreadName is Discord's limit on a thread's name.
const maxThreadName = 100

// truncateRunes cuts s to at most n characters (Discord counts code points),
// ending with "…" when it cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// quote renders text as a Markdown block quote.
func quote(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// threadName is a thread's name for a prompt: its first line, whitespace
// collapsed, at most 100 characters.
func threadName(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	name := strings.Join(strings.Fields(line), " ")
	if name == "" {
		return "threadsmith session"
	}
	return truncateRunes(name, maxThreadName)
}

// starterText is the /code starter message: who asked what, on which repo and
// branch (branch "" while it is being worked out; repo "" with a branch when
// the thread chooses its repository).
func starterText(userID, prompt, repo, branch string) string {
	var b strings.Builder
	b.WriteString("**Request** from <@" + userID + ">\n")
	b.WriteString(quote(truncateRunes(prompt, 1500)))
	b.WriteString("\n")
	switch {
	case branch != "" && repo == "":
		b.WriteString("**Repo** chosen in the thread · **Branch** `" + branch + "`")
	case branch != "":
		b.WriteString("**Repo** `" + repo + "` · **Branch** `" + branch + "`")
	case repo != "":
		b.WriteString("**Repo** `" + repo + "` · preparing…")
	default:
		b.WriteString("**Repo** default · preparing…")
	}
	return b.String()
}

// Text is Markdown as the adapter sends it to Discord. Discord's code blocks
// are ``` only, and each ends at the next ``` wherever it stands: a block
// fenced with ~~~ shows as text (its code read as Markdown), and one fenced
// with ```` ends at the first ``` inside it (a README with its ```go
// examples). So a block's fence is sent as ``` (with its language), and a run
// of three or more backticks inside a block is broken with a zero-width
// space, which looks the same. Everything else is sent as written.
func Text(md string) string {
	if !strings.Contains(md, "```") && !strings.Contains(md, "~~~") {
		return md
	}
	lines := strings.Split(md, "\n")
	var fence string // the open block's marker, "" outside one
	for i, line := range lines {
		switch {
		case fence == "":
			if marker, indent, info, ok := mdsplit.OpeningFence(line); ok {
				fence = marker
				lines[i] = indent + "```" + mdsplit.BreakFences(info)
			}
		case mdsplit.ClosesFence(line, fence):
			fence = ""
			lines[i] = line[:len(line)-len(strings.TrimLeft(line, " "))] + "```"
		default:
			lines[i] = mdsplit.BreakFences(line)
		}
	}
	return strings.Join(lines, "\n")
}

// Measure is the length of Markdown as Discord receives it (Text), in code
// points, as Discord counts its 2,000.
func Measure(md string) int { return utf8.RuneCountInString(Text(md)) }
