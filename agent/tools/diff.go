package tools

import (
	"fmt"
	"strings"
)

// maxDiffEdits bounds the Myers search, whose memory grows with the square of
// the number of changed lines. Past it the changed middle is shown as removed
// and re-added: still a correct diff, just not a minimal one.
const maxDiffEdits = 1000

type diffKind byte

const (
	diffEqual  diffKind = ' '
	diffDelete diffKind = '-'
	diffInsert diffKind = '+'
)

type diffOp struct {
	kind diffKind
	a, b int // line indexes in old and new (the one not used by the kind is the position)
}

// splitLines splits text into lines for a diff; a final newline ends the last
// line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// unifiedDiff renders the change from oldText to newText as a unified diff with
// three lines of context, and returns the first changed line of the new text
// (1-based; 0 when nothing changed).
func unifiedDiff(name, oldText, newText string) (string, int) {
	a, b := splitLines(oldText), splitLines(newText)
	ops := diffLines(a, b)
	first := 0
	for _, op := range ops {
		if op.kind != diffEqual {
			first = min(op.b+1, max(len(b), 1))
			break
		}
	}
	if first == 0 {
		return "", 0
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == diffEqual {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines after
		// the last change that is at most 2*context equal lines further on.
		start := max(i-context, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != diffEqual {
				end = j + 1
				continue
			}
			if j-end >= 2*context {
				break
			}
		}
		end = min(end+context, len(ops))
		aStart, bStart := ops[start].a, ops[start].b
		var aLen, bLen int
		for _, op := range ops[start:end] {
			if op.kind != diffInsert {
				aLen++
			}
			if op.kind != diffDelete {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			line := ""
			if op.kind == diffInsert {
				line = b[op.b]
			} else {
				line = a[op.a]
			}
			out.WriteByte(byte(op.kind))
			out.WriteString(strings.TrimSuffix(line, "\r"))
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String(), first
}

func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// diffLines returns an edit script from a to b: Myers' algorithm on the lines
// between the common prefix and suffix.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b))
	for i := range pre {
		ops = append(ops, diffOp{diffEqual, i, i})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre)...)
	for i := range suf {
		ops = append(ops, diffOp{diffEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers computes a shortest edit script of a to b; line indexes are offset by
// off (the common prefix).
func myers(a, b []string, off int) []diffOp {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(n, m, off)
	}
	limit := min(n+m, maxDiffEdits)
	v := make([]int, 2*limit+3)
	o := limit + 1 // v[o+k] is the furthest x on diagonal k
	var trace [][]int
	for d := 0; d <= limit; d++ {
		snap := make([]int, 2*d+1) // v for k in [-d, d], as left by step d-1
		copy(snap, v[o-d:o+d+1])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[o+k-1] < v[o+k+1]) {
				x = v[o+k+1]
			} else {
				x = v[o+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[o+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m, off)
			}
		}
	}
	return replaceAll(n, m, off)
}

func backtrack(trace [][]int, n, m, off int) []diffOp {
	var ops []diffOp
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		snap := trace[d]
		at := func(k int) int { return snap[k+d] }
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			ops = append(ops, diffOp{diffEqual, off + x, off + y})
		}
		if x == prevX {
			ops = append(ops, diffOp{diffInsert, off + x, off + y - 1})
		} else {
			ops = append(ops, diffOp{diffDelete, off + x - 1, off + y})
		}
		x, y = prevX, prevY
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		ops = append(ops, diffOp{diffEqual, off + x, off + y})
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}

// replaceAll is the script that deletes all of a and inserts all of b.
func replaceAll(n, m, off int) []diffOp {
	ops := make([]diffOp, 0, n+m)
	for i := range n {
		ops = append(ops, diffOp{diffDelete, off + i, off})
	}
	for j := range m {
		ops = append(ops, diffOp{diffInsert, off + n, off + j})
	}
	return ops
}
