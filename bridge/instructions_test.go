package bridge

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/internal/safefile"
)

func TestRepoInstructions(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if name, text, _ := repoInstructions(root); name != "" || text != "" {
		t.Fatalf("no file: %q %q", name, text)
	}
	os.WriteFile(filepath.Join(root, "CLAUDE.md"), []byte("use tabs"), 0o644)
	if name, text, _ := repoInstructions(root); name != "CLAUDE.md" || !strings.Contains(text, "use tabs") || !strings.Contains(text, "## CLAUDE.md") {
		t.Fatalf("CLAUDE.md only: %q %q", name, text)
	}
	// AGENTS.md wins, as in pi; a change counts at the next read.
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("run make test"), 0o644)
	if name, text, _ := repoInstructions(root); name != "AGENTS.md" || !strings.Contains(text, "run make test") || strings.Contains(text, "use tabs") {
		t.Fatalf("AGENTS.md: %q %q", name, text)
	}
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte(strings.Repeat("x", maxInstructionBytes+10)), 0o644)
	if _, text, _ := repoInstructions(root); !strings.Contains(text, "longer than 32 KB") || len(text) > maxInstructionBytes+500 {
		t.Fatalf("a long file is not capped: %d bytes", len(text))
	}
	// A symlink out of the worktree is not followed.
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("the bot's secret"), 0o644)
	os.Remove(filepath.Join(root, "AGENTS.md"))
	os.Remove(filepath.Join(root, "CLAUDE.md"))
	os.Symlink(outside, filepath.Join(root, "AGENTS.md"))
	if _, text, _ := repoInstructions(root); strings.Contains(text, "secret") {
		t.Fatalf("followed a symlink out of the worktree: %q", text)
	}
}

// The file is the model's to write: a long one that is not text, or that is
// cut inside a character, gives a capped prompt of valid UTF-8 (a file of
// invalid bytes shrank when made valid, and cutting it panicked).
func TestRepoInstructionsLongFileNotText(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, body := range [][]byte{
		bytes.Repeat([]byte{0xff}, maxInstructionBytes+10),
		append(bytes.Repeat([]byte("x"), maxInstructionBytes-1), strings.Repeat("é", 10)...),
	} {
		os.WriteFile(filepath.Join(root, "AGENTS.md"), body, 0o644)
		_, text, _ := repoInstructions(root)
		if !strings.Contains(text, "longer than 32 KB") || len(text) > maxInstructionBytes+500 || !utf8.ValidString(text) {
			t.Fatalf("%d bytes, valid UTF-8 %v, capped: %v", len(text), utf8.ValidString(text), strings.Contains(text, "longer than 32 KB"))
		}
	}
}

// AGENTS.md is the agent's to write: a pipe, a link to /dev/zero or out of
// the worktree, or a huge file is refused at once, told as a sentence, and
// nothing of it reaches the prompt; CLAUDE.md is not read in its stead.
func TestRepoInstructionsRefusesWhatTheAgentPlanted(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(outside, []byte("api_key: sk-secret"), 0o600)
	for _, c := range []struct {
		plant func(path string) error
		want  string
	}{
		{func(p string) error { return syscall.Mkfifo(p, 0o644) }, "`AGENTS.md` was not read: it is a named pipe; the bot reads only regular files of the worktree"},
		{func(p string) error { return os.Symlink("/dev/zero", p) }, "`AGENTS.md` was not read: it is a symbolic link; the bot reads only regular files of the worktree"},
		{func(p string) error { return os.Symlink(outside, p) }, "`AGENTS.md` was not read: it is a symbolic link"},
		{func(p string) error { return os.Symlink("CLAUDE.md", p) }, "`AGENTS.md` was not read: it is a symbolic link"},
	} {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "CLAUDE.md"), []byte("sk-secret too"), 0o644)
		if err := c.plant(filepath.Join(root, "AGENTS.md")); err != nil {
			t.Fatal(err)
		}
		name, text, err := repoInstructions(root)
		if name != "AGENTS.md" || text != "" || err == nil {
			t.Fatalf("got %q %q %v, want AGENTS.md refused", name, text, err)
		}
		if note := refusalNote(refusals(err)); !strings.HasPrefix(note, "⚠️ "+c.want) || strings.Contains(note, "sk-secret") {
			t.Errorf("note %q, want it to start with %q", note, c.want)
		}
	}
}

func TestMCPListRefusesAPipe(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, ".mcp.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := repoMCPServers(root)
	if got != nil || err == nil || err.Error() != ".mcp.json was not read: it is a named pipe; the bot reads only regular files of the worktree" {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestRefusalNoteNamesThreeAndKeepsNamesInCode(t *testing.T) {
	t.Parallel()
	var errs []error
	for _, n := range []string{"a`b\n<!channel>.md", "b.md", "c.md", "d.md", "e.md"} {
		errs = append(errs, &safefile.Error{Path: ".threadsmith/prompts/" + n, Reason: "it is a named pipe"})
	}
	errs = append(errs, &safefile.Error{Path: "/etc/operator/x.md", Reason: "it is a named pipe"})
	got := refusalNote(refusals(errors.Join(errs...)))
	want := "⚠️ `.threadsmith/prompts/a?b?<!channel>.md` was not read: it is a named pipe; `.threadsmith/prompts/b.md` was not read: it is a named pipe; `.threadsmith/prompts/c.md` was not read: it is a named pipe; and 2 more (the bot's log names them)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
