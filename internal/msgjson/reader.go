package msgjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/internal/jsonscan"
)

// reader is a strict, single-pass JSON reader for the decoders of this
// package. It validates what it reads and never guesses: anything it does not
// handle exactly as encoding/json would (a syntax error, invalid UTF-8, a
// number that is not a plain integer, a lone surrogate, deep nesting) sets
// fail, after which every method returns a zero value and loops end. The
// decoders then hand the whole input to encoding/json, so the fast path only
// ever decides what encoding/json would decide.
type reader struct {
	data  []byte
	pos   int
	depth int
	fail  bool
	// shared says that data is never modified while the result lives:
	// strings and raw values without escapes then point into it.
	shared bool
	arena  *Arena // what is built or copied comes from here
	// strStart is where the content of the last string scanString read
	// starts in data.
	strStart int
	// units is the UTF-16 length of the last string str read: ASCII text
	// is its byte length, and the UTF-8 check of other text counts it.
	units int
}

// maxDepth bounds raw's recursion; encoding/json allows deeper input, which
// then goes to it.
const maxDepth = 200

func (r *reader) bad() { r.fail = true }

func (r *reader) ws() {
	for r.pos < len(r.data) {
		// Lines as pi and this package write them have no whitespace
		// between tokens: one comparison tells nearly every byte.
		if c := r.data[r.pos]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return
		}
		r.pos++
	}
}

// peek returns the first byte of the next value (after whitespace), or 0.
func (r *reader) peek() byte {
	r.ws()
	if r.fail || r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

// open consumes c ('{' or '[') as the start of the next value.
func (r *reader) open(c byte) bool {
	if r.peek() != c {
		r.bad()
		return false
	}
	r.pos++
	return true
}

// more reports whether the object or array (closed by c) has another
// member, consuming the ',' before every member but the first.
func (r *reader) more(c byte, first *bool) bool {
	r.ws()
	if r.fail || r.pos >= len(r.data) {
		r.bad()
		return false
	}
	if r.data[r.pos] == c {
		// After a ',' more returned true and a value was read, so this
		// cannot be a trailing comma.
		r.pos++
		return false
	}
	if !*first {
		if r.data[r.pos] != ',' {
			r.bad()
			return false
		}
		r.pos++
		r.ws()
	}
	*first = false
	return true
}

// key reads an object key and the ':' after it. Keys with escapes go to
// encoding/json (which would unescape them before matching).
func (r *reader) key() []byte {
	// Nearly every key is up to 16 ASCII letters right after the '{' or
	// ',' and right before its ':': two words after the quote tell its end
	// (i+18 <= len(d): the quote after them is in d too).
	if d, i := r.data, r.pos; !r.fail && i+18 <= len(d) && d[i] == '"' {
		const highs = 0x8080808080808080
		p := unsafe.Pointer(unsafe.SliceData(d))
		w0, w1 := load8(p, i+1), load8(p, i+9)
		m0, m1 := special(w0), special(w1)
		// Without a branch on which word ends it (keys of 8 letters and
		// more are common): z is 1 when the first word has no special
		// byte, and then all of it is plain.
		z := ((m0 - 1) &^ m0) >> 63
		j := bits.TrailingZeros64(m0)>>3 + int(z)*(bits.TrailingZeros64(m1)>>3)
		hi := w0&((m0&-m0)>>7-1) | w1&((m1&-m1)>>7-1)&-z
		if e := i + 1 + j; at(p, e) == '"' && hi&highs == 0 && e+1 < len(d) && at(p, e+1) == ':' {
			r.pos = e + 2
			return d[i+1 : e]
		}
	}
	raw, esc := r.rawString(true)
	if esc {
		r.bad()
	}
	r.ws()
	if r.fail || r.pos >= len(r.data) || r.data[r.pos] != ':' {
		r.bad()
		return nil
	}
	r.pos++
	return raw
}

// null consumes a null if one comes next.
func (r *reader) null() bool {
	if r.peek() == 'n' && bytes.HasPrefix(r.data[r.pos:], []byte("null")) {
		r.pos += 4
		return true
	}
	return false
}

func (r *reader) boolean() bool {
	switch r.peek() {
	case 't':
		if bytes.HasPrefix(r.data[r.pos:], []byte("true")) {
			r.pos += 4
			return true
		}
	case 'f':
		if bytes.HasPrefix(r.data[r.pos:], []byte("false")) {
			r.pos += 5
			return false
		}
	}
	r.bad()
	return false
}

// int reads an integer literal. Fractions, exponents and values that do not
// fit an int64 fail (encoding/json refuses the first two for an int field).
func (r *reader) int() int64 {
	r.ws()
	d := r.data
	i := r.pos
	neg := i < len(d) && d[i] == '-'
	if neg {
		i++
	}
	start := i
	var n uint64
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		if n > (1<<63)/10 {
			r.bad()
			return 0
		}
		n = n*10 + uint64(d[i]-'0')
		i++
	}
	digits := i - start
	if r.fail || digits == 0 || (digits > 1 && d[start] == '0') ||
		(i < len(d) && (d[i] == '.' || d[i] == 'e' || d[i] == 'E')) ||
		n > 1<<63 || (!neg && n == 1<<63) {
		r.bad()
		return 0
	}
	r.pos = i
	if neg {
		return -int64(n)
	}
	return int64(n)
}

