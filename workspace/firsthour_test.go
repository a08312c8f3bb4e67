package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// An empty repository (no commit, so no branch) is opened with a message
// that says what to do, not only which branch is missing.
func TestAnEmptyRepositoryAsksForAFirstCommit(t *testing.T) {
	empty := gitremote.NewBare(t, gitremote.Options{Name: "fresh"})
	e := newEnv(t, Repo{Name: "fresh", URL: empty.Path, DefaultBranch: "master"})
	_, err := e.m.Open(context.Background(), "fresh", ThreadKey{"console", "1"})
	if !errors.Is(err, ErrNoDefaultBranch) {
		t.Fatalf("Open of an empty repository: err = %v, want ErrNoDefaultBranch", err)
	}
	msg := ErrorMessage(err)
	for _, want := range []string{`"fresh"`, "no commit yet", "make a first commit"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "no branch") {
		t.Errorf("message %q speaks of a missing branch", msg)
	}
}

// A repository another user owns is refused by git ("dubious ownership"):
// the message says so and how to fix it, instead of "not found", and the
// bot changes no git config to get past it.
func TestARepositoryOfAnotherUserSaysWhatGitSays(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a repository to another user")
	}
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	if err := filepath.Walk(remote.Path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	e := newEnv(t, Repo{Name: "theirs", URL: remote.Path})
	_, err := e.m.Open(context.Background(), "theirs", ThreadKey{"console", "1"})
	if err == nil {
		t.Fatal("a repository another user owns was opened")
	}
	msg := ErrorMessage(err)
	for _, want := range []string{`"theirs"`, "dubious ownership", "another user", "owner", "safe.directory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "not found") || strings.Contains(msg, remote.Path) {
		t.Errorf("message %q says not found, or shows a path", msg)
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("the bot wrote into HOME (a git config?): %v", entries)
	}
}
