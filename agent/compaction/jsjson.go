package compaction

import (
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
