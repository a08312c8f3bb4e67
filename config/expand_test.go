package config

import (
	"slices"
	"strings"
	"testing"
)

// envMap is an env lookup over a fixed map, as Parse and Load take it.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestExpand(t *testing.T) {
	env := envMap(map[string]string{
		"TOKEN":  "s3cr:et #1",
		"EMPTY":  "",
		"PORT":   "8080",
		"DOLLAR": "a$b",
	})
	tests := []struct {
		in, want string
		missing  []string
	}{
		{in: "plain", want: "plain"},
		{in: "${TOKEN}", want: "s3cr:et #1"},
		{in: "Bearer ${TOKEN}!", want: "Bearer s3cr:et #1!"},
		{in: "${PORT}${PORT}", want: "80808080"},
		{in: "${UNSET}", want: "", missing: []string{"UNSET"}},
		{in: "a${UNSET}b${ALSO_UNSET}", want: "ab", missing: []string{"UNSET", "ALSO_UNSET"}},
		{in: "${UNSET:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"}, // shell semantics: empty counts as unset
		{in: "${EMPTY}", want: ""},                   // set but empty is not missing
		{in: "${UNSET:-}", want: ""},
		{in: "${TOKEN:-fallback}", want: "s3cr:et #1"},
		{in: "${UNSET:-a:-b c}", want: "a:-b c"},
		{in: "$${TOKEN}", want: "${TOKEN}"}, // the escape
		{in: "pa$$word", want: "pa$$word"},  // other dollars are literal
		{in: "cost $5", want: "cost $5"},
		{in: "trailing $", want: "trailing $"},
		{in: "${DOLLAR}", want: "a$b"},      // values are not expanded again
		{in: "$$${PORT}", want: "$${PORT}"}, // "$" then the escape
	}
	for _, tt := range tests {
		x, err := expand(tt.in, env)
		if err != nil {
			t.Errorf("expand(%q): unexpected error %v", tt.in, err)
			continue
		}
		if x.value != tt.want || !slices.Equal(x.missing, tt.missing) {
			t.Errorf("expand(%q) = %q, missing %v; want %q, missing %v", tt.in, x.value, x.missing, tt.want, tt.missing)
		}
	}
}

func TestExpandMalformed(t *testing.T) {
	tests := []struct{ in, want string }{
		{"${TOKEN", "unterminated"},
		{"abc ${", "unterminated"},
		{"${}", "invalid variable reference"},
		{"${1ABC}", "invalid variable reference"},
		{"${A-B}", "invalid variable reference"},
		{"${A:default}", "invalid variable reference"},
	}
	for _, tt := range tests {
		_, err := expand(tt.in, envMap(nil))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("expand(%q) error = %v, want one containing %q", tt.in, err, tt.want)
		}
	}
}
