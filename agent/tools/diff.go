package tools

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// unifiedDiff renders the change from oldText to newText as a unified diff with
// three lines of context, and returns the first changed line of the new text
// (1-based; 0 when nothing changed).
//
// The diff is go-udiff's (the Go team's x/tools diff, kept as a library): it
// writes "\ No newline at end of file" and keeps a line's "\r", so `git apply`
// of the patch the model is shown gives exactly the new text. Its line-diff
// bounds its own work, so a rewrite of a large file stays cheap (a non-minimal
// but correct diff).
func unifiedDiff(name, oldText, newText string) (string, int) {
	if oldText == newText {
		return "", 0
	}
	// Only the changed middle goes to the differ: an edit changes a few lines
	// of a file, and the shared head and tail (less the context lines) cannot
	// be part of any hunk. This keeps a one-line edit of a 5,000-line file at
	// the cost of the lines it changes.
	a, b, skipped := trimCommonLines(oldText, newText, udiff.DefaultContextLines)
	u, err := udiff.ToUnifiedDiff("a/"+name, "b/"+name, a, udiff.Lines(a, b), udiff.DefaultContextLines)
	if err != nil || len(u.Hunks) == 0 {
		// Cannot happen: the edits come from the same texts.
		return "", 0
	}
	for _, h := range u.Hunks {
		h.FromLine += skipped
		h.ToLine += skipped
	}
	return u.String(), firstChangedLine(u.Hunks[0], newText)
}

// trimCommonLines removes the whole lines a and b share at their start and
// end, except keep lines next to the change, and returns the middles and the
// number of lines removed from the start. The tail removed ends both texts the
// same way, so a missing final newline stays in what is removed or in both
// middles.
func trimCommonLines(a, b string, keep int) (string, string, int) {
	// Head: whole lines (ending in '\n') equal in both.
	var starts []int // offsets of the lines of the shared head
	head := 0
	for {
		i := strings.IndexByte(a[head:], '\n')
		if i < 0 || head+i >= len(b) || a[head:head+i+1] != b[head:head+i+1] {
			break
		}
		starts = append(starts, head)
		head += i + 1
	}
	skipped := max(len(starts)-keep, 0)
	if skipped > 0 {
		head = starts[skipped]
	} else {
		head = 0
	}
	// Tail: the common suffix of what is left, from a line start on.
	n := 0
	for n < len(a)-head && n < len(b)-head && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	ta, tb := len(a)-n, len(b)-n
	for ta < len(a) && !((ta == head || a[ta-1] == '\n') && (tb == head || b[tb-1] == '\n')) {
		ta++
		tb++
	}
	// Give keep lines of the tail back as context.
	for range keep {
		if ta == len(a) {
			break
		}
		i := strings.IndexByte(a[ta:], '\n')
		if i < 0 {
			ta, tb = len(a), len(b)
			break
		}
		ta += i + 1
		tb += i + 1
	}
	return a[head:ta], b[head:tb], skipped
}

// firstChangedLine is the line of the new text where the first hunk's first
// change is: an added line, or where lines were removed (at most the new
// text's last line).
func firstChangedLine(h *udiff.Hunk, newText string) int {
	line := h.ToLine
	for _, l := range h.Lines {
		if l.Kind != udiff.Equal {
			break
		}
		line++
	}
	n := strings.Count(newText, "\n")
	if newText != "" && !strings.HasSuffix(newText, "\n") {
		n++
	}
	return min(line, max(n, 1))
}
