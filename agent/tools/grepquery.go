package tools

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// grepQuery is a compiled search. Most files are rejected by bytes.Index on a
// literal every match must contain, before the regexp runs; when the pattern is
// nothing but that literal, the regexp never runs at all.
type grepQuery struct {
	re      *regexp.Regexp
	lit     []byte // required literal, lower-cased when fold is set; nil if none
	rare    int    // offset in lit of its rarest byte, which the search keys on
	fold    bool   // compare lit ASCII-case-insensitively
	litOnly bool   // a line matches iff it holds lit
	// window, when > 0, bounds how far a match reaches on either side of the
	// literal: the regexp then runs on that window only, not the whole line.
	// Set only for patterns of bounded length without anchors or \b, whose
	// matches do not depend on what surrounds them.
	window int
}

func compileGrep(pattern string, literal, ignoreCase bool) (*grepQuery, error) {
	expr := pattern
	if literal {
		expr = regexp.QuoteMeta(pattern)
	}
	flags := "(?m)"
	if ignoreCase {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + expr)
	if err != nil {
		if _, perr := regexp.Compile(expr); perr != nil {
			err = perr // the message then quotes the pattern as the model wrote it
		}
		msg := err.Error()
		if !literal {
			msg += " (Go RE2 syntax; set literal=true to search for the text as it is)"
		}
		return nil, fmt.Errorf("invalid pattern: %s", msg)
	}
	q := &grepQuery{re: re}
	sflags := syntax.Perl
	if ignoreCase {
		sflags |= syntax.FoldCase
	}
	parsed, err := syntax.Parse(expr, sflags)
	if err != nil {
		return q, nil
	}
	parsed = parsed.Simplify()
	lit := requiredLiteral(parsed, ignoreCase)
	if lit == "" || strings.ContainsAny(lit, "\n") {
		return q, nil
	}
	if ignoreCase {
		for i := 0; i < len(lit); i++ {
			if lit[i] >= utf8.RuneSelf {
				return q, nil // non-ASCII folding is left to the regexp
			}
		}
		q.fold = true
		lit = strings.ToLower(lit)
	}
	q.lit = []byte(lit)
	q.rare = rarestByte(q.lit)
	q.litOnly = parsed.Op == syntax.OpLiteral && (parsed.Flags&syntax.FoldCase != 0) == ignoreCase
	// A match holds the literal, so it reaches at most width-len(lit) bytes
	// beyond it on either side.
	if w := maxWidth(parsed); w >= len(lit) && w-len(lit) <= 256 {
		q.window = max(w-len(lit), 1)
	}
	return q, nil
}

// maxWidth is the most bytes a match of re can span, or -1 when that is
// unbounded or the match depends on its surroundings (anchors, \b).
func maxWidth(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return 0
	case syntax.OpLiteral:
		w := 0
		for _, r := range re.Rune {
			switch {
			case re.Flags&syntax.FoldCase != 0 && (r == 'k' || r == 'K' || r == 's' || r == 'S'):
				w += 3 // folds to the Kelvin sign or the long s
			case re.Flags&syntax.FoldCase != 0 && r >= utf8.RuneSelf:
				w += utf8.UTFMax // its fold partners may be longer
			default:
				w += utf8.RuneLen(r)
			}
		}
		return w
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return utf8.RuneLen(min(re.Rune[len(re.Rune)-1], unicode.MaxRune)) // ranges are sorted, fold partners included
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxWidth(re.Sub[0])
	case syntax.OpRepeat:
		w := maxWidth(re.Sub[0])
		if re.Max < 0 || w < 0 {
			return -1
		}
		return re.Max * w
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, sub := range re.Sub {
			w := maxWidth(sub)
			if w < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				total += w
			} else {
				total = max(total, w)
			}
		}
		return total
	}
	return -1
}

// requiredLiteral returns the longest run of text every match of re contains,
// or "". Without fold, a case-folded literal (from an inline (?i)) does not
// count: an exact search for it would reject lines the regexp accepts. With
// fold, every literal counts, as the search is then case-insensitive anyway.
func requiredLiteral(re *syntax.Regexp, fold bool) string {
	switch re.Op {
	case syntax.OpLiteral:
		if !fold && re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0], fold)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0], fold)
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub, fold); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// Unicode letters whose case folding reaches ASCII 'k' and 's': a file holding
// them cannot be pre-filtered by ASCII lower-casing.
var (
	kelvin   = []byte("\u212a")
	longS    = []byte("\u017f")
	foldBusy = []byte("ks")
)

