package compaction

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

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