// rawString reads a string token and returns its content between the quotes,
// still escaped, and whether it has escapes. The content is checked as
// encoding/json's scanner checks it (no control characters) and, when
// utf8Check is set, to be valid UTF-8 (encoding/json would replace invalid
// bytes).
func (r *reader) rawString(utf8Check bool) ([]byte, bool) {
	return r.scanString(utf8Check)
}

// scanString reads a string token: its content between the quotes (still
// escaped) and whether it has escapes.
//
// One pass, eight bytes at a time, finds the closing quote, the escapes and
// any control character (which encoding/json refuses) or non-ASCII byte (then
// checked to be valid UTF-8 when utf8Check is set). The usual escapes are
// stepped over without leaving the loop.
func (r *reader) scanString(utf8Check bool) (raw []byte, esc bool) {
	const highs = 0x8080808080808080
	if r.peek() != '"' {
		r.bad()
		return nil, false
	}
	d := r.data
	start := r.pos + 1
	i := start
	var hi uint64 // the OR of the plain bytes: its high bits say non-ASCII
	p := unsafe.Pointer(unsafe.SliceData(d))
	for {
		// Eight bytes at a time through p (i+8 <= len(d) bounds the
		// loads), stepping over the usual escapes, one after another as in
		// indented code, without leaving the loop.
	words:
		for last := len(d) - 8; i <= last; {
			w := load8(p, i)
			m := special(w)
			if m == 0 {
				hi |= w
				i += 8
				continue
			}
			hi |= w & ((m&-m)>>7 - 1) // the plain bytes before the first special one
			i += bits.TrailingZeros64(m) >> 3
			for {
				if at(p, i) != '\\' || i+1 >= len(d) || unescaped[at(p, i+1)] == 0 {
					break words
				}
				esc = true
				i += 2
				if i >= len(d) || at(p, i) != '\\' {
					break
				}
			}
		}
		if i >= len(d) {
			r.bad()
			return nil, false
		}
		switch c := d[i]; {
		case c == '"':
			raw = d[start:i]
			r.pos = i + 1
			r.strStart = start
			if hi&highs != 0 && utf8Check && !utf8.Valid(raw) {
				r.bad()
				return nil, false
			}
			return raw, esc
		case c == '\\':
			if i+1 >= len(d) {
				r.bad()
				return nil, false
			}
			n := 2 // the escape's length
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(d[i+2:]); !ok {
					r.bad()
					return nil, false
				}
				n = 6
			default:
				r.bad()
				return nil, false
			}
			esc = true
			i += n
		case c < 0x20:
			r.bad()
			return nil, false
		default:
			hi |= uint64(c)
			i++
		}
	}
}

// unescaped maps the letter of a one-letter escape to the byte it stands
// for (0: not one).
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// decodeEscape decodes the escape at the start of s (s[0] is the backslash)
// as encoding/json does into dst, and returns the bytes written and the
// escape's length in s, 0 when it fails. A surrogate that is not half of a
// valid pair fails: encoding/json turns it into U+FFFD, and such input is
// rare enough to leave to it. What is written is never longer than the
// escape.
func decodeEscape(dst, s []byte) (w, k int) {
	var c byte
	switch s[1] {
	case '"', '\\', '/':
		c = s[1]
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		u, ok := hex4(s[2:])
		if !ok {
			return 0, 0
		}
		if !utf16.IsSurrogate(u) {
			return utf8.EncodeRune(dst, u), 6
		}
		if len(s) < 12 || s[6] != '\\' || s[7] != 'u' {
			return 0, 0
		}
		lo, ok := hex4(s[8:])
		dec := utf16.DecodeRune(u, lo)
		if !ok || dec == utf8.RuneError {
			return 0, 0
		}
		return utf8.EncodeRune(dst, dec), 12
	default:
		return 0, 0
	}
	dst[0] = c
	return 1, 2
}

