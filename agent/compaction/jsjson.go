package compaction

import (
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file re-serializes raw JSON the way JavaScript's JSON.stringify(JSON.parse(raw))
// would, because pi sizes a tool call by the length of that string and the conformance
// vectors depend on it. Tool-call arguments reach us as raw bytes from many writers
// (pi's files, Go's encoding/json with its \u003c escapes, providers that add spaces),
// so the raw length is not the JavaScript length.
//
// What JavaScript does, and this file reproduces:
//   - no whitespace;
//   - object keys in JavaScript property order: keys that are array indices
//     ("0" … "4294967294" in canonical form) first, ascending; then the other keys in
//     the order they first appeared; a repeated key keeps its first position and its
//     last value (JSON.parse semantics);
//   - strings escape only `"`, `\`, \b \f \n \r \t, other control characters as
//     \u00xx and lone surrogates as \udxxx; everything else, `<>&` and U+2028/9
//     included, is written as is;
//   - numbers go through a float64 and come out in Number#toString form (shortest
//     round-trip digits, exponent form below 1e-6 and from 1e21 on, -0 → 0, values
//     that overflow to Infinity → null).

var errBadJSON = errors.New("compaction: invalid JSON")

// jsStringify returns JSON.stringify(JSON.parse(raw)) as UTF-8 text. A lone surrogate is
// written as its six-character escape, exactly as JavaScript writes it, so the UTF-16
// length of the result is the JavaScript length.
func jsStringify(raw []byte) (string, error) {
	p := jsParser{src: raw}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return "", err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return "", errBadJSON
	}
	var b strings.Builder
	b.Grow(len(raw))
	v.write(&b)
	return b.String(), nil
}

// jsKind is the kind of a parsed value.
type jsKind uint8

const (
	jsLiteral jsKind = iota // true, false, null, a number or a string, already in output form
	jsArray
	jsObject
)

// jsValue is a parsed JSON value. Scalars are kept in their final JavaScript output
// form, so writing the tree is a concatenation.
type jsValue struct {
	kind    jsKind
	lit     string
	items   []jsValue  // arrays
	members []jsMember // objects, in JavaScript property order once parsed
}

type jsMember struct {
	key   string // the key in output form, quotes included
	raw   []byte // the key's raw JSON token, for display
	index uint32 // the array index, when isIndex
	value jsValue

	isIndex bool
}

func (v *jsValue) write(b *strings.Builder) {
	switch v.kind {
	case jsLiteral:
		b.WriteString(v.lit)
	case jsArray:
		b.WriteByte('[')
		for i := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			v.items[i].write(b)
		}
		b.WriteByte(']')
	case jsObject:
		b.WriteByte('{')
		for i := range v.members {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(v.members[i].key)
			b.WriteByte(':')
			v.members[i].value.write(b)
		}
		b.WriteByte('}')
	}
}

// maxDepth bounds recursion on hostile input; JavaScript's own limit is the stack.
const maxDepth = 512

type jsParser struct {
	src []byte
	pos int
}

func (p *jsParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsParser) value(depth int) (jsValue, error) {
	if depth > maxDepth || p.pos >= len(p.src) {
		return jsValue{}, errBadJSON
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.string()
		return jsValue{lit: s}, err
	case c == 't':
		return p.word("true")
	case c == 'f':
		return p.word("false")
	case c == 'n':
		return p.word("null")
	case c == '-' || (c >= '0' && c <= '9'):
		s, err := p.number()
		return jsValue{lit: s}, err
	}
	return jsValue{}, errBadJSON
}

func (p *jsParser) word(w string) (jsValue, error) {
	if len(p.src)-p.pos < len(w) || string(p.src[p.pos:p.pos+len(w)]) != w {
		return jsValue{}, errBadJSON
	}
	p.pos += len(w)
	return jsValue{lit: w}, nil
}

func (p *jsParser) array(depth int) (jsValue, error) {
	p.pos++ // [
	v := jsValue{kind: jsArray}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		item, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, errBadJSON
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return v, errBadJSON
		}
	}
}

