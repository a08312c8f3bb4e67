package tools

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The find tool's globs are differential-tested against two independent
// readings of the same patterns on a generated tree: bash's own globbing
// (globstar, dotglob, nullglob: ** spans folders, [!…] negates, hidden names
// match) and git's pathspecs (`git ls-files ':(glob)…'`, files only). A pattern
// without a slash is the find tool's base-name form, which both oracles spell
// **/pattern.

// globNames are the names the generated tree is made of: the [!_]*.go trap
// (main.go vs _gen.go), hidden files and folders, digits, dots and dashes.
var globNames = []string{
	"main.go", "_gen.go", "a_test.go", "b1.go", "x.json", "x.jsonl", "README.md",
	".env", ".hidden", "-dash.txt", "b2.txt", "c10.txt", "Makefile", "zz.go",
}

var globDirs = []string{"src", "pkg", "_build", ".cfg", "a1", "b", "internal", "x.go"}

// makeGlobTree writes a random tree of files (and so folders) under root and
// returns the file paths.
func makeGlobTree(t *testing.T, r *rand.Rand, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	var files []string
	for len(files) < 120 {
		depth := r.IntN(4)
		parts := make([]string, 0, depth+1)
		for range depth {
			parts = append(parts, globDirs[r.IntN(len(globDirs))])
		}
		parts = append(parts, globNames[r.IntN(len(globNames))])
		p := strings.Join(parts, "/")
		if seen[p] || conflicts(seen, p) {
			continue
		}
		seen[p] = true
		files = append(files, p)
	}
	writeFiles := map[string]string{}
	for _, f := range files {
		writeFiles[f] = "x\n"
	}
	writeTree(t, root, writeFiles)
	return files
}

// conflicts reports whether p needs a folder where a file is, or the reverse.
func conflicts(seen map[string]bool, p string) bool {
	for i := range len(p) {
		if p[i] == '/' && seen[p[:i]] {
			return true
		}
	}
	for s := range seen {
		if strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

// randomGlob builds a pattern of segments made of literals, *, ?, classes
// (negated with ! or ^) and ** segments, sometimes with {a,b} alternatives.
func randomGlob(r *rand.Rand) string {
	atom := func() string {
		switch r.IntN(10) {
		case 0, 1:
			return "*"
		case 2:
			return "?"
		case 3:
			return []string{"[!_]", "[^.]", "[a-m]", "[!a-m]", "[0-9]", "[_.]"}[r.IntN(6)]
		default:
			lits := []string{"main", ".go", "_", "a", "b", "x", ".json", "src", "pkg", "1", "test", ".", "-", "md", "txt", "gen", "_build"}
			return lits[r.IntN(len(lits))]
		}
	}
	segment := func() string {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			if r.IntN(12) == 0 {
				b.WriteString("{" + atom() + "," + atom() + "}")
				continue
			}
			b.WriteString(atom())
		}
		return b.String()
	}
	for {
		n := 1 + r.IntN(3)
		segs := make([]string, n)
		for i := range segs {
			if r.IntN(4) == 0 && (i == 0 || segs[i-1] != "**") {
				segs[i] = "**"
				continue
			}
			segs[i] = segment()
		}
		if p := strings.Join(segs, "/"); !hasDotSegment(p) {
			return p
		}
	}
}

// hasDotSegment reports whether an alternative of p has a "." or ".."
// segment: path syntax rather than a name, which the oracles read as such.
func hasDotSegment(p string) bool {
	for _, alt := range expandBraces(p) {
		for _, s := range strings.Split(alt, "/") {
			if s == "." || s == ".." {
				return true
			}
		}
	}
	return false
}

// bashGlob lists what bash's globbing makes of pattern under root (files and
// folders, without a trailing slash).
func bashGlob(t *testing.T, root, pattern string) []string {
	t.Helper()
	if !strings.Contains(pattern, "/") {
		pattern = "**/" + pattern
	}
	// Brace expansion comes before globbing in bash, and only for text it
	// parses: hence the eval.
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c",
		`shopt -s globstar nullglob dotglob; eval "for f in $1; do printf '%s\0' \"\$f\"; done"`, "bash", pattern)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash glob %q: %v", pattern, err)
	}
	// The find tool never enters .git; bash does.
	// A word without glob characters (after brace expansion) is kept by
	// bash as it is, existing or not.
	var list []string
	for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p == "" || p == ".git" || strings.HasPrefix(p, ".git/") {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			list = append(list, p)
		}
	}
	return normalizeList(list)
}

