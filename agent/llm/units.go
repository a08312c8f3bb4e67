package llm

import (
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// UTF16Len is the length of s in UTF-16 code units, JavaScript's
// String#length, which is what pi's token estimate counts. Bytes that are
// not valid UTF-8 count one unit each, as the U+FFFD a JavaScript decoder
// would put in their place (a decoder may merge a run into one; close
// enough).
func UTF16Len(s string) int {
	adjust, nonASCII := utf8Units(s)
	if !nonASCII || utf8.ValidString(s) {
		return len(s) + adjust
	}
	n := 0
	for _, r := range s {
		n += runeUnits(r)
	}
	return n
}

// UTF16LenBytes is UTF16Len of b.
func UTF16LenBytes(b []byte) int {
	if n, ok := ValidUTF16Len(b); ok {
		return n
	}
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		n += runeUnits(r)
		b = b[size:]
	}
	return n
}

// ValidUTF16Len returns UTF16LenBytes(b) and true when b is valid UTF-8, and
// false (with no length) when it is not: a decoder that must check its
// strings anyway learns their length from the same call.
func ValidUTF16Len(b []byte) (int, bool) {
	adjust, nonASCII := utf8Units(b)
	if nonASCII && !utf8.Valid(b) {
		return 0, false
	}
	return len(b) + adjust, true
}

func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// utf8Units returns what the UTF-16 length of s differs from its byte length
// by, if s is valid UTF-8, and whether s has bytes ≥ 0x80 at all.
//
// For valid UTF-8 the difference is 4-byte leads (which become surrogate
// pairs) − continuation bytes, and both are counted eight bytes at a time;
// most text is ASCII, which skips 64 bytes a step. The words are read with
// constant offsets after one length check, so the loop has no bounds checks.
func utf8Units[T ~string | ~[]byte](s T) (adjust int, nonASCII bool) {
	const highs = 0x8080808080808080
	for len(s) >= 64 {
		w0, w1, w2, w3 := le64(s[0:8]), le64(s[8:16]), le64(s[16:24]), le64(s[24:32])
		w4, w5, w6, w7 := le64(s[32:40]), le64(s[40:48]), le64(s[48:56]), le64(s[56:64])
		if (w0|w1|w2|w3|w4|w5|w6|w7)&highs != 0 {
			nonASCII = true
			adjust += UTF8Adjust(w0) + UTF8Adjust(w1) + UTF8Adjust(w2) + UTF8Adjust(w3) +
				UTF8Adjust(w4) + UTF8Adjust(w5) + UTF8Adjust(w6) + UTF8Adjust(w7)
		}
		s = s[64:]
	}
	if !nonASCII && len(s) >= 8 {
		// ASCII so far: the rest is too when its words and its last
		// eight bytes (read again in part) are, which spares the byte
		// loop below and its branches.
		w := le64(s[len(s)-8:])
		for t := s; len(t) >= 8; t = t[8:] {
			w |= le64(t[0:8])
		}
		if w&highs == 0 {
			return 0, false
		}
	}
	for len(s) >= 8 {
		if w := le64(s[0:8]); w&highs != 0 {
			nonASCII = true
			adjust += UTF8Adjust(w)
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 {
			nonASCII = true
			if c < 0xC0 {
				adjust--
			} else if c >= 0xF0 {
				adjust++
			}
		}
	}
	return adjust, nonASCII
}

// le64 reads eight bytes of s as a little-endian word (the compiler makes it
// one load).
func le64[T ~string | ~[]byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// UTF8Adjust is, for eight bytes of UTF-8 read as a little-endian word, the
// number of 4-byte leads minus the number of continuation bytes: what their
// UTF-16 length differs from their byte length by.
func UTF8Adjust(w uint64) int {
	const highs = 0x8080808080808080
	// Shifting left by k moves bit 7−k of each byte to bit 7 (bits do not
	// cross into the next byte's bit 7).
	cont := w &^ (w << 1) & highs                       // 10xxxxxx
	lead4 := w & (w << 1) & (w << 2) & (w << 3) & highs // 1111xxxx
	return bits.OnesCount64(lead4) - bits.OnesCount64(cont)
}

// units is a text's UTF-16 length carried with the text: n+1 (0 when not
// known), and the text it was counted for, by its first byte's address and
// its length. Strings are immutable, so a text with both is that text; any
// other (another of the same length, a prefix of it) is counted again.
type units struct {
	p        *byte
	n, bytes uint32
}

func (u units) get(s string) (int, bool) {
	if u.n == 0 || int(u.bytes) != len(s) || u.p != unsafe.StringData(s) {
		return 0, false
	}
	return int(u.n - 1), true
}

func newUnits(s string, n int) units {
	if n < 0 || n >= 1<<32-1 || len(s) == 0 || len(s) >= 1<<32 {
		return units{}
	}
	return units{p: unsafe.StringData(s), n: uint32(n + 1), bytes: uint32(len(s))}
}

// TextUnits is UTF16Len(c.Text): the length its decoder carried with it
// (SetTextUnits), else counted.
func (c *Content) TextUnits() int {
	if n, ok := c.textUnits.get(c.Text); ok {
		return n
	}
	return UTF16Len(c.Text)
}

// ThinkingUnits is UTF16Len(c.Thinking), carried (SetThinkingUnits) or counted.
func (c *Content) ThinkingUnits() int {
	if n, ok := c.thinkingUnits.get(c.Thinking); ok {
		return n
	}
	return UTF16Len(c.Thinking)
}

// SetTextUnits records n as UTF16Len(c.Text), for a decoder that learned it
// while reading the text; it holds while Text is that same string.
func (c *Content) SetTextUnits(n int) { c.textUnits = newUnits(c.Text, n) }

// SetThinkingUnits records n as UTF16Len(c.Thinking), as SetTextUnits.
func (c *Content) SetThinkingUnits(n int) { c.thinkingUnits = newUnits(c.Thinking, n) }

// WithoutUnits returns m with no carried text lengths (the Content slice
// copied when it had any): messages that differ only in what their decoder
// carried compare equal after it.
func (m Message) WithoutUnits() Message {
	for i := range m.Content {
		if m.Content[i].textUnits != (units{}) || m.Content[i].thinkingUnits != (units{}) {
			m.Content = append([]Content(nil), m.Content...)
			for j := range m.Content {
				m.Content[j].textUnits, m.Content[j].thinkingUnits = units{}, units{}
			}
			break
		}
	}
	return m
}