func (p *jsParser) object(depth int) (jsValue, error) {
	p.pos++ // {
	v := jsValue{kind: jsObject}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	hasIndex := false
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return v, errBadJSON
		}
		start := p.pos
		key, err := p.string()
		if err != nil {
			return v, err
		}
		raw := p.src[start:p.pos]
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return v, errBadJSON
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth + 1)
		if err != nil {
			return v, err
		}
		if i := memberIndex(v.members, key); i >= 0 {
			v.members[i].value = val // JSON.parse: the last value wins, the first position stays
		} else {
			m := jsMember{key: key, raw: raw, value: val}
			m.index, m.isIndex = arrayIndex(key)
			hasIndex = hasIndex || m.isIndex
			v.members = append(v.members, m)
		}
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, errBadJSON
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if hasIndex {
				sortIndexKeysFirst(v.members)
			}
			return v, nil
		default:
			return v, errBadJSON
		}
	}
}

// memberIndex finds a key among the members. Objects of tool arguments are small, so a
// linear scan beats a map; keys compare in output form, which is injective.
func memberIndex(ms []jsMember, key string) int {
	for i := range ms {
		if ms[i].key == key {
			return i
		}
	}
	return -1
}

// arrayIndex reports whether a key (in output form, quoted) is an array index:
// the canonical decimal form of an integer in [0, 2^32-2].
func arrayIndex(key string) (uint32, bool) {
	d := key[1 : len(key)-1]
	if d == "" || len(d) > 10 || (len(d) > 1 && d[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
		n = n*10 + uint64(d[i]-'0')
	}
	if n > math.MaxUint32-1 {
		return 0, false
	}
	return uint32(n), true
}

func sortIndexKeysFirst(ms []jsMember) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.isIndex != b.isIndex {
			return a.isIndex
		}
		return a.isIndex && a.index < b.index
	})
}

// string parses a JSON string token and returns it in JavaScript output form.
func (p *jsParser) string() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: nothing to re-escape, the raw token is already the output.
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '"' {
			p.pos++
			return string(p.src[start-1 : p.pos]), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.pos++
	}
	var b strings.Builder
	b.Grow(p.pos - start + 16)
	b.WriteByte('"')
	b.Write(p.src[start:p.pos])
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			b.WriteByte('"')
			return b.String(), nil
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", errBadJSON // raw control characters are invalid JSON
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.src[p.pos:])
			if r == utf8.RuneError && n == 1 {
				b.WriteRune(utf8.RuneError) // a JavaScript reader would have decoded U+FFFD
			} else {
				b.Write(p.src[p.pos : p.pos+n])
			}
			p.pos += n
		}
	}
	return "", errBadJSON
}

// escape handles one backslash escape at p.pos, writing its JavaScript output form.
func (p *jsParser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.src) {
		return errBadJSON
	}
	e := p.src[p.pos+1]
	p.pos += 2
	switch e {
	case '"':
		b.WriteString(`\"`)
	case '\\':
		b.WriteString(`\\`)
	case '/':
		b.WriteByte('/')
	case 'b':
		b.WriteString(`\b`)
	case 'f':
		b.WriteString(`\f`)
	case 'n':
		b.WriteString(`\n`)
	case 'r':
		b.WriteString(`\r`)
	case 't':
		b.WriteString(`\t`)
	case 'u':
		u, ok := p.hex4()
		if !ok {
			return errBadJSON
		}
		if utf16.IsSurrogate(rune(u)) && u < 0xDC00 {
			// A high surrogate forms a character only with a low one right after it.
			if lo, ok := p.peekLowSurrogate(); ok {
				p.pos += 6
				b.WriteRune(utf16.DecodeRune(rune(u), rune(lo)))
				return nil
			}
		}
		writeEscapedUnit(b, rune(u))
	default:
		return errBadJSON
	}
	return nil
}

func (p *jsParser) hex4() (uint16, bool) {
	if p.pos+4 > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return uint16(v), true
}

