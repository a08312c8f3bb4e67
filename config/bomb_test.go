package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// mergeBomb is a configuration of a few hundred bytes in which each level
// merges ten aliases of the level before: levels 8 stands for 10^8 values.
func mergeBomb(levels int) string {
	var b strings.Builder
	b.WriteString("workspace:\n  repos:\n    - &a0 {name: a, url: /x}\n")
	for i := 1; i <= levels; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "    - &a%d {<<: [%s]}\n", i, refs)
	}
	return b.String()
}

// parseDeadline is how long any small input may take to parse: generous
// enough for -race on a busy machine, far below the minutes an unguarded
// merge-key bomb takes.
const parseDeadline = 10 * time.Second

// A merge-key bomb (550 bytes whose expansion grows tenfold per level) is
// refused quickly, naming the key where the walk stopped.
func TestParseRefusesMergeKeyBomb(t *testing.T) {
	src := mergeBomb(8)
	start := time.Now()
	_, err := parseString(src, nil)
	if d := time.Since(start); d > parseDeadline {
		t.Fatalf("parsing a %d-byte merge-key bomb took %v, want < %v", len(src), d, parseDeadline)
	}
	wantErr(t, err, "workspace.repos[5]", "aliases and merge keys")
}

// Aliases a real file uses still work well below the limit.
func TestParseManyAliasesBelowTheLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("workspace:\n  repos:\n    - &base {name: r0, url: /x, default_branch: main}\n")
	for i := 1; i < 500; i++ {
		fmt.Fprintf(&b, "    - {<<: *base, name: r%d}\n", i)
	}
	c := mustParse(t, b.String(), nil)
	if len(c.Workspace.Repos) != 500 || c.Workspace.Repos[499].DefaultBranch != "main" {
		t.Fatalf("got %d repos (last %+v), want 500 merged from base", len(c.Workspace.Repos), c.Workspace.Repos[len(c.Workspace.Repos)-1])
	}
}

// FuzzParse checks that Parse never panics and never takes long, whatever
// anchors, aliases, merge keys and nesting the input has.
func FuzzParse(f *testing.F) {
	f.Add(mergeBomb(3))
	f.Add(mergeBomb(9))
	f.Add("a: &a [*a]\n")
	f.Add("workspace: &w {repos: [{<<: *w}]}\n")
	f.Add(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))
	f.Add("agent: " + strings.Repeat("{a: ", 2000) + "1" + strings.Repeat("}", 2000))
	f.Add("x: &x {a: 1}\ny: &y {<<: [*x, *x, *x, *x]}\nz: {<<: [*y, *y, *y, *y]}\n")
	f.Add("mcp:\n  servers:\n    s: &s {command: x, env: &e {A: '${A}', <<: {B: b}}}\n    t: {<<: *s, env: *e}\n")
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 8<<10 {
			return
		}
		// A watchdog, not only a stopwatch: the fuzzer does not report an
		// input that never returns.
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = parseString(src, map[string]string{"A": "1"})
		}()
		select {
		case <-done:
		case <-time.After(parseDeadline):
			t.Fatalf("Parse did not return within %v on a %d-byte input:\n%q", parseDeadline, len(src), src)
		}
	})
}