// str reads a string value. A string without escapes is found as
// scanString finds one and kept as it is (see keep). From its first escape
// on, one pass both scans and writes the text: each eight bytes are stored
// to the output whole and the position moves on by as many of them as are
// plain, so the runs between escapes are copied as they are read.
func (r *reader) str() string {
	const highs = 0x8080808080808080
	if r.peek() != '"' {
		r.bad()
		return ""
	}
	d := r.data
	start := r.pos + 1
	i := start
	var hi uint64 // the OR of the plain bytes: its high bits say non-ASCII
	for {
		src := d[i:] // shrinks from the front: no bounds checks in the loop
		for len(src) >= 8 {
			w := binary.LittleEndian.Uint64(src)
			if m := special(w); m != 0 {
				j := bits.TrailingZeros64(m) / 8 & 7 // m is not 0: j < 8
				hi |= w & (1<<(8*j) - 1)
				src = src[j:]
				break
			}
			hi |= w
			src = src[8:]
		}
		i = len(d) - len(src)
		if i >= len(d) {
			r.bad()
			return ""
		}
		switch c := d[i]; {
		case c == '"':
			raw := d[start:i]
			r.pos = i + 1
			r.units = len(raw)
			if hi&highs != 0 {
				n, ok := llm.ValidUTF16Len(raw)
				if !ok {
					r.bad()
					return ""
				}
				r.units = n
			}
			return r.keep(raw)
		case c == '\\':
			return r.unescapeFrom(start, i)
		case c < 0x20:
			r.bad()
			return ""
		default:
			hi |= uint64(c)
			i++
		}
	}
}

// special is jsonscan.FirstSpecial: the lowest set bit of special(w) is the
// high bit of the first quote, backslash or control character in w.
func special(w uint64) uint64 { return jsonscan.FirstSpecial(w) }

// unescapeFrom reads the rest of a string whose content starts at start and
// whose first escape is at e, writing its text to the arena as it goes.
func (r *reader) unescapeFrom(start, e int) string {
	const highs = 0x8080808080808080
	d := r.data
	// The text is never longer than the rest of the input; 8 bytes of slack
	// let every word be stored whole.
	limit := len(d) - start + 8
	dst := r.arena.space(min(e-start+256, limit))
	n := copy(dst, d[start:e])
	hi := uint64(0)
	if !isASCII(d[start:e]) {
		hi = highs
	}
	i := e
	for {
		if i >= len(d) {
			r.bad()
			return ""
		}
		switch c := d[i]; {
		case c == '"':
			r.pos = i + 1
			r.units = n
			if hi&highs != 0 {
				u, ok := llm.ValidUTF16Len(dst[:n])
				if !ok {
					r.bad()
					return ""
				}
				r.units = u
			}
			return r.arena.commit(dst, n)
		case c == '\\':
			if i+1 >= len(d) {
				r.bad()
				return ""
			}
			if len(dst)-n < 8 {
				dst = r.arena.grow(dst, n, limit)
			}
			w, k := decodeEscape(dst[n:], d[i:])
			if k == 0 {
				r.bad()
				return ""
			}
			if dst[n] >= utf8.RuneSelf {
				hi = highs // a \u escape wrote a multi-byte character
			}
			n += w
			i += k
		case c < 0x20:
			r.bad()
			return ""
		default:
			if len(dst)-n < 8 {
				dst = r.arena.grow(dst, n, limit)
			}
			dst[n] = c
			hi |= uint64(c)
			n++
			i++
		}
		if i+8 <= len(d) && len(dst)-n < 8 {
			dst = r.arena.grow(dst, n, limit)
		}
		// Eight bytes at a time through pointers, as in unescapeInPlace
		// (i+8 <= len(d) and n+8 <= len(dst) bound them), with the usual
		// escapes, one after another, stepped over in the loop.
		p, q := unsafe.Pointer(unsafe.SliceData(d)), unsafe.Pointer(unsafe.SliceData(dst))
	words:
		for lastI, lastN := len(d)-8, len(dst)-8; i <= lastI && n <= lastN; {
			w := load8(p, i)
			store8(q, n, w)
			m := special(w)
			if m == 0 {
				hi |= w
				i, n = i+8, n+8
				continue
			}
			hi |= w & ((m&-m)>>7 - 1) // the plain bytes before the first special one
			j := bits.TrailingZeros64(m) >> 3
			i, n = i+j, n+j // n < len(dst): eight bytes were free
			var stop bool
			// Each escape writes one byte for two read: reading stops
			// where writing would pass dst's end.
			if i, n, stop = escapes(p, q, min(len(d), i+2*(len(dst)-n)), i, n); stop {
				break words
			}
		}
	}
}

