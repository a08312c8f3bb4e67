// Package truncate cuts tool output to what a model can take: at most MaxLines
// lines and MaxBytes bytes, whichever limit is hit first.
//
// The rules are pi's (packages/coding-agent/src/core/tools/truncate.ts), so the
// same output is cut at the same place: text is split on "\n", a trailing newline
// therefore counts as one more (empty) line, and the newline joining two kept lines
// counts as a byte. Head keeps whole lines from the start and keeps nothing when the
// first line alone is over the byte limit (the caller says so instead). Tail keeps
// whole lines from the end, except when the last line alone is over the byte limit:
// then it keeps that line's last MaxBytes bytes, cut forward to a UTF-8 boundary.
//
// All functions are pure and safe for concurrent use. Sizes are UTF-8 bytes.
package truncate

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	// MaxLines is the default line limit of a tool result.
	MaxLines = 2000
	// MaxBytes is the default byte limit of a tool result (50 KB).
	MaxBytes = 50 * 1024
	// MaxLineChars is how many characters of one grep line are shown.
	MaxLineChars = 500
)

// By says which limit cut the text.
type By string

const (
	ByNone  By = ""
	ByLines By = "lines"
	ByBytes By = "bytes"
)

// Result is a cut text and the facts a notice needs.
type Result struct {
	Content     string `json:"-"`
	Truncated   bool   `json:"truncated"`
	By          By     `json:"truncatedBy,omitempty"`
	TotalLines  int    `json:"totalLines"`
	TotalBytes  int    `json:"totalBytes"`
	OutputLines int    `json:"outputLines"`
	OutputBytes int    `json:"outputBytes"`
	// LastLinePartial is set by Tail when only the end of the last line is kept.
	LastLinePartial bool `json:"lastLinePartial,omitempty"`
	// FirstLineTooLong is set by Head when the first line alone is over MaxBytes.
	FirstLineTooLong bool `json:"firstLineExceedsLimit,omitempty"`
	MaxLines         int  `json:"maxLines"`
	MaxBytes         int  `json:"maxBytes"`
}

// Limits overrides the defaults; a zero field means the default.
type Limits struct {
	MaxLines int
	MaxBytes int
}

func (l Limits) orDefault() Limits {
	if l.MaxLines <= 0 {
		l.MaxLines = MaxLines
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = MaxBytes
	}
	return l
}

// Head keeps the first lines of s that fit both limits.
func Head(s string, lim Limits) Result {
	lim = lim.orDefault()
	lines := strings.Split(s, "\n")
	r := Result{TotalLines: len(lines), TotalBytes: len(s), MaxLines: lim.MaxLines, MaxBytes: lim.MaxBytes}
	if len(lines) <= lim.MaxLines && len(s) <= lim.MaxBytes {
		r.Content, r.OutputLines, r.OutputBytes = s, len(lines), len(s)
		return r
	}
	r.Truncated = true
	if len(lines[0]) > lim.MaxBytes {
		r.By, r.FirstLineTooLong = ByBytes, true
		return r
	}
	n, size := 0, 0
	r.By = ByLines
	for n < len(lines) && n < lim.MaxLines {
		add := len(lines[n])
		if n > 0 {
			add++ // the newline before it
		}
		if size+add > lim.MaxBytes {
			r.By = ByBytes
			break
		}
		size += add
		n++
	}
	r.Content = s[:size]
	r.OutputLines, r.OutputBytes = n, size
	return r
}

// Tail keeps the last lines of s that fit both limits.
func Tail(s string, lim Limits) Result {
	lim = lim.orDefault()
	lines := strings.Split(s, "\n")
	r := Result{TotalLines: len(lines), TotalBytes: len(s), MaxLines: lim.MaxLines, MaxBytes: lim.MaxBytes}
	if len(lines) <= lim.MaxLines && len(s) <= lim.MaxBytes {
		r.Content, r.OutputLines, r.OutputBytes = s, len(lines), len(s)
		return r
	}
	r.Truncated = true
	r.By = ByLines
	n, size := 0, 0
	for i := len(lines) - 1; i >= 0 && n < lim.MaxLines; i-- {
		add := len(lines[i])
		if n > 0 {
			add++
		}
		if size+add > lim.MaxBytes {
			r.By = ByBytes
			if n == 0 {
				r.Content = BytesFromEnd(lines[i], lim.MaxBytes)
				r.OutputLines, r.OutputBytes = 1, len(r.Content)
				r.LastLinePartial = true
				return r
			}
			break
		}
		size += add
		n++
	}
	r.Content = s[len(s)-size:]
	r.OutputLines, r.OutputBytes = n, size
	return r
}

// BytesFromEnd returns the longest suffix of s of at most max bytes that starts
// on a UTF-8 character boundary.
func BytesFromEnd(s string, max int) string {
	if len(s) <= max {
		return s
	}
	start := len(s) - max
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[start:]
}

// Line shortens one line to at most max characters (runes), marking the cut.
// It reports whether it cut.
func Line(s string, max int) (string, bool) {
	if max <= 0 {
		max = MaxLineChars
	}
	if len(s) <= max || utf8.RuneCountInString(s) <= max {
		return s, false
	}
	i, n := 0, 0
	for i < len(s) && n < max {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
		n++
	}
	return s[:i] + "… [line cut]", true
}

// FormatSize renders a byte count the way notices show it: 512B, 50.0KB, 1.5MB.
func FormatSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1fKB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1fMB", float64(n)/(1024*1024))
	}
}