// lines calls emit with the bounds of every line of buf that matches, in order,
// until emit returns false.
func (q *grepQuery) lines(buf, lower []byte, emit func(start, end int) bool) {
	if q.lit != nil && !(q.fold && bytes.ContainsAny(q.lit, string(foldBusy)) && (bytes.Contains(buf, kelvin) || bytes.Contains(buf, longS))) {
		hay := buf
		if q.fold {
			hay = lower
		}
		for pos := 0; pos <= len(buf); {
			i := q.index(hay, pos)
			if i < 0 {
				return
			}
			start := bytes.LastIndexByte(buf[pos:i], '\n') + 1 + pos
			end := lineEnd(buf, i)
			if q.litOnly || q.matchLine(hay, buf, start, end, i) {
				if !emit(start, end) {
					return
				}
			}
			pos = end + 1
		}
		return
	}
	for pos := 0; pos <= len(buf); {
		loc := q.re.FindIndex(buf[pos:])
		if loc == nil {
			return
		}
		s, e := pos+loc[0], pos+loc[1]
		start := bytes.LastIndexByte(buf[pos:s], '\n') + 1 + pos
		end := lineEnd(buf, s)
		if e <= end || q.re.Match(buf[start:end]) {
			if !emit(start, end) {
				return
			}
		}
		pos = end + 1
	}
}

// index returns the first offset at or after pos where hay holds the
// literal, or -1. It scans for the literal's rarest byte (memchr speed) and
// compares only there: a lower-cased needle such as "errnotfound" would stop
// bytes.Index on nearly every "e" of the text.
func (q *grepQuery) index(hay []byte, pos int) int {
	n, r := len(q.lit), q.rare
	c := q.lit[r]
	for pos+n <= len(hay) {
		j := bytes.IndexByte(hay[pos+r:len(hay)-n+r+1], c)
		if j < 0 {
			return -1
		}
		start := pos + j
		if bytes.Equal(hay[start:start+n], q.lit) {
			return start
		}
		pos = start + 1
	}
	return -1
}

// byteRank orders bytes from most to least common in source code and prose;
// bytes not listed are rarer still.
const byteRank = " etaonisr\nlcdu\thpm.f(_)g,=\"bySETyIAvRNwCx/OL:;DPk{}MF0T1-*'Bj2U[]HG3V<>&q+W!z4589|67JKQXYZ#%$@?~`^\\"

var rank = func() (r [256]byte) {
	for i := range r {
		r[i] = 255
	}
	for i := 0; i < len(byteRank); i++ {
		r[byteRank[i]] = byte(i)
	}
	return r
}()

// rarestByte is the offset of the least common byte of lit.
func rarestByte(lit []byte) int {
	best := 0
	for i, c := range lit {
		if rank[c] > rank[lit[best]] {
			best = i
		}
	}
	return best
}

// matchLine runs the regexp on the line [start, end) of buf, in which hay
// (buf or its lower-cased copy) holds the literal at i.
func (q *grepQuery) matchLine(hay, buf []byte, start, end, i int) bool {
	if q.window == 0 {
		return q.re.Match(buf[start:end])
	}
	// Every match holds some occurrence of the literal and spans at most
	// window bytes, so it lies within window bytes of one: try each.
	for i >= 0 {
		if q.re.Match(buf[max(start, i-q.window):min(end, i+len(q.lit)+q.window)]) {
			return true
		}
		next := q.index(hay[:end], i+1)
		if next < 0 {
			return false
		}
		i = next
	}
	return false
}

func lineEnd(buf []byte, i int) int {
	if j := bytes.IndexByte(buf[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(buf)
}

// asciiLower writes src to dst with A-Z lower-cased, eight bytes at a time.
// Bytes with the high bit set (non-ASCII) are left alone.
func asciiLower(dst, src []byte) {
	const ones = 0x0101010101010101
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		low := w & (0x7f * ones)
		atLeastA := low + (0x80-'A')*ones // high bit set where byte >= 'A'
		aboveZ := low + (0x80-'Z'-1)*ones // high bit set where byte > 'Z'
		upper := atLeastA &^ aboveZ &^ w & (0x80 * ones)
		binary.LittleEndian.PutUint64(dst[i:], w|upper>>2)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}
