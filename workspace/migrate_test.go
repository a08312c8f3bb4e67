package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// A data dir of the layout where the threads' branches and worktrees were
// the shared mirror's own: at the next start every branch moves into its
// thread's repository with its unpushed commits, a worktree keeps its
// uncommitted files, and the mirror is left with the remote's refs and
// objects only.
func TestMirrorOfTheSharedLayoutIsMigrated(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	dataDir, clock := t.TempDir(), newFakeClock()
	repo := Repo{Name: "app", URL: remote.Path}
	e := newEnvIn(t, dataDir, clock, repo)
	e.open("app", "warmup").Close()
	mirror := filepath.Join(dataDir, "mirrors", "app.git")

	// What the shared layout left: a worktree of the mirror with an
	// unpushed commit and uncommitted work, and the branch of a thread
	// whose worktree was removed, with its WIP commit.
	legacyGit := func(dir string, args ...string) string {
		t.Helper()
		return strings.TrimSpace(gitremote.Git(t, dir, append([]string{"-c", "user.name=threadsmith", "-c", "user.email=bot@threadsmith.test"}, args...)...))
	}
	root := filepath.Join(dataDir, "workspaces", "app", "slack-old")
	legacyGit(mirror, "worktree", "add", "-q", "-b", "bot/slack-old", root, "origin/main")
	writeFile(t, root, "old.txt", "old-unpushed\n")
	legacyGit(root, "add", "old.txt")
	legacyGit(root, "commit", "-q", "-m", "old unpushed")
	oldTip := legacyGit(root, "rev-parse", "HEAD")
	writeFile(t, root, "typed.txt", "never committed\n")
	gone := filepath.Join(t.TempDir(), "gone")
	legacyGit(mirror, "worktree", "add", "-q", "-b", "bot/slack-gone", gone, "origin/main")
	writeFile(t, gone, "wip.txt", "gone-wip-secret\n")
	legacyGit(gone, "add", "wip.txt")
	legacyGit(gone, "commit", "-q", "-m", "WIP: saved")
	goneTip := legacyGit(gone, "rev-parse", "HEAD")
	os.RemoveAll(gone)
	if err := e.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A mirror of the shared layout has no marker.
	if err := os.Remove(filepath.Join(mirror, layoutMarker)); err != nil {
		t.Fatal(err)
	}

	e = newEnvIn(t, dataDir, clock, repo)
	w := e.open("app", "old")
	if got := strings.TrimSpace(gitremote.Git(t, w.Root(), "rev-parse", "HEAD")); got != oldTip {
		t.Errorf("the thread's branch is at %s, want its unpushed commit %s", got, oldTip)
	}
	if got := readFile(t, w.Root(), "typed.txt"); got != "never committed\n" {
		t.Errorf("typed.txt = %q, want the uncommitted work kept", got)
	}
	if st := gitremote.Git(t, w.Root(), "status", "--porcelain"); st != "?? typed.txt" {
		t.Errorf("git status = %q, want only the uncommitted file", st)
	}
	if res := mustPush(t, w); res.SHA != oldTip {
		t.Errorf("pushed %s, want %s", res.SHA, oldTip)
	}
	goneStore := filepath.Join(dataDir, "threads", "app", "slack-gone.git")
	if got, err := runGitPlain(goneStore, "show", "bot/slack-gone:wip.txt"); err != nil || got != "gone-wip-secret\n" {
		t.Errorf("the removed thread's WIP in its repository: %q, %v", got, err)
	}
	if heads := gitremote.Git(t, mirror, "for-each-ref", "refs/heads/"); heads != "" {
		t.Errorf("the mirror still has branches:\n%s", heads)
	}
	if regs, _ := os.ReadDir(filepath.Join(mirror, "worktrees")); len(regs) != 0 {
		t.Errorf("the mirror still has worktree registrations: %v", regs)
	}
	if _, err := runGitPlain(mirror, "cat-file", "-e", goneTip); err == nil {
		t.Errorf("the removed thread's WIP commit %s is still in the mirror's objects", goneTip)
	}
	if _, err := runGitPlain(mirror, "cat-file", "-e", oldTip); err != nil {
		t.Errorf("the pushed commit %s is not in the mirror: %v", oldTip, err)
	}
}

// A migration cut off after the branches left the mirror but before its
// objects were deleted is finished at the next start.
func TestMigrationCutOffIsFinished(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	dataDir, clock := t.TempDir(), newFakeClock()
	repo := Repo{Name: "app", URL: remote.Path}
	e := newEnvIn(t, dataDir, clock, repo)
	e.open("app", "warmup").Close()
	if err := e.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mirror := filepath.Join(dataDir, "mirrors", "app.git")
	// What a cut-off migration leaves: an object no ref reaches, and no
	// marker.
	orphan := strings.TrimSpace(gitremote.GitInput(t, mirror, []byte("orphan-secret\n"), nil, "hash-object", "-w", "--stdin"))
	if err := os.Remove(filepath.Join(mirror, layoutMarker)); err != nil {
		t.Fatal(err)
	}
	e = newEnvIn(t, dataDir, clock, repo)
	e.open("app", "after").Close()
	if _, err := runGitPlain(mirror, "cat-file", "-e", orphan); err == nil {
		t.Errorf("the object no ref reaches is still in the mirror")
	}
	if _, err := os.Stat(filepath.Join(mirror, layoutMarker)); err != nil {
		t.Errorf("the mirror is not marked as migrated: %v", err)
	}
}
