package tools

import (
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
}

// Random edits, checked by git itself: applying our diff to the old text must
// give the new text.
func TestUnifiedDiffAppliesWithGit(t *testing.T) {
	dir := t.TempDir()
	gitCmd(t, dir, "init", "-q")
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "}", "", "return nil", "if err != nil {"}
	for round := range 60 {
		var a []string
		for range rng.IntN(40) {
			a = append(a, words[rng.IntN(len(words))])
		}
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
		oldText, newText := joinLines(a), joinLines(b)
		diff, _ := unifiedDiff("f.txt", oldText, newText)
		if diff == "" {
			if oldText != newText {
				t.Fatalf("round %d: empty diff for a change", round)
			}
			continue
		}
		os.WriteFile(filepath.Join(dir, "f.txt"), []byte(oldText), 0o644)
		os.WriteFile(filepath.Join(dir, "p.diff"), []byte(diff), 0o644)
		cmd := exec.Command("git", "apply", "--unidiff-zero", "p.diff")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("round %d: git apply: %v %s\nold %q\nnew %q\n%s", round, err, out, oldText, newText, diff)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != newText {
			t.Fatalf("round %d: applied diff gives %q, want %q\n%s", round, got, newText, diff)
		}
	}
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestDiffLargeChangeFallsBack(t *testing.T) {
	var a, b []string
	for i := range 3000 {
		a = append(a, "a"+string(rune('0'+i%10)))
		b = append(b, "b"+string(rune('0'+i%7)))
	}
	ops := diffLines(a, b)
	var del, ins int
	for _, op := range ops {
		switch op.kind {
		case diffDelete:
			del++
		case diffInsert:
			ins++
		}
	}
	if del != 3000 || ins != 3000 {
		t.Errorf("got %d deletions and %d insertions, want 3000 each", del, ins)
	}
}
