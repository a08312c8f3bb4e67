package tools

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	got, first := unifiedDiff("f", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n")
	want := "--- a/f\n+++ b/f\n@@ -2,9 +2,10 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n j\n+k\n"
	if got != want || first != 5 {
		t.Errorf("got first %d and\n%s\nwant first 5 and\n%s", first, got, want)
	}
	got, first = unifiedDiff("f", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n")
	want = "--- a/f\n+++ b/f\n@@ -1,5 +1,4 @@\n 1\n-2\n 3\n 4\n 5\n"
	if got != want || first != 2 {
		t.Errorf("got first %d and\n%s\nwant first 2 and\n%s", first, got, want)
	}
	if got, first := unifiedDiff("f", "same\n", "same\n"); got != "" || first != 0 {
		t.Errorf("no change: got %q %d", got, first)
	}
	got, _ = unifiedDiff("f", "", "new\n")
	if want := "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The marker git needs to leave the last line without a newline.
	got, first = unifiedDiff("f", "a\nb\n", "a\nb")
	if want := "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"; got != want || first != 2 {
		t.Errorf("got first %d and\n%s\nwant first 2 and\n%s", first, got, want)
	}
}

// TestUnifiedDiffAppliesWithGit is the differential test of the patch the edit
// tool shows: for random old and new texts, `git apply` of unifiedDiff(old,
// new) onto old must give new, byte for byte. The variants cover a final
// newline on both sides, on either side only, on neither, CRLF lines, empty
// files and long files with changes far apart. All cases of a variant go into one multi-file patch (git apply is
// atomic: one failure fails it, and each case is then tried alone to name it).
func TestUnifiedDiffAppliesWithGit(t *testing.T) {
	words := []string{"alpha", "beta", "gamma", "delta", "}", "", "return nil", "if err != nil {", "\tx := 1", "ünïcode ✓"}
	variants := []struct {
		name               string
		oldFinal, newFinal bool
		crlf               bool
		lines              int // at most
	}{
		{"both end in a newline", true, true, false, 40},
		{"old lacks the final newline", false, true, false, 40},
		{"new lacks the final newline", true, false, false, 40},
		{"neither has a final newline", false, false, false, 40},
		{"CRLF lines", true, false, true, 40},
		{"long files", true, false, false, 400},
	}
	const cases = 300
	for vi, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			gitCmd(t, dir, "init", "-q")
			rng := rand.New(rand.NewPCG(uint64(vi), 19))
			type tc struct{ name, oldText, newText, diff string }
			var all []tc
			var patch strings.Builder
			for i := range cases {
				a := randomLines(rng, words, rng.IntN(v.lines))
				b := mutateLines(rng, words, a)
				oldText, newText := joinText(a, v.oldFinal, v.crlf), joinText(b, v.newFinal, v.crlf)
				name := fmt.Sprintf("f%03d.txt", i)
				diff, first := unifiedDiff(name, oldText, newText)
				if (diff == "") != (oldText == newText) || (first == 0) != (diff == "") {
					t.Errorf("%s: diff %q, first line %d for %q → %q", name, diff, first, oldText, newText)
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(oldText), 0o644); err != nil {
					t.Fatal(err)
				}
				all = append(all, tc{name, oldText, newText, diff})
				patch.WriteString(diff)
			}
			if patch.Len() == 0 {
				t.Fatal("no case changed anything")
			}
			if err := gitApply(dir, patch.String()); err != nil {
				for _, c := range all {
					if c.diff == "" {
						continue
					}
					if err := gitApply(dir, c.diff); err != nil {
						t.Errorf("%s: %v\nold %q\nnew %q\n%s", c.name, err, c.oldText, c.newText, c.diff)
					}
				}
				t.FailNow()
			}
			for _, c := range all {
				got, err := os.ReadFile(filepath.Join(dir, c.name))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != c.newText {
					t.Errorf("%s: applied patch gives %q, want %q\n%s", c.name, got, c.newText, c.diff)
				}
			}
		})
	}
}

func gitApply(dir, patch string) error {
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(patch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git apply: %v: %s", err, out)
	}
	return nil
}

func randomLines(rng *rand.Rand, words []string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = words[rng.IntN(len(words))]
	}
	return out
}

// mutateLines inserts, deletes and changes a few lines of a copy of a.
func mutateLines(rng *rand.Rand, words, a []string) []string {
	b := append([]string(nil), a...)
	for range 1 + rng.IntN(6) {
		i := rng.IntN(len(b) + 1)
		switch rng.IntN(3) {
		case 0:
			b = append(b[:i], append([]string{words[rng.IntN(len(words))]}, b[i:]...)...)
		case 1:
			if i < len(b) {
				b = append(b[:i], b[i+1:]...)
			}
		case 2:
			if i < len(b) {
				b[i] = words[rng.IntN(len(words))] + "!"
			}
		}
	}
	return b
}

// joinText joins lines with "\n" (or "\r\n"), ending with one when final.
func joinText(lines []string, final, crlf bool) string {
	if len(lines) == 0 {
		return ""
	}
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	s := strings.Join(lines, eol)
	if final {
		s += eol
	}
	return s
}

// A complete rewrite of a large file gives the whole file as removed and added.
func TestUnifiedDiffLargeRewrite(t *testing.T) {
	var a, b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&a, "a%d\n", i%10)
		fmt.Fprintf(&b, "b%d\n", i%7)
	}
	diff, first := unifiedDiff("f", a.String(), b.String())
	if first != 1 || strings.Count(diff, "\n-") != 3000 || strings.Count(diff, "\n+") != 3001 {
		t.Errorf("first line %d, %d lines removed, %d added; want 1, 3000, 3000 (+ the header)", first, strings.Count(diff, "\n-"), strings.Count(diff, "\n+")-1)
	}
}
