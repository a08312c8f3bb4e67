package mdsplit

import "strings"

// OpeningFence parses a line that opens a fenced code block (CommonMark:
// three or more backticks or tildes, indented at most three spaces; a
// backtick fence's info string has no backtick). It returns the fence's
// marker ("```", "~~~~"), the spaces before it and its info string (the
// language hint), trimmed.
func OpeningFence(line string) (marker, indent, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", "", false
	}
	n := runLen(t, t[0])
	if n < 3 || (t[0] == '`' && strings.ContainsRune(t[n:], '`')) {
		return "", "", "", false // ```a``` on one line is a code span
	}
	return t[:n], line[:len(line)-len(t)], strings.TrimSpace(t[n:]), true
}

// ClosesFence reports whether line closes the block opened with marker: the
// same character, at least as many of them, nothing after but spaces.
func ClosesFence(line, marker string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	n := runLen(t, marker[0])
	return n >= len(marker) && strings.TrimSpace(t[n:]) == ""
}

// BreakFences puts a zero-width space after every second backtick of a run
// of three or more, so that no ``` is left in line and it looks the same.
// Slack and Discord end a code block at the next ``` wherever it stands (a
// ```go line inside a ```` block would close it): the adapters break every
// such run inside a block.
func BreakFences(line string) string {
	if !strings.Contains(line, "```") {
		return line
	}
	var b strings.Builder
	run := 0
	for i := 0; i < len(line); i++ {
		if line[i] != '`' {
			run = 0
			b.WriteByte(line[i])
			continue
		}
		if run == 2 {
			b.WriteString("\u200b")
			run = 0
		}
		b.WriteByte('`')
		run++
	}
	return b.String()
}

func runLen(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}