func (p *jsParser) peekLowSurrogate() (uint16, bool) {
	if p.pos+6 > len(p.src) || p.src[p.pos] != '\\' || p.src[p.pos+1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos+2:p.pos+6]), 16, 16)
	if err != nil || v < 0xDC00 || v > 0xDFFF {
		return 0, false
	}
	return uint16(v), true
}

// writeEscapedUnit writes one decoded UTF-16 code unit (or a BMP character) the way
// JSON.stringify does.
func writeEscapedUnit(b *strings.Builder, u rune) {
	const hex = "0123456789abcdef"
	switch u {
	case '"':
		b.WriteString(`\"`)
	case '\\':
		b.WriteString(`\\`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	default:
		if u < 0x20 || utf16.IsSurrogate(u) {
			b.WriteString(`\u`)
			b.WriteByte(hex[u>>12&0xF])
			b.WriteByte(hex[u>>8&0xF])
			b.WriteByte(hex[u>>4&0xF])
			b.WriteByte(hex[u&0xF])
			return
		}
		b.WriteRune(u)
	}
}

// number parses a JSON number token and returns JavaScript's rendering of its float64.
func (p *jsParser) number() (string, error) {
	tok, plain, err := p.numberToken()
	if err != nil || plain {
		return string(tok), err
	}
	return jsNumberToken(tok)
}

// numberLen is the length of number()'s result, without allocating for plain integers.
func (p *jsParser) numberLen() (int, error) {
	tok, plain, err := p.numberToken()
	if err != nil || plain {
		return len(tok), err
	}
	s, err := jsNumberToken(tok)
	return len(s), err
}

// numberToken scans a number token. plain reports an integer of at most 15 digits
// (not -0): exact in a float64, so JavaScript prints it unchanged.
func (p *jsParser) numberToken() (tok []byte, plain bool, err error) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(p.src) {
		return nil, false, errBadJSON
	}
	switch c := p.src[p.pos]; {
	case c == '0':
		p.pos++
	case c >= '1' && c <= '9':
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
	default:
		return nil, false, errBadJSON
	}
	intEnd := p.pos
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		if !p.digits() {
			return nil, false, errBadJSON
		}
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if !p.digits() {
			return nil, false, errBadJSON
		}
	}
	tok = p.src[start:p.pos]
	plain = intEnd == p.pos && len(tok) <= 15 && string(tok) != "-0"
	return tok, plain, nil
}

func jsNumberToken(tok []byte) (string, error) {
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", errBadJSON
	}
	return jsNumber(f), nil
}

func (p *jsParser) digits() bool {
	s := p.pos
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
	}
	return p.pos > s
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// jsNumber renders f as JavaScript's Number#toString does (ECMA-262 Number::toString),
// with JSON.stringify's null for non-finite values.
func jsNumber(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "null"
	}
	if f == 0 {
		return "0" // both +0 and -0
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	// Shortest round-trip digits d1.d2…dk and exponent e, so f = 0.d1…dk × 10^n with n = e+1.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	ae := n - 1
	if ae < 0 {
		ae = -ae
	}
	if k == 1 {
		return sign + digits + "e" + es + strconv.Itoa(ae)
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + es + strconv.Itoa(ae)
}

// jsLen returns the UTF-16 length of jsStringify(raw) without building it: the
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

// plainASCII8 reports whether none of the eight bytes of w needs a closer look in
// a string: no quote, backslash, control character or non-ASCII byte.
func plainASCII8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	special := hasZero(w^(ones*'"')) | hasZero(w^(ones*'\\')) | (w - ones*0x20) | w
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

// stringLen measures a string token's output form, quotes included.
func (s *jsLenScanner) stringLen() (int, error) {
	s.pos++ // opening quote
	n := 2
	src := s.src
	for s.pos < len(src) {
		// Runs of plain ASCII, eight bytes at a time: they count one unit each.
		for s.pos+8 <= len(src) && plainASCII8(binary.LittleEndian.Uint64(src[s.pos:])) {
			s.pos += 8
			n += 8
		}
		if s.pos >= len(src) {
			break
		}
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
