package compaction

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/internal/jsonscan"
)

// jsLen returns the UTF-16 length of JSON.stringify(JSON.parse(raw)) without building it: the
// estimator only needs the length, and tool-call arguments (a whole file for a
// write) are the bulk of what it reads. Key order does not change the length;
// repeated keys do, and are resolved as JSON.parse does.
func jsLen(raw []byte) (int, error) {
	s := jsLenScanner{jsParser{src: raw}}
	s.skipSpace()
	n, err := s.value(0)
	if err != nil {
		return 0, err
	}
	s.skipSpace()
	if s.pos != len(s.src) {
		return 0, errBadJSON
	}
	return n, nil
}

type jsLenScanner struct{ jsParser }

// lenMember is one distinct key of an object being measured.
type lenMember struct {
	key    []byte // the key in output form, quotes included
	keyLen int    // its UTF-16 length
	valLen int    // the length of its (last) value
}

func (s *jsLenScanner) value(depth int) (int, error) {
	if depth > maxDepth || s.pos >= len(s.src) {
		return 0, errBadJSON
	}
	switch c := s.src[s.pos]; {
	case c == '{':
		return s.object(depth)
	case c == '[':
		return s.array(depth)
	case c == '"':
		return s.stringLen()
	case c == 't':
		return s.wordLen("true")
	case c == 'f':
		return s.wordLen("false")
	case c == 'n':
		return s.wordLen("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.numberLen()
	}
	return 0, errBadJSON
}

func (s *jsLenScanner) wordLen(w string) (int, error) {
	_, err := s.word(w)
	return len(w), err
}

func (s *jsLenScanner) array(depth int) (int, error) {
	s.pos++ // [
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == ']' {
		s.pos++
		return 2, nil
	}
	n := 1
	for {
		s.skipSpace()
		v, err := s.value(depth + 1)
		if err != nil {
			return 0, err
		}
		n += v + 1 // the value and the ',' or ']' after it
		s.skipSpace()
		if s.pos >= len(s.src) {
			return 0, errBadJSON
		}
		switch s.src[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return n, nil
		default:
			return 0, errBadJSON
		}
	}
}

func (s *jsLenScanner) object(depth int) (int, error) {
	s.pos++ // {
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == '}' {
		s.pos++
		return 2, nil
	}
	var buf [8]lenMember
	ms := buf[:0]
	for {
		s.skipSpace()
		if s.pos >= len(s.src) || s.src[s.pos] != '"' {
			return 0, errBadJSON
		}
		start := s.pos
		keyLen, err := s.stringLen()
		if err != nil {
			return 0, err
		}
		key := s.src[start:s.pos]
		if !plainKey(key) {
			// Escapes or non-ASCII: compare keys in output form.
			out, err := (&jsParser{src: key}).string()
			if err != nil {
				return 0, err
			}
			key = []byte(out)
		}
		s.skipSpace()
		if s.pos >= len(s.src) || s.src[s.pos] != ':' {
			return 0, errBadJSON
		}
		s.pos++
		s.skipSpace()
		v, err := s.value(depth + 1)
		if err != nil {
			return 0, err
		}
		dup := false
		for i := range ms {
			if string(ms[i].key) == string(key) {
				ms[i].valLen, dup = v, true
				break
			}
		}
		if !dup {
			ms = append(ms, lenMember{key: key, keyLen: keyLen, valLen: v})
		}
		s.skipSpace()
		if s.pos >= len(s.src) {
			return 0, errBadJSON
		}
		switch s.src[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			n := 1 + len(ms) // '{', then one ',' or '}' per member
			for i := range ms {
				n += ms[i].keyLen + 1 + ms[i].valLen
			}
			return n, nil
		default:
			return 0, errBadJSON
		}
	}
}

// plain8 reports whether none of the eight bytes of w needs a closer look in a
// string: no quote, backslash or control character. Bytes of multi-byte
// characters are plain; llm.UTF8Adjust counts them.
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := w^(ones*'"'), w^(ones*'\\')
	// (v − ones) &^ v has a byte's high bit set where v's byte is zero (or
	// below 0x20 for v = w against 0x20), give or take bytes above a real hit.
	special := (q-ones)&^q | (b-ones)&^b | (w-ones*0x20)&^w
	return special&highs == 0
}

