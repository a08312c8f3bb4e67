package slack

import (
	"strings"
	"unicode"
)

// emphasis matches *, _ and ~ delimiter runs (CommonMark's flanking rules,
// simplified: an opener takes the first closer of the same character and
// length) and renders them as Slack's *bold*, _italic_ and ~strike~.
type emphasis struct {
	atoms []string
}

// convert renders s, whose atoms are placeholders.
func (e *emphasis) convert(s []rune) string {
	var b strings.Builder
	// noCloser records the closer searches that failed: as none exists to the
	// right of any later position either, they are not made again, which keeps
	// lines full of unmatched delimiters linear.
	noCloser := map[closerKey]bool{}
	for i := 0; i < len(s); {
		r := s[i]
		if r != '*' && r != '_' && r != '~' {
			e.emit(&b, r)
			i++
			continue
		}
		n := 1
		for i+n < len(s) && s[i+n] == r {
			n++
		}
		if !canOpen(s, i, n) {
			b.WriteString(strings.Repeat(string(r), n))
			i += n
			continue
		}
		both := canClose(s, i, n)
		matched := false
		for _, k := range kinds(r, n) {
			key := closerKey{r, k, n, both}
			if noCloser[key] {
				continue
			}
			// The opener's first n-k characters stay literal; its last k open.
			from := i + n
			j := findCloser(s, from, r, k, n, both)
			if j < 0 {
				noCloser[key] = true
				continue
			}
			open, closeMark := markers(r, k)
			b.WriteString(strings.Repeat(string(r), n-k))
			b.WriteString(open)
			b.WriteString(e.convert(s[from:j]))
			b.WriteString(closeMark)
			i = j + k
			matched = true
			break
		}
		if !matched {
			b.WriteString(strings.Repeat(string(r), n))
			i += n
		}
	}
	return b.String()
}

func (e *emphasis) emit(b *strings.Builder, r rune) {
	if idx := int(r) - atomBase; idx >= 0 && idx < len(e.atoms) {
		b.WriteString(e.atoms[idx])
		return
	}
	switch r {
	case '&':
		b.WriteString("&amp;")
	case '<':
		b.WriteString("&lt;")
	case '>':
		b.WriteString("&gt;")
	default:
		b.WriteRune(r)
	}
}

// closerKey is what a closer search depends on.
type closerKey struct {
	r       rune
	k, n    int
	openerB bool
}

// kinds lists the delimiter lengths a run of n may open, longest first. A single
// ~ is "about" far more often than a strikethrough, so only ~~ strikes.
func kinds(r rune, n int) []int {
	if r == '~' {
		if n == 2 {
			return []int{2}
		}
		return nil
	}
	switch {
	case n >= 3:
		return []int{3, 2, 1}
	case n == 2:
		return []int{2, 1}
	}
	return []int{1}
}

func markers(r rune, k int) (string, string) {
	switch {
	case r == '~':
		return "~", "~"
	case k == 3:
		return "*_", "_*"
	case k == 2:
		return "*", "*"
	}
	return "_", "_"
}

// findCloser returns the start of the first run of exactly k times r at or
// after from that can close, leaving content between; -1 if there is none. n is
// the opener's run length and openerBoth whether it could also close: as in
// CommonMark, when either run could both open and close, lengths summing to a
// multiple of 3 do not match (so src/**/*.go stays as written).
func findCloser(s []rune, from int, r rune, k, n int, openerBoth bool) int {
	for j := from; j < len(s); {
		if s[j] != r {
			j++
			continue
		}
		m := 1
		for j+m < len(s) && s[j+m] == r {
			m++
		}
		if m == k && j > from && canClose(s, j, m) {
			closerBoth := canOpen(s, j, m)
			if !((openerBoth || closerBoth) && (n+m)%3 == 0 && (n%3 != 0 || m%3 != 0)) {
				return j
			}
		}
		j += m
	}
	return -1
}

// before and after are the runes around a run; ' ' at the edges of the line.
func around(s []rune, i, n int) (before, after rune) {
	before, after = ' ', ' '
	if i > 0 {
		before = s[i-1]
	}
	if i+n < len(s) {
		after = s[i+n]
	}
	return before, after
}

func canOpen(s []rune, i, n int) bool {
	before, after := around(s, i, n)
	left := leftFlanking(before, after)
	if s[i] == '_' {
		return left && (!rightFlanking(before, after) || isPunct(before))
	}
	return left
}

func canClose(s []rune, i, n int) bool {
	before, after := around(s, i, n)
	right := rightFlanking(before, after)
	if s[i] == '_' {
		return right && (!leftFlanking(before, after) || isPunct(after))
	}
	return right
}

func leftFlanking(before, after rune) bool {
	return !unicode.IsSpace(after) && (!isPunct(after) || unicode.IsSpace(before) || isPunct(before))
}

func rightFlanking(before, after rune) bool {
	return !unicode.IsSpace(before) && (!isPunct(before) || unicode.IsSpace(after) || isPunct(after))
}

// isPunct counts placeholders (code, links) as letters, not punctuation.
func isPunct(r rune) bool {
	if r >= atomBase && r <= atomMax {
		return false
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}
