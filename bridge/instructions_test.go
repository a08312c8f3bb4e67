package bridge

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRepoInstructions(t *testing.T) {
	root := t.TempDir()
	if name, text := repoInstructions(root); name != "" || text != "" {
		t.Fatalf("no file: %q %q", name, text)
	}
	os.WriteFile(filepath.Join(root, "CLAUDE.md"), []byte("use tabs"), 0o644)
	if name, text := repoInstructions(root); name != "CLAUDE.md" || !strings.Contains(text, "use tabs") || !strings.Contains(text, "## CLAUDE.md") {
		t.Fatalf("CLAUDE.md only: %q %q", name, text)
	}
	// AGENTS.md wins, as in pi; a change counts at the next read.
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("run make test"), 0o644)
	if name, text := repoInstructions(root); name != "AGENTS.md" || !strings.Contains(text, "run make test") || strings.Contains(text, "use tabs") {
		t.Fatalf("AGENTS.md: %q %q", name, text)
	}
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte(strings.Repeat("x", maxInstructionBytes+10)), 0o644)
	if _, text := repoInstructions(root); !strings.Contains(text, "longer than 32 KB") || len(text) > maxInstructionBytes+500 {
		t.Fatalf("a long file is not capped: %d bytes", len(text))
	}
	// A symlink out of the worktree is not followed.
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("the bot's secret"), 0o644)
	os.Remove(filepath.Join(root, "AGENTS.md"))
	os.Remove(filepath.Join(root, "CLAUDE.md"))
	os.Symlink(outside, filepath.Join(root, "AGENTS.md"))
	if _, text := repoInstructions(root); strings.Contains(text, "secret") {
		t.Fatalf("followed a symlink out of the worktree: %q", text)
	}
}

// The file is the model's to write: a long one that is not text, or that is
// cut inside a character, gives a capped prompt of valid UTF-8 (a file of
// invalid bytes shrank when made valid, and cutting it panicked).
func TestRepoInstructionsLongFileNotText(t *testing.T) {
	root := t.TempDir()
	for _, body := range [][]byte{
		bytes.Repeat([]byte{0xff}, maxInstructionBytes+10),
		append(bytes.Repeat([]byte("x"), maxInstructionBytes-1), strings.Repeat("é", 10)...),
	} {
		os.WriteFile(filepath.Join(root, "AGENTS.md"), body, 0o644)
		_, text := repoInstructions(root)
		if !strings.Contains(text, "longer than 32 KB") || len(text) > maxInstructionBytes+500 || !utf8.ValidString(text) {
			t.Fatalf("%d bytes, valid UTF-8 %v, capped: %v", len(text), utf8.ValidString(text), strings.Contains(text, "longer than 32 KB"))
		}
	}
}
