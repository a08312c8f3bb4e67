package tools

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// searchTree is a small repository with ignore rules at two levels.
func searchTree(t *testing.T) *testWorkspace {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{
		".gitignore":           "build/\n*.log\n!keep.log\n/top-only.txt\n",
		".env":                 "TOKEN=visible-dotfile\n",
		"README.md":            "# Demo\nSee main.go for the Handler.\n",
		"main.go":              "package main\n\nimport \"fmt\"\n\n// Handler serves requests.\nfunc Handler() {\n\tfmt.Println(\"handler called\")\n}\n\nfunc main() {\n\tHandler()\n}\n",
		"util/strings.go":      "package util\n\nfunc Upper(s string) string { return s }\n\nfunc lower(s string) string { return s }\n",
		"util/strings_test.go": "package util\n\nimport \"testing\"\n\nfunc TestUpper(t *testing.T) { Upper(\"x\") }\n",
		"util/.gitignore":      "generated.go\n",
		"util/generated.go":    "package util // Handler generated\n",
		"build/out.go":         "package build // Handler in build\n",
		"debug.log":            "Handler log line\n",
		"keep.log":             "Handler kept log\n",
		"top-only.txt":         "Handler top\n",
		"sub/top-only.txt":     "Handler nested, not ignored\n",
		"image.bin":            "Handler\x00binary",
		"web/app.ts":           "export function handler() {}\n",
		"web/app.tsx":          "export const Handler = () => null\n",
		"long.txt":             "Handler " + strings.Repeat("w", 600) + "\n",
		"crlf.txt":             "first\r\nHandler crlf\r\n",
	})
	return tw
}

func TestGrepGolden(t *testing.T) {
	tw := searchTree(t)
	g := NewGrepTool(tw.Workspace)
	cases := []goldenCase{}
	add := func(name string, args map[string]any) { cases = append(cases, goldenCase{name, call(t, g, args)}) }
	add("regex", map[string]any{"pattern": "func [A-Z]\\w+"})
	add("literal with regex characters", map[string]any{"pattern": "Println(\"", "literal": true})
	add("ignore case", map[string]any{"pattern": "handler", "ignoreCase": true})
	add("glob by name", map[string]any{"pattern": "Handler", "glob": "*.{ts,tsx}"})
	add("glob by path", map[string]any{"pattern": "Upper", "glob": "util/**/*_test.go"})
	add("context", map[string]any{"pattern": "Handler\\(\\)", "context": 1, "path": "main.go"})
	add("limit", map[string]any{"pattern": "Handler", "limit": 2})
	add("subfolder", map[string]any{"pattern": "func", "path": "util"})
	add("ignored file named directly", map[string]any{"pattern": "Handler", "path": "debug.log"})
	add("dotfile", map[string]any{"pattern": "visible"})
	add("anchors", map[string]any{"pattern": "^func .*\\{$"})
	add("no match", map[string]any{"pattern": "nothing-like-this"})
	add("bad regex", map[string]any{"pattern": "func ("})
	add("missing path", map[string]any{"pattern": "x", "path": "nope"})
	checkGolden(t, "grep", tw, cases)
}

func TestFindGolden(t *testing.T) {
	tw := searchTree(t)
	f := NewFindTool(tw.Workspace)
	cases := []goldenCase{}
	add := func(name string, args map[string]any) { cases = append(cases, goldenCase{name, call(t, f, args)}) }
	add("by name", map[string]any{"pattern": "*.go"})
	add("by path", map[string]any{"pattern": "util/*_test.go"})
	add("double star", map[string]any{"pattern": "**/*.ts*"})
	add("folders", map[string]any{"pattern": "*u*"})
	add("in a folder", map[string]any{"pattern": "*", "path": "util"})
	add("everything", map[string]any{"pattern": "**"})
	add("limit", map[string]any{"pattern": "*", "limit": 3})
	add("none", map[string]any{"pattern": "*.rs"})
	add("not a folder", map[string]any{"pattern": "*", "path": "main.go"})
	add("bad pattern", map[string]any{"pattern": "[a"})
	checkGolden(t, "find", tw, cases)
}

func TestLsGolden(t *testing.T) {
	tw := searchTree(t)
	writeTree(t, tw.root, map[string]string{"Zeta": "", "alpha": "", "link": "->main.go", "empty/.keep": ""})
	l := NewLsTool(tw.Workspace)
	cases := []goldenCase{}
	add := func(name string, args map[string]any) { cases = append(cases, goldenCase{name, call(t, l, args)}) }
	add("root", map[string]any{})
	add("subfolder", map[string]any{"path": "util"})
	add("limit", map[string]any{"limit": 4})
	add("a file", map[string]any{"path": "main.go"})
	add("missing", map[string]any{"path": "nope"})
	checkGolden(t, "ls", tw, cases)
}