// gitGlob lists the tracked files git's glob pathspecs match; git knows no
// braces, so each alternative is its own pathspec.
func gitGlob(t *testing.T, root, pattern string) []string {
	t.Helper()
	args := []string{"ls-files", "-z", "--"}
	for _, alt := range expandBraces(pattern) {
		if !strings.Contains(alt, "/") {
			alt = "**/" + alt
		}
		args = append(args, ":(glob)"+alt)
	}
	out := gitCmd(t, root, args...)
	return normalizeList(strings.Split(strings.TrimSuffix(out, "\x00"), "\x00"))
}

func normalizeList(in []string) []string {
	out := in[:0]
	for _, s := range in {
		s = strings.TrimSuffix(s, "/")
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// listDiff returns what only a has and what only b has (both sorted).
func listDiff(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if _, ok := slices.BinarySearch(a, x); !ok {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

// findList runs the find tool and returns its paths (folders without their
// trailing slash).
func findList(t *testing.T, f *FindTool, pattern string) []string {
	t.Helper()
	res := call(t, f, map[string]any{"pattern": pattern, "limit": 100000})
	if res.IsError {
		t.Fatalf("find %q: %s", pattern, textOf(res))
	}
	text := textOf(res)
	if strings.HasPrefix(text, "No files found") {
		return nil
	}
	return normalizeList(strings.Split(text, "\n"))
}

func TestFindGlobAgreesWithBashAndGit(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not on PATH")
	}
	tw := newTestWorkspace(t, WorkspaceConfig{})
	r := rand.New(rand.NewPCG(19, 4))
	files := makeGlobTree(t, r, tw.root)
	gitCommitAll(t, tw.root)
	isFile := map[string]bool{}
	for _, f := range files {
		isFile[f] = true
	}
	find := NewFindTool(tw.Workspace)

	patterns := []string{"[!_]*.go", "**/[!_]*.go", "src/**/*.go", "*", "**", "**/*", "src/*", ".*", "**/.*/*", "*.json", "x.go/*"}
	for len(patterns) < 300 {
		patterns = append(patterns, randomGlob(r))
	}
	for _, p := range patterns {
		got := findList(t, find, p)
		if want := bashGlob(t, tw.root, p); !slices.Equal(got, want) {
			extra, missing := listDiff(got, want)
			t.Errorf("find %q: %d found, bash %d; not in bash: %q; only in bash: %q", p, len(got), len(want), extra, missing)
			continue
		}
		var gotFiles []string
		for _, g := range got {
			if isFile[g] {
				gotFiles = append(gotFiles, g)
			}
		}
		if want := gitGlob(t, tw.root, p); !slices.Equal(gotFiles, want) {
			extra, missing := listDiff(gotFiles, want)
			t.Errorf("find %q: %d files found, git %d; not in git: %q; only in git: %q", p, len(gotFiles), len(want), extra, missing)
		}
	}
}

// TestFindNegatedClass is the case that path.Match got wrong: [!_] is "not an
// underscore" in shells and .gitignore, not "! or _".
func TestFindNegatedClass(t *testing.T) {
	g, err := compileGlob("[!_]*.go")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"main.go": true, "cmd/x/main.go": true, "_gen.go": false, "!x.go": true} {
		if got := g.match(p, false); got != want {
			t.Errorf("[!_]*.go matches %q = %v, want %v", p, got, want)
		}
	}
}
