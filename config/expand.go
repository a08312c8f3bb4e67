package config

import (
	"fmt"
	"strings"
)

// expansion is the result of expanding one scalar.
type expansion struct {
	value   string
	changed bool     // the text held a reference or an escape
	fromEnv bool     // at least one variable's value (or default) was substituted
	missing []string // unset variables without a default, in order
}

// expand applies the ${NAME} rules of the package documentation to one
// scalar's text. Unset names without a default expand to "" and are listed in
// missing; substituted values are never scanned again.
func expand(s string, lookup func(string) (string, bool)) (expansion, error) {
	if !strings.Contains(s, "$") {
		return expansion{value: s}, nil
	}
	var b strings.Builder
	x := expansion{}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			x.changed = true
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return x, fmt.Errorf(`unterminated "${" (write "$${" for a literal "${")`)
			}
			ref := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(ref, ":-")
			if !validVarName(name) {
				return x, fmt.Errorf(`invalid variable reference "${%s}": the name must match [A-Za-z_][A-Za-z0-9_]* (write "$${" for a literal "${")`, name)
			}
			v, ok := lookup(name)
			switch {
			case hasDef && (!ok || v == ""):
				v = def
			case !ok:
				x.missing = append(x.missing, name)
			}
			b.WriteString(v)
			x.changed, x.fromEnv = true, true
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	x.value = b.String()
	return x, nil
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// unresolvedVar is an unset ${VAR} and the key whose value used it.
type unresolvedVar struct {
	key  string
	name string
}
