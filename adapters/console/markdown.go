package console

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// plain renders the bridge's Markdown as text that reads well in a
// terminal: emphasis markers (**, __, *, _, ~~) around text are dropped,
// [label](url) becomes "label (url)", headings lose their #, list bullets
// become •. Code spans keep their backticks and fenced code is left as it
// is; nothing else changes (tables are readable as they are).
//
// The renderer prints streamed text by extension, so the rendering of a
// message still being written (streaming: its last line is not finished)
// only grows as the line does: that line is cut before an emphasis or a
// link that is still open, and a heading or bullet marker alone is not
// shown yet.
func plain(md string, streaming bool) string {
	lines := strings.Split(md, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.TrimSpace(t[len(fence):]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		lines[i] = plainLine(l, streaming && i == len(lines)-1)
	}
	return strings.Join(lines, "\n")
}

// plainLine renders one line outside fenced code; open says more of it may
// follow.
func plainLine(l string, open bool) string {
	indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
	t := l[len(indent):]
	if h := strings.TrimLeft(t, "#"); len(t)-len(h) <= 6 && len(h) < len(t) {
		switch {
		case strings.HasPrefix(h, " "):
			t = strings.TrimLeft(h, " ")
		case h == "" && open:
			return ""
		}
	}
	if len(t) >= 2 && strings.ContainsRune("-*+", rune(t[0])) && t[1] == ' ' {
		t = "• " + strings.TrimLeft(t[2:], " ")
	} else if open && (t == "-" || t == "*" || t == "+") {
		return ""
	}
	return indent + inline(t, open)
}

// inline drops emphasis markers that pair up, and rewrites links, outside
// code spans.
func inline(s string, open bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '`':
			n := run(s, i, '`')
			end := strings.Index(s[i+n:], s[i:i+n])
			if end < 0 {
				b.WriteString(s[i:]) // an open code span: the rest is code
				return b.String()
			}
			b.WriteString(s[i : i+n+end+n])
			i += n + end + n
			continue
		case c == '*' || c == '_' || c == '~':
			n := run(s, i, c)
			if open && i+n == len(s) {
				return b.String() // what the marker does is not known yet
			}
			if n > 3 || c == '~' && n != 2 || !opens(s, i, n) {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
			if j := closer(s, i+n, s[i:i+n]); j >= 0 {
				b.WriteString(inline(s[i+n:j], false))
				i = j + n
				continue
			}
			if open {
				return b.String() // its closing marker may be on its way
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		case c == '[':
			if label, url, n, ok := link(s[i:]); ok {
				b.WriteString(inline(label, false))
				if url != label {
					b.WriteString(" (" + url + ")")
				}
				i += n
				continue
			}
			if open && !strings.Contains(s[i:], ")") {
				return b.String() // a link still being written
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// run is the length of the run of c at s[i:].
func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// opens says whether the marker run s[i:i+n] can open emphasis: text
// follows it, and it does not sit inside a word (snake_case, 2*3*4).
func opens(s string, i, n int) bool {
	if i+n >= len(s) {
		return false
	}
	next, _ := utf8.DecodeRuneInString(s[i+n:])
	if unicode.IsSpace(next) {
		return false
	}
	if i == 0 {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	return !unicode.IsLetter(prev) && !unicode.IsDigit(prev)
}

// closer finds the marker that closes emphasis opened by marker, from
// s[from:]: the same run, after text, not followed by a letter or digit.
func closer(s string, from int, marker string) int {
	for j := from; j < len(s); {
		if s[j] == '`' {
			n := run(s, j, '`')
			end := strings.Index(s[j+n:], s[j:j+n])
			if end < 0 {
				return -1
			}
			j += n + end + n
			continue
		}
		if s[j] == marker[0] {
			n := run(s, j, marker[0])
			if n == len(marker) && j > from {
				prev, _ := utf8.DecodeLastRuneInString(s[:j])
				next := ' '
				if j+n < len(s) {
					next, _ = utf8.DecodeRuneInString(s[j+n:])
				}
				if !unicode.IsSpace(prev) && !unicode.IsLetter(next) && !unicode.IsDigit(next) {
					return j
				}
			}
			j += n
			continue
		}
		j++
	}
	return -1
}

// link parses [label](url) at the start of s.
func link(s string) (label, url string, n int, ok bool) {
	end := strings.Index(s, "](")
	if end < 1 || strings.ContainsAny(s[1:end], "[]") {
		return "", "", 0, false
	}
	close := strings.IndexByte(s[end+2:], ')')
	if close < 0 {
		return "", "", 0, false
	}
	url = s[end+2 : end+2+close]
	if url == "" || strings.ContainsAny(url, " \t") {
		return "", "", 0, false
	}
	return s[1:end], url, end + 2 + close + 1, true
}