// escapes writes the text of the usual escapes that start at p+i, one after
// another as in indented code, at q+n, sparing the word loops of
// unescapeFrom a word per escape. It reads below p+end,
// and so writes fewer than (end-i)/2 bytes, which the caller makes fit. It
// returns where reading and writing stopped, and stop when a special byte
// the loops must leave to their switch comes first (a quote, a control
// character, another escape, one cut by end).
func escapes(p, q unsafe.Pointer, end, i, n int) (int, int, bool) {
	for i+1 < end && at(p, i) == '\\' {
		c := unescaped[at(p, i+1)]
		if c == 0 {
			break
		}
		*(*byte)(unsafe.Add(q, n)) = c
		i, n = i+2, n+1
		if i >= end || at(p, i) != '\\' {
			return i, n, false
		}
	}
	return i, n, true
}

// load8 and store8 read and write the eight bytes at p+i as a little-endian
// word, and at reads the byte there; the caller keeps i inside its slice.
func load8(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, i))[:])
}

func store8(p unsafe.Pointer, i int, w uint64) {
	binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(p, i))[:], w)
}

func at(p unsafe.Pointer, i int) byte { return *(*byte)(unsafe.Add(p, i)) }

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// keep returns raw, a part of data, as a string: data's own memory when it
// is shared, else a copy in the arena.
func (r *reader) keep(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if r.shared {
		return unsafe.String(unsafe.SliceData(raw), len(raw))
	}
	dst := r.arena.reserve(len(raw))
	return r.arena.commit(dst, copy(dst, raw))
}

// keepRaw returns raw, a part of data (nil after a failure), as a raw JSON
// value without capacity beyond it: data's own memory when it is shared,
// else a copy in the arena.
func (r *reader) keepRaw(raw []byte) json.RawMessage {
	if raw == nil {
		return nil
	}
	if r.shared {
		return raw[:len(raw):len(raw)]
	}
	return r.arena.bytes(raw)
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// raw skips the next value, checking its syntax as encoding/json's scanner
// does, and returns its bytes (a sub-slice of the input: callers copy).
func (r *reader) raw() []byte {
	c := r.peek()
	if r.fail {
		return nil
	}
	start := r.pos
	switch {
	case c == '{' || c == '[':
		r.depth++
		if r.depth > maxDepth {
			r.bad()
			return nil
		}
		r.pos++
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		for first := true; r.more(closing, &first); {
			if c == '{' {
				r.key()
			}
			r.raw()
		}
		r.depth--
	case c == '"':
		r.rawString(false)
	case c == 't':
		r.boolean()
	case c == 'f':
		r.boolean()
	case c == 'n':
		if !r.null() {
			r.bad()
		}
	case c == '-' || (c >= '0' && c <= '9'):
		r.number()
	default:
		r.bad()
	}
	if r.fail {
		return nil
	}
	return r.data[start:r.pos]
}

// float reads a number as encoding/json does for a float64 field.
func (r *reader) float() float64 {
	r.ws()
	start := r.pos
	r.number()
	if r.fail {
		return 0
	}
	f, err := strconv.ParseFloat(string(r.data[start:r.pos]), 64)
	if err != nil {
		r.bad() // out of range: encoding/json reports it
		return 0
	}
	return f
}

// number skips a number literal of JSON's grammar.
func (r *reader) number() {
	d, i := r.data, r.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		r.bad()
		return
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			r.bad()
			return
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			r.bad()
			return
		}
	}
	r.pos = i
}

// end checks that only whitespace follows.
func (r *reader) end() bool {
	r.ws()
	if r.pos != len(r.data) {
		r.bad()
	}
	return !r.fail
}