// The same searches as git grep on the same committed tree: same lines.
func TestGrepAgreesWithGitGrep(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	files := map[string]string{}
	words := []string{"alpha", "Beta", "GAMMA", "func", "return nil", "if err != nil {", "fooBar", "foo_bar", "x := 1", "  // TODO(kim): fix", "Straße", "KELVIN", "\tcase 'k':", "ks"}
	for i := range 40 {
		var b strings.Builder
		for j := range 30 {
			fmt.Fprintf(&b, "%s %d %s\n", words[(i*7+j*3)%len(words)], j, words[(i+j*5)%len(words)])
		}
		files[fmt.Sprintf("d%d/f%d.txt", i%5, i)] = b.String()
	}
	files["kelvin.txt"] = "the \u212a sign folds to k\n" // Kelvin sign: only a Unicode-aware search finds it for "k"
	writeTree(t, tw.root, files)
	gitCommitAll(t, tw.root)
	g := NewGrepTool(tw.Workspace)
	for _, q := range []struct {
		pattern    string
		ignoreCase bool
		literal    bool
		gitArgs    []string
	}{
		{"alpha", false, false, nil},
		{"return nil$", false, false, nil},
		{"^func", false, false, nil},
		{"foo.ar", false, false, nil},
		{"(Beta|GAMMA) 1[0-9]", false, false, nil},
		{"beta", true, false, []string{"-i"}},
		{"todo\\(kim\\)", true, false, []string{"-i"}},
		{"err != nil {", false, true, []string{"-F"}},
		{"x := 1", false, true, []string{"-F"}},
		{"[0-9]+ alpha", false, false, nil},
		{"[0-9]{2} fooBar", false, false, nil},
		{"a.p.a [0-9]", false, false, nil},
		{"beta [0-9]{1,2} [a-z]", true, false, []string{"-i"}},
		{"r [0-9] [a-z]{4}$", false, false, nil},
	} {
		args := map[string]any{"pattern": q.pattern, "ignoreCase": q.ignoreCase, "literal": q.literal, "limit": 100000}
		got := strings.Split(strings.TrimSpace(textOf(call(t, g, args))), "\n")
		gitArgs := append([]string{"grep", "-n", "-E", "--no-color"}, q.gitArgs...)
		gitArgs = append(gitArgs, "-e", q.pattern)
		cmd := exec.Command("git", gitArgs...)
		cmd.Dir = tw.root
		out, _ := cmd.Output()
		var want []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if path, rest, ok := strings.Cut(line, ":"); ok {
				num, text, _ := strings.Cut(rest, ":")
				want = append(want, path+":"+num+": "+text)
			}
		}
		if len(want) == 0 {
			want = []string{"No matches found."}
		}
		slices.Sort(want)
		sorted := slices.Sorted(slices.Values(got))
		if !slices.Equal(sorted, want) {
			t.Errorf("pattern %q ignoreCase=%v: got %d lines, git grep %d\ngot  %q\nwant %q", q.pattern, q.ignoreCase, len(got), len(want), first(sorted, 5), first(want, 5))
		}
	}
	// Case folding beyond ASCII: "k" finds the Kelvin sign, as Go's (?i) does.
	res := textOf(call(t, g, map[string]any{"pattern": "sign folds to k", "ignoreCase": true}))
	if !strings.Contains(res, "kelvin.txt:1:") {
		t.Errorf("got %q, want the Kelvin-sign line", res)
	}
	res = textOf(call(t, g, map[string]any{"pattern": "\u212a sign", "ignoreCase": true}))
	if !strings.Contains(res, "kelvin.txt:1:") {
		t.Errorf("got %q, want the Kelvin-sign line for a non-ASCII pattern", res)
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// Results come in path order, however the workers finish.
func TestGrepIsDeterministic(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("p%02d/f%03d.txt", i%17, i)] = strings.Repeat("needle here\nhay\n", 1+i%4)
	}
	writeTree(t, tw.root, files)
	g := NewGrepTool(tw.Workspace)
	want := textOf(call(t, g, map[string]any{"pattern": "needle", "limit": 37}))
	if n := strings.Count(want, "needle here"); n != 37 {
		t.Fatalf("got %d matches, want 37", n)
	}
	for range 20 {
		if got := textOf(call(t, g, map[string]any{"pattern": "needle", "limit": 37})); got != want {
			t.Fatalf("a repeated search differs:\n%s\nvs\n%s", got, want)
		}
	}
}

func TestASCIILower(t *testing.T) {
	src := make([]byte, 0, 600)
	for i := range 256 {
		src = append(src, byte(i), 'Q', byte(255-i))
	}
	for _, n := range []int{0, 1, 7, 8, 9, 63, len(src)} {
		got := make([]byte, n)
		asciiLower(got, src[:n])
		for i, c := range src[:n] {
			want := c
			if 'A' <= c && c <= 'Z' {
				want = c + 32
			}
			if got[i] != want {
				t.Fatalf("n=%d: byte %d (%#x) became %#x, want %#x", n, i, c, got[i], want)
			}
		}
	}
}

func TestRareByteIndexAgreesWithBytesIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := "aabbbcz \n"
	for range 2000 {
		hay := make([]byte, rng.IntN(60))
		for i := range hay {
			hay[i] = alphabet[rng.IntN(len(alphabet))]
		}
		lit := make([]byte, 1+rng.IntN(4))
		for i := range lit {
			lit[i] = alphabet[rng.IntN(len(alphabet))]
		}
		q := &grepQuery{lit: lit, rare: rarestByte(lit)}
		pos := rng.IntN(len(hay) + 1)
		want := bytes.Index(hay[pos:], lit)
		if want >= 0 {
			want += pos
		}
		if got := q.index(hay, pos); got != want {
			t.Fatalf("index(%q in %q from %d) = %d, want %d", lit, hay, pos, got, want)
		}
	}
}
