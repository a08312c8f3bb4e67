package tools

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// mapped is a transformed text that remembers where each of its bytes came
// from: byte i of s was produced from original bytes [from[i], to[i]). With it a
// match found in the transformed text is replaced in the original, and nothing
// outside the match is touched (pi re-normalizes the whole file instead).
type mapped struct {
	s        []byte
	from, to []int32
}

func identity(b []byte) mapped {
	m := mapped{s: b, from: make([]int32, len(b)), to: make([]int32, len(b))}
	for i := range b {
		m.from[i], m.to[i] = int32(i), int32(i+1)
	}
	return m
}

// emit appends out to dst as produced from m's bytes [i, j).
func (m *mapped) emit(dst *mapped, out []byte, i, j int) {
	for range out {
		dst.from = append(dst.from, m.from[i])
		dst.to = append(dst.to, m.to[j-1])
	}
	dst.s = append(dst.s, out...)
}

// lfOnly turns CRLF into LF: the model writes "\n" whatever the file uses.
func (m mapped) lfOnly() mapped {
	if bytes.IndexByte(m.s, '\r') < 0 {
		return m
	}
	out := mapped{s: make([]byte, 0, len(m.s)), from: make([]int32, 0, len(m.s)), to: make([]int32, 0, len(m.s))}
	for i := 0; i < len(m.s); i++ {
		if m.s[i] == '\r' && i+1 < len(m.s) && m.s[i+1] == '\n' {
			m.emit(&out, []byte{'\n'}, i, i+2)
			i++
			continue
		}
		m.emit(&out, m.s[i:i+1], i, i+1)
	}
	return out
}

// fuzzy applies the forgiving comparison: NFKC, typographic quotes, dashes and
// spaces as their ASCII forms, and the trailing whitespace of every line dropped.
func (m mapped) fuzzy() mapped {
	// NFKC segment by segment, so that each output segment maps to its source;
	// then the ASCII folding of the segment's runes.
	folded := mapped{s: make([]byte, 0, len(m.s)), from: make([]int32, 0, len(m.s)), to: make([]int32, 0, len(m.s))}
	// The iterator may hand out one source segment in several pieces, with
	// Pos advancing only after the last: gather pieces until it moves.
	var it norm.Iter
	var pending, seg []byte
	it.Init(norm.NFKC, m.s)
	for from := 0; !it.Done(); {
		pending = append(pending, it.Next()...)
		if to := it.Pos(); to > from {
			seg = foldASCII(seg[:0], pending)
			m.emit(&folded, seg, from, to)
			from, pending = to, pending[:0]
		}
	}
	// The trailing whitespace of each line.
	out := mapped{s: make([]byte, 0, len(folded.s)), from: make([]int32, 0, len(folded.s)), to: make([]int32, 0, len(folded.s))}
	for start := 0; ; {
		end := bytes.IndexByte(folded.s[start:], '\n')
		last := end < 0
		if last {
			end = len(folded.s)
		} else {
			end += start
		}
		keep := start + len(bytes.TrimRightFunc(folded.s[start:end], unicode.IsSpace))
		out.s = append(out.s, folded.s[start:keep]...)
		out.from = append(out.from, folded.from[start:keep]...)
		out.to = append(out.to, folded.to[start:keep]...)
		if last {
			return out
		}
		folded.emit(&out, []byte{'\n'}, end, end+1)
		start = end + 1
	}
}

// foldASCII appends seg to dst with typographic quotes, dashes and spaces
// replaced by their ASCII forms.
func foldASCII(dst, seg []byte) []byte {
	for len(seg) > 0 {
		r, w := utf8.DecodeRune(seg)
		switch r {
		case '\u2018', '\u2019', '\u201A', '\u201B':
			dst = append(dst, '\'')
		case '\u201C', '\u201D', '\u201E', '\u201F':
			dst = append(dst, '"')
		case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
			dst = append(dst, '-')
		case '\u00A0', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200A', '\u202F', '\u205F', '\u3000':
			dst = append(dst, ' ')
		default:
			dst = append(dst, seg[:w]...)
		}
		seg = seg[w:]
	}
	return dst
}

// span is a match in the original text: bytes [start, end).
type span struct{ start, end int }

// matchKind says how oldText was found.
type matchKind int

const (
	matchNone  matchKind = iota
	matchExact           // byte for byte, line endings aside
	matchFuzzy           // after the forgiving comparison
)

// locate finds oldText in content: exactly (CRLF read as LF) if it occurs
// there, else with the forgiving comparison. It returns the first match and the
// number of non-overlapping matches at the level where it was found; the caller
// wants exactly one.
func locate(content, oldText []byte) (span, int, matchKind) {
	needle := identity(oldText).lfOnly().s
	if len(needle) == 0 {
		return span{}, 0, matchNone
	}
	if bytes.IndexByte(content, '\r') < 0 {
		// The common case needs no map.
		if i := bytes.Index(content, needle); i >= 0 {
			return span{i, i + len(needle)}, 1 + bytes.Count(content[i+len(needle):], needle), matchExact
		}
	} else if sp, n := find(identity(content).lfOnly(), needle); n > 0 {
		return sp, n, matchExact
	}
	fuzzyNeedle := identity(oldText).lfOnly().fuzzy().s
	if sp, n := find(identity(content).lfOnly().fuzzy(), fuzzyNeedle); n > 0 {
		return sp, n, matchFuzzy
	}
	return span{}, 0, matchNone
}

func find(hay mapped, needle []byte) (span, int) {
	if len(needle) == 0 {
		return span{}, 0
	}
	i := bytes.Index(hay.s, needle)
	if i < 0 {
		return span{}, 0
	}
	n := 1 + bytes.Count(hay.s[i+len(needle):], needle)
	return span{int(hay.from[i]), int(hay.to[i+len(needle)-1])}, n
}
