package tools

import (
	"slices"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		nomatch []string
	}{
		{"*.go", []string{"a.go", "x/y/b.go"}, []string{"a.go.txt", "go"}},
		{"**/*.json", []string{"a.json", "x/y/a.json"}, []string{"a.jsonl"}},
		{"src/**/*_test.go", []string{"src/a_test.go", "src/x/y/a_test.go"}, []string{"a_test.go", "lib/src/a_test.go"}},
		{"src/*.go", []string{"src/a.go"}, []string{"src/x/a.go"}},
		{"*.{ts,tsx}", []string{"a.ts", "d/b.tsx"}, []string{"a.js"}},
		{"{cmd,internal}/**/main.go", []string{"cmd/x/main.go", "internal/main.go"}, []string{"pkg/main.go"}},
		{"./Makefile", []string{"Makefile", "sub/Makefile"}, []string{"Makefile.am"}},
		{"**", []string{"a", "a/b/c"}, nil},
		{"[ab]?.txt", []string{"a1.txt", "x/b2.txt"}, []string{"c1.txt"}},
		{"docs/", []string{"docs"}, []string{"docs/a"}},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		for _, p := range tt.match {
			if !g.match(p, false) {
				t.Errorf("%q does not match %q, want a match", tt.pattern, p)
			}
		}
		for _, p := range tt.nomatch {
			if g.match(p, false) {
				t.Errorf("%q matches %q, want none", tt.pattern, p)
			}
		}
	}
	if _, err := compileGlob("[a"); err == nil {
		t.Error("bad pattern accepted")
	}
}

func TestExpandBraces(t *testing.T) {
	got := expandBraces("a{b,c{d,e}}f{}g{h}")
	want := []string{"abf{}g{h}", "acdf{}g{h}", "acef{}g{h}"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if n := len(expandBraces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")); n != maxGlobAlternatives {
		t.Errorf("got %d alternatives, want the cap %d", n, maxGlobAlternatives)
	}
}