// plainKey reports whether a key token is printable ASCII without escapes, so
// that the token itself is its output form.
func plainKey(tok []byte) bool {
	for _, c := range tok[1 : len(tok)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// shortString is how far stringLen looks for the end of a plain string one
// byte at a time.
const shortString = 32

// stringLen measures a string token's output form, quotes included.
// jsonscan finds its end 64 bytes at a time; the escapes it counts are all
// that the output form changes but \uXXXX: one-letter escapes are written
// back as they are (two units), \/ becomes one. A string with \u escapes is
// measured by stringLenEscapes.
func (s *jsLenScanner) stringLen() (int, error) {
	start := s.pos + 1
	// Keys and most values (paths, names) are short printable ASCII: a
	// byte loop finds their end before jsonscan's masks would be set up.
	for i := start; i < len(s.src) && i < start+shortString; i++ {
		c := s.src[i]
		if c == '"' {
			s.pos = i + 1
			return 2 + i - start, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	end, st := jsonscan.String(s.src, start)
	if end < 0 {
		return 0, errBadJSON
	}
	if st.U {
		s.pos++
		return s.stringLenEscapes()
	}
	s.pos = end + 1
	raw := s.src[start:end]
	if !st.NonASCII {
		return 2 + len(raw) - st.Slashes, nil
	}
	// Escapes are ASCII: the units of the rest are llm.UTF16Len's (which
	// counts an invalid byte as one, as a JavaScript decoder's U+FFFD).
	return 2 + llm.UTF16LenBytes(raw) - st.Slashes, nil
}

// stringLenEscapes is stringLen for a string with \u escapes, s.pos after
// its opening quote. Bytes are counted as llm.UTF16Len counts them (UTF-16
// units of valid UTF-8, eight bytes at a time between escapes); a string
// that turns out not to be valid UTF-8 is measured again rune by rune.
func (s *jsLenScanner) stringLenEscapes() (int, error) {
	const highs = 0x8080808080808080
	start := s.pos
	n := 2
	src := s.src
	nonASCII := false
	for s.pos < len(src) {
		// Eight bytes at a time; b's constant-index reads need no bounds checks.
		b := src[s.pos:]
		for len(b) >= 8 {
			w := binary.LittleEndian.Uint64(b[:8])
			if !plain8(w) {
				break
			}
			if w&highs != 0 {
				nonASCII = true
				n += llm.UTF8Adjust(w)
			}
			b = b[8:]
			n += 8
		}
		s.pos = len(src) - len(b)
		if s.pos >= len(src) {
			break
		}
		c := src[s.pos]
		switch {
		case c == '"':
			s.pos++
			if nonASCII && !utf8.Valid(src[start:s.pos-1]) {
				s.pos = start
				return s.stringLenRunes()
			}
			return n, nil
		case c == '\\':
			u, err := s.escapeLen()
			if err != nil {
				return 0, err
			}
			n += u
		case c < 0x20:
			return 0, errBadJSON
		case c < utf8.RuneSelf:
			n++
			s.pos++
		default:
			nonASCII = true
			if c >= 0xC0 {
				n++ // a lead byte; continuation bytes add nothing
			}
			if c >= 0xF0 {
				n++ // a surrogate pair
			}
			s.pos++
		}
	}
	return 0, errBadJSON
}

// stringLenRunes is stringLen rune by rune, for content that is not valid
// UTF-8 (each invalid byte is one U+FFFD); s.pos is after the opening quote.
func (s *jsLenScanner) stringLenRunes() (int, error) {
	n := 2
	src := s.src
	for s.pos < len(src) {
		c := src[s.pos]
		switch {
		case c == '"':
			s.pos++
			return n, nil
		case c == '\\':
			u, err := s.escapeLen()
			if err != nil {
				return 0, err
			}
			n += u
		case c < 0x20:
			return 0, errBadJSON
		case c < utf8.RuneSelf:
			n++
			s.pos++
		default:
			r, size := utf8.DecodeRune(src[s.pos:])
			if r >= 0x10000 {
				n += 2
			} else {
				n++ // including U+FFFD for an invalid byte
			}
			s.pos += size
		}
	}
	return 0, errBadJSON
}

// escapeLen consumes one escape and returns the length of its output form.
func (s *jsLenScanner) escapeLen() (int, error) {
	if s.pos+1 >= len(s.src) {
		return 0, errBadJSON
	}
	e := s.src[s.pos+1]
	s.pos += 2
	switch e {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case '/':
		return 1, nil
	case 'u':
		u, ok := s.hex4()
		if !ok {
			return 0, errBadJSON
		}
		switch {
		case u >= 0xD800 && u < 0xDC00:
			if _, ok := s.peekLowSurrogate(); ok {
				s.pos += 6
				return 2, nil
			}
			return 6, nil
		case u >= 0xDC00 && u <= 0xDFFF:
			return 6, nil
		case u == '"' || u == '\\' || u == '\b' || u == '\f' || u == '\n' || u == '\r' || u == '\t':
			return 2, nil
		case u < 0x20:
			return 6, nil
		}
		return 1, nil
	}
	return 0, errBadJSON
}
