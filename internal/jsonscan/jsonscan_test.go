package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// refString is String one byte at a time, the reference it must agree with.
func refString(src []byte, i int) (int, Str) {
	var s Str
	for i < len(src) {
		switch c := src[i]; {
		case c == '"':
			return i, s
		case c == '\\':
			if i+1 >= len(src) {
				return -1, s
			}
			s.Escapes = true
			switch escKind[src[i+1]] {
			case escBad:
				return -1, s
			case escSlash:
				s.Slashes++
			case escU:
				if !hex4(src[i+2:]) {
					return -1, s
				}
				s.U = true
			}
			i += 2
		case c < 0x20:
			return -1, s
		default:
			if c >= 0x80 {
				s.NonASCII = true
			}
			i++
		}
	}
	return -1, s
}

func check(t *testing.T, src []byte, i int) {
	t.Helper()
	wantEnd, want := refString(src, i)
	gotEnd, got := String(src, i)
	if gotEnd != wantEnd {
		t.Fatalf("String(%q, %d) ends at %d, want %d", src, i, gotEnd, wantEnd)
	}
	if wantEnd < 0 {
		return
	}
	// NonASCII may be set without need, never missed.
	if got.Escapes != want.Escapes || got.U != want.U || got.Slashes != want.Slashes || (want.NonASCII && !got.NonASCII) {
		t.Fatalf("String(%q, %d) = %+v, want %+v", src, i, got, want)
	}
}

// TestStringEveryPosition puts each kind of special byte, and runs of
// backslashes of every length, at every position across two blocks, with
// the string ending at every position after it.
func TestStringEveryPosition(t *testing.T) {
	specials := []string{`\"`, `\\`, `\n`, `\/`, `\u00e9`, `\u12`, `\x`, "\x01", "é", `\\\"`, `\\\\"`, `\\\\\\\"`, `"`}
	for _, sp := range specials {
		for pos := 0; pos < 140; pos++ {
			for _, tail := range []int{0, 1, 7, 8, 63, 64, 65} {
				src := []byte(strings.Repeat("a", pos) + sp + strings.Repeat("b", tail) + `"` + strings.Repeat("c", tail%9))
				check(t, src, 0)
				check(t, src[:len(src)-tail%9-1], 0) // not closed
			}
		}
	}
}

// TestStringBackslashRuns checks runs of backslashes of every length and
// parity across block boundaries, before a quote.
func TestStringBackslashRuns(t *testing.T) {
	for pos := 0; pos < 130; pos++ {
		for run := 1; run < 70; run++ {
			src := []byte(strings.Repeat("a", pos) + strings.Repeat(`\`, run) + `"xyz"`)
			check(t, src, 0)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, seed := range []string{`abc"`, `a\"b\\"c"`, strings.Repeat(`x\n`, 40) + `"`, strings.Repeat(`\\`, 33) + `"`, "\x00\"", `\u12G4"`, `é\/\u0041"`} {
		f.Add([]byte(seed), uint8(0))
	}
	f.Fuzz(func(t *testing.T, src []byte, at uint8) {
		i := int(at)
		if i > len(src) {
			i = len(src)
		}
		check(t, src, i)
	})
}

func isSpecial(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }

// eachWord calls f with words whose byte at pos takes every value, the
// bytes before it plain when plainBefore is set, the others random.
func eachWord(plainBefore bool, f func(b [8]byte)) {
	r := rand.New(rand.NewPCG(19, 9))
	for pos := range 8 {
		for v := range 256 {
			for range 8 {
				var b [8]byte
				for k := range b {
					b[k] = byte(r.IntN(256))
					for plainBefore && k < pos && isSpecial(b[k]) {
						b[k] = byte(r.IntN(256))
					}
				}
				b[pos] = byte(v)
				f(b)
			}
		}
	}
}

// special marks exactly the quotes, backslashes and control characters of a
// word: every byte value at every position, among random bytes.
func TestSpecialIsExact(t *testing.T) {
	eachWord(false, func(b [8]byte) {
		m := special(binary.LittleEndian.Uint64(b[:]))
		for k, c := range b {
			if got := m>>(8*k+7)&1 == 1; got != isSpecial(c) {
				t.Fatalf("%q: byte %d marked %v, want %v", b, k, got, isSpecial(c))
			}
		}
		if m&^highs != 0 {
			t.Fatalf("%q: bits other than the bytes' high bits set: %#x", b, m)
		}
	})
}

// FirstSpecial's lowest set bit is the first quote, backslash or control
// character of a word: every byte value at every position, after plain
// bytes and before random ones (borrows may set bits above it only).
func TestFirstSpecial(t *testing.T) {
	eachWord(true, func(b [8]byte) {
		first := bits.TrailingZeros64(FirstSpecial(binary.LittleEndian.Uint64(b[:]))) / 8 // 8: none
		want := 8
		for k, c := range b {
			if isSpecial(c) {
				want = k
				break
			}
		}
		if first != want {
			t.Fatalf("%q: first special byte %d, want %d", b, first, want)
		}
	})
}
