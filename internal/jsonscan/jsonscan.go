// Package jsonscan finds the end of a JSON string 64 bytes at a time.
//
// The strings of a conversation are code and tool output, with an escape
// every 14–30 bytes. A loop that stops at each escape spends most of its
// time on branches it cannot predict and on a chain of dependent steps (the
// next position is known only once the escape has been looked at). Here the
// backslashes, quotes and control characters of 64 bytes become three bit
// masks, the escaped characters follow from the backslashes by arithmetic
// (the method of simdjson's escape scanner), and the string's end is the
// first quote that is not escaped: the work per block is the same wherever
// the escapes are. Only the escaped characters themselves are looked at one
// by one, to check them and to count the ones a caller needs counted.
//
// Pure Go, no unsafe: eight-byte words and integer arithmetic.
package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

const (
	ones  = 0x0101010101010101
	lows  = 0x7f7f7f7f7f7f7f7f
	highs = 0x8080808080808080
)

// Str is what String learned about a string's content.
type Str struct {
	// Escapes says the content has escapes.
	Escapes bool
	// NonASCII says the content may hold bytes ≥ 0x80, which String does not
	// check to be UTF-8. It may be set for a string that has none (bytes
	// after the string's end were looked at).
	NonASCII bool
	// U says the content has \u escapes (each with four hex digits).
	U bool
	// Slashes counts the \/ escapes.
	Slashes int
}

// Escape kinds, by the byte after the backslash, as bits.
const (
	escOne   = 1 // \" \\ \b \f \n \r \t: one character, written as two bytes
	escSlash = 2 // \/
	escU     = 4 // \uXXXX
	escBad   = 8 // not an escape
)

var escKind = func() (t [256]uint8) {
	for c := range t {
		t[c] = escBad
	}
	for _, c := range `"\\bfnrt` {
		t[c] = escOne
	}
	t['/'], t['u'] = escSlash, escU
	return t
}()

// quotes fill the rest of the last block.
var quotes = [64]byte{'"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"',
	'"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"',
	'"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"',
	'"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"', '"'}

// String returns the index in src of the closing quote of the JSON string
// whose content starts at src[i] (just after its opening quote), and what
// the content holds; or -1 when the string is not valid JSON: it does not
// end in src, or it holds a control character, an escape JSON does not
// have, or \u without four hex digits. The content's UTF-8 is not checked.
func String(src []byte, i int) (int, Str) {
	var s Str
	hi := uint64(0) // the OR of plain bytes looked at: its high bits say non-ASCII
	// Most strings of a message (keys, names, ids, paths) end within a few
	// words: those are read a word at a time first, which costs less than a
	// block when the quote comes soon.
	for k := 0; k < 2 && i+8 <= len(src); k++ {
		w := binary.LittleEndian.Uint64(src[i:])
		m := special(w)
		if m == 0 {
			hi |= w
			i += 8
			continue
		}
		// The bytes before the first special one (and that one's low
		// seven bits, which never set a high bit).
		hi |= w & (m&-m - 1)
		j := bits.TrailingZeros64(m) >> 3
		if src[i+j] == '"' {
			s.NonASCII = hi&highs != 0
			return i + j, s
		}
		i += j // a backslash or a control character: the blocks see it
		break
	}
	var carry uint64 // 1 when src[i] is escaped by a backslash before it
	var pad [64]byte
	for i < len(src) {
		b := src[i:]
		if len(b) < 64 {
			// The last block: quotes after the input end the scan, and a
			// string "ending" there is not closed.
			copy(pad[copy(pad[:], b):], quotes[:])
			b = pad[:]
		}
		b = b[:64]
		bs, q, ctl, or := masks(b)
		escaped := resolve(bs, &carry)
		ends := q &^ escaped
		inside := ^uint64(0)
		if n := len(src) - i; n < 64 {
			inside = 1<<n - 1
		}
		if ends != 0 {
			if i+bits.TrailingZeros64(ends) >= len(src) {
				return -1, s
			}
			inside = ends&-ends - 1
		}
		if ctl != 0 && ctlMask(b)&inside != 0 {
			return -1, s
		}
		hi |= or
		if e := escaped & inside; e != 0 {
			s.Escapes = true
			// What the escaped characters are: one table look-up each
			// (b[k] is src[i+k]), the rare kinds looked at again after
			// the loop.
			var kinds uint8
			for ; e != 0; e &= e - 1 {
				kinds |= escKind[b[bits.TrailingZeros64(e)&63]]
			}
			if kinds&^escOne != 0 {
				if kinds&escBad != 0 {
					return -1, s
				}
				for e := escaped & inside; e != 0; e &= e - 1 {
					switch k := bits.TrailingZeros64(e); b[k&63] {
					case '/':
						s.Slashes++
					case 'u':
						if !hex4(src[i+k+1:]) {
							return -1, s
						}
						s.U = true
					}
				}
			}
		}
		if ends != 0 {
			s.NonASCII = hi&highs != 0
			return i + bits.TrailingZeros64(ends), s
		}
		i += 64
	}
	return -1, s
}

