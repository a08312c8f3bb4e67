package discord

import (
	"strings"
	"unicode/utf8"
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
// branch (branch "" while it is being worked out).
func starterText(userID, prompt, repo, branch string) string {
	var b strings.Builder
	b.WriteString("**Request** from <@" + userID + ">\n")
	b.WriteString(quote(truncateRunes(prompt, 1500)))
	b.WriteString("\n")
	switch {
	case branch != "":
		b.WriteString("**Repo** `" + repo + "` · **Branch** `" + branch + "`")
	case repo != "":
		b.WriteString("**Repo** `" + repo + "` · preparing…")
	default:
		b.WriteString("**Repo** default · preparing…")
	}
	return b.String()
}