// special returns a word with the high bit set in each byte of w that is a
// quote, a backslash or a control character; exactly those (no borrows). A
// byte is a quote or a control character when, with its bit 1 flipped, it
// is below 0x21 (the flip moves the quote to 0x20 and keeps 0x00–0x1f below
// it): one test for both.
func special(w uint64) uint64 {
	x := w ^ (ones * 0x02)
	return ^((x&lows+ones*(0x80-0x21))|x)&highs | zeros(w^(ones*'\\'))
}

// FirstSpecial returns, for eight bytes of a string, a word whose lowest set
// bit is the high bit of the first quote, backslash or control character
// (bits above it may be set by borrows): cheaper than special for a loop
// that wants only the first. A byte is a quote or a control character when,
// with its bit 1 flipped, it is below 0x21 (the flip moves the quote to 0x20
// and keeps 0x00–0x1f below it): one test for both.
func FirstSpecial(w uint64) uint64 {
	x, b := w^(ones*0x02), w^(ones*'\\')
	return ((x-ones*0x21)&^x | (b-ones)&^b) & highs
}

// zeros sets the high bit of each zero byte of x, exactly: adding 0x7f to a
// byte's low bits reaches its high bit unless they are all clear.
func zeros(x uint64) uint64 {
	return ^((x&lows + lows) | x) & highs
}

// controls sets the high bit of each byte of w below 0x20.
func controls(w uint64) uint64 {
	return ^((w&lows + ones*0x60) | w) & highs
}

// movemask gathers the high bits of h's bytes into its lowest eight bits
// (byte k's into bit k): each lands on its own bit of the product's top
// byte, and no two partial products share a bit, so nothing carries.
func movemask(h uint64) uint64 {
	return (h >> 7) * 0x0102040810204080 >> 56
}

// masks returns the bit masks (bit k for b[k]) of b's first 64 bytes'
// backslashes and quotes, whether any is a control character (ctl's high
// bits), and the OR of the bytes.
func masks(b []byte) (bs, q, ctl, or uint64) {
	_ = b[63]
	w0, w1 := binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
	w2, w3 := binary.LittleEndian.Uint64(b[16:24]), binary.LittleEndian.Uint64(b[24:32])
	w4, w5 := binary.LittleEndian.Uint64(b[32:40]), binary.LittleEndian.Uint64(b[40:48])
	w6, w7 := binary.LittleEndian.Uint64(b[48:56]), binary.LittleEndian.Uint64(b[56:64])
	const bsl, quo = ones * '\\', ones * '"'
	bs = movemask(zeros(w0^bsl)) | movemask(zeros(w1^bsl))<<8 |
		movemask(zeros(w2^bsl))<<16 | movemask(zeros(w3^bsl))<<24 |
		movemask(zeros(w4^bsl))<<32 | movemask(zeros(w5^bsl))<<40 |
		movemask(zeros(w6^bsl))<<48 | movemask(zeros(w7^bsl))<<56
	q = movemask(zeros(w0^quo)) | movemask(zeros(w1^quo))<<8 |
		movemask(zeros(w2^quo))<<16 | movemask(zeros(w3^quo))<<24 |
		movemask(zeros(w4^quo))<<32 | movemask(zeros(w5^quo))<<40 |
		movemask(zeros(w6^quo))<<48 | movemask(zeros(w7^quo))<<56
	ctl = controls(w0) | controls(w1) | controls(w2) | controls(w3) |
		controls(w4) | controls(w5) | controls(w6) | controls(w7)
	or = w0 | w1 | w2 | w3 | w4 | w5 | w6 | w7
	return bs, q, ctl, or
}

// ctlMask is the bit mask of b's first 64 bytes that are control characters.
func ctlMask(b []byte) uint64 {
	_ = b[63]
	var m uint64
	for k := 0; k < 8; k++ {
		m |= movemask(controls(binary.LittleEndian.Uint64(b[8*k:]))) << (8 * k)
	}
	return m
}

// resolve returns the mask of the characters escaped by a backslash, given
// the mask of backslashes in a block and carry, 1 when the block's first
// character is escaped by the previous block's last backslash; carry is set
// for the next block. A run of backslashes escapes its every second
// character from its start, and the character after the run when its length
// is odd: subtracting each run from a pattern of odd bits (a run starting on
// an even bit borrows differently from one starting on an odd bit) marks
// those characters without a loop (simdjson's escape scanner).
func resolve(bs uint64, carry *uint64) uint64 {
	const odd = 0xAAAAAAAAAAAAAAAA
	potential := bs &^ *carry // an escaped backslash escapes nothing
	code := ((potential<<1 | odd) - potential) ^ odd
	escaped := code ^ (bs | *carry)
	*carry = (code & bs) >> 63
	return escaped
}

// hex4 reports whether b starts with four hex digits.
func hex4(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	return isHex[b[0]] && isHex[b[1]] && isHex[b[2]] && isHex[b[3]]
}

var isHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()
