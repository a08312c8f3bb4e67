package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

func TestOpenCommitPushLocalRemote(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()

	w := e.open("app", "T1/C1/1712345678.000100")
	if want := BranchName("bot/", ThreadKey{"slack", "T1/C1/1712345678.000100"}); w.Branch() != want {
		t.Errorf("Branch = %q, want %q", w.Branch(), want)
	}
	if got := readFile(t, w.Root(), "README.md"); got != "# demo\n" {
		t.Errorf("README.md = %q, want the default branch's content", got)
	}
	if rel, err := filepath.Rel(w.Root(), w.ScratchDir()); err != nil || !strings.HasPrefix(rel, "..") {
		t.Errorf("ScratchDir %q is inside Root %q, want it outside the git tree", w.ScratchDir(), w.Root())
	}
	if st, err := os.Stat(w.ScratchDir()); err != nil || !st.IsDir() {
		t.Errorf("ScratchDir %q does not exist: %v", w.ScratchDir(), err)
	}
	if changed, err := w.Changed(ctx); err != nil || changed {
		t.Errorf("Changed on a fresh workspace = %v, %v; want false, nil", changed, err)
	}
	if sha, err := w.Commit(ctx, CommitRequest{Request: "nothing"}); err != nil || sha != "" {
		t.Errorf("Commit with no changes = %q, %v; want no commit", sha, err)
	}
	if res, err := w.Push(ctx); err != nil || !res.UpToDate || remote.Rev(t, w.Branch()) != "" {
		t.Errorf("Push without commits = %+v, %v; want nothing published", res, err)
	}

	writeFile(t, w.Root(), "src/util.go", "package main\n\nfunc helper() int { return 1 }\n")
	writeFile(t, w.Root(), "README.md", "# demo\n\nNow with a helper.\n")
	writeFile(t, w.ScratchDir(), "download.bin", "scratch data")
	if changed, err := w.Changed(ctx); err != nil || !changed {
		t.Errorf("Changed after edits = %v, %v; want true, nil", changed, err)
	}
	sha, err := w.Commit(ctx, CommitRequest{
		Request:    "Add a helper\nplease, with docs",
		ThreadLink: "https://acme.slack.com/archives/C1/p1712345678000100",
		CoAuthor:   Identity{Name: "Ann Lee", Email: "ann@example.com"},
	})
	if err != nil || sha == "" {
		t.Fatalf("Commit = %q, %v; want a commit", sha, err)
	}
	if remote.Rev(t, w.Branch()) != "" {
		t.Errorf("remote has %s before Push, want it absent", w.Branch())
	}

	res := mustPush(t, w)
	if res.SHA != sha || res.Branch != w.Branch() || !res.Created || res.Commits != 1 || res.UpToDate || res.Forced {
		t.Errorf("PushResult = %+v, want SHA %s, branch %s, created, 1 commit", res, sha, w.Branch())
	}
	wantStats := []FileStat{{Path: "README.md", Added: 2}, {Path: "src/util.go", Added: 3}}
	if !slices.Equal(res.Files, wantStats) {
		t.Errorf("PushResult.Files = %+v, want %+v", res.Files, wantStats)
	}
	if res.CompareURL != "" {
		t.Errorf("CompareURL for a local remote = %q, want empty", res.CompareURL)
	}
	if got := remote.Rev(t, w.Branch()); got != sha {
		t.Errorf("remote %s = %s, want %s", w.Branch(), got, sha)
	}
	files := remote.Files(t, w.Branch())
	if files["src/util.go"] == "" || strings.Contains(files["README.md"], "helper") == false {
		t.Errorf("remote branch files = %v, want the two edits", files)
	}
	if _, ok := files["download.bin"]; ok {
		t.Errorf("scratch file was committed")
	}
	c := remote.Commits(t, w.Branch())[0]
	wantMsg := "Add a helper\n\nhttps://acme.slack.com/archives/C1/p1712345678000100\n\nCo-authored-by: Ann Lee <ann@example.com>"
	if c.Message != wantMsg {
		t.Errorf("commit message = %q, want %q", c.Message, wantMsg)
	}
	if c.AuthorName != bot.Name || c.AuthorEmail != bot.Email || c.CommitterEmail != bot.Email {
		t.Errorf("commit author/committer = %s <%s> / <%s>, want the bot %s", c.AuthorName, c.AuthorEmail, c.CommitterEmail, bot)
	}
	if got := remote.Rev(t, "main"); got != remote.Commits(t, "main")[0].SHA || len(remote.Commits(t, "main")) != 1 {
		t.Errorf("main moved, want it untouched")
	}

	again := mustPush(t, w)
	if !again.UpToDate || again.SHA != sha {
		t.Errorf("second Push = %+v, want UpToDate at %s", again, sha)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The remote-tracking ref follows the push, so the next push's base is right.
	mr := e.m.mirrors["app"]
	if refs, _ := mr.refs(ctx, "refs/remotes/origin/"+w.Branch()); refs["refs/remotes/origin/"+w.Branch()] != sha {
		t.Errorf("origin/%s = %q after push, want %s", w.Branch(), refs["refs/remotes/origin/"+w.Branch()], sha)
	}
}

func TestOpenReturnsSameWorkspaceAndSurvivesRestart(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	dataDir := t.TempDir()
	e := newEnvIn(t, dataDir, newFakeClock(), Repo{Name: "app", URL: remote.URL()})
	w1 := e.open("app", "k1")
	w2 := e.open("app", "k1")
	if w1 != w2 {
		t.Errorf("two Opens of one thread gave different workspaces")
	}
	writeFile(t, w1.Root(), "wip.txt", "uncommitted\n")
	w1.Close()
	w2.Close()
	if err := e.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Open(context.Background(), "app", ThreadKey{"slack", "k1"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close: err = %v, want ErrClosed", err)
	}

	// A new Manager on the same data dir (a restart) finds the same folder,
	// uncommitted work included.
	e2 := newEnvIn(t, dataDir, newFakeClock(), Repo{Name: "app", URL: remote.URL()})
	w3 := e2.open("app", "k1")
	if w3.Root() != w1.Root() || w3.Branch() != w1.Branch() {
		t.Errorf("after restart Root/Branch = %s/%s, want %s/%s", w3.Root(), w3.Branch(), w1.Root(), w1.Branch())
	}
	if got := readFile(t, w3.Root(), "wip.txt"); got != "uncommitted\n" {
		t.Errorf("wip.txt after restart = %q, want the uncommitted content", got)
	}
}

func TestConcurrentOpensShareOneMirror(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: gitremote.GenerateFiles(60)})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()

	const n = 8
	var wg sync.WaitGroup
	ws := make([]*Workspace, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ws[i], errs[i] = e.m.Open(ctx, "app", ThreadKey{Platform: "discord", Key: fmt.Sprint(1000 + i)})
			if errs[i] != nil {
				return
			}
			writeFile(t, ws[i].Root(), fmt.Sprintf("thread%d.txt", i), "hello\n")
			if _, errs[i] = ws[i].Commit(ctx, CommitRequest{Request: fmt.Sprintf("thread %d", i)}); errs[i] != nil {
				return
			}
			_, errs[i] = ws[i].Push(ctx)
		})
	}
	wg.Wait()
	roots := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("workspace %d: %v", i, errs[i])
		}
		roots[ws[i].Root()] = true
		if got := readFile(t, ws[i].Root(), "README.md"); got != "# generated\n" {
			t.Errorf("workspace %d README = %q, want checked-out content", i, got)
		}
		files := remote.Files(t, ws[i].Branch())
		if files[fmt.Sprintf("thread%d.txt", i)] != "hello" || len(files) != 62 {
			t.Errorf("remote branch %s has %d files (thread file %q), want 62 with its own file", ws[i].Branch(), len(files), files[fmt.Sprintf("thread%d.txt", i)])
		}
	}
	if len(roots) != n {
		t.Errorf("%d distinct roots, want %d", len(roots), n)
	}
	mirrors, _ := filepath.Glob(filepath.Join(e.cfg.DataDir, "mirrors", "*"))
	if len(mirrors) != 1 {
		t.Errorf("mirrors = %v, want exactly one", mirrors)
	}
	// Each thread's worktree hangs off its own repository, none off the
	// mirror.
	for i := range n {
		list, err := runGitPlain(ws[i].CommonDir(), "worktree", "list", "--porcelain")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(list, "\nbranch refs/heads/"+ws[i].Branch()+"\n"); got != 1 {
			t.Errorf("thread %d's repository lists %d worktrees of its branch, want 1:\n%s", i, got, list)
		}
	}
	if list, err := runGitPlain(filepath.Join(e.cfg.DataDir, "mirrors", "app.git"), "worktree", "list", "--porcelain"); err != nil || strings.Count(list, "worktree ") != 1 {
		t.Errorf("mirror worktrees = %q (%v), want the bare repository alone", list, err)
	}
}

func TestOpenReusesExistingRemoteBranch(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	key := ThreadKey{Platform: "slack", Key: "reuse"}
	branch := BranchName("bot/", key)
	// The branch exists on the remote already (an earlier bot install, or a
	// person continuing the thread's work), with a commit main lacks.
	tip := remote.Commit(t, gitremote.Change{Branch: branch, Files: map[string]string{"earlier.txt": "earlier work\n"}, Message: "earlier"})
	remote.Commit(t, gitremote.Change{Branch: "main", Files: map[string]string{"main-only.txt": "x\n"}, Message: "main moved"})

	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w, err := e.m.Open(context.Background(), "app", key)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, w.Root(), "earlier.txt"); got != "earlier work\n" {
		t.Errorf("earlier.txt = %q, want the remote branch's file", got)
	}
	if _, err := os.Stat(filepath.Join(w.Root(), "main-only.txt")); !os.IsNotExist(err) {
		t.Errorf("main-only.txt exists (err %v): the branch was reset to main, want it reused", err)
	}
	head, _ := runGitPlain(w.Root(), "rev-parse", "HEAD")
	if strings.TrimSpace(head) != tip {
		t.Errorf("HEAD = %s, want the remote branch tip %s", head, tip)
	}
	writeFile(t, w.Root(), "more.txt", "more\n")
	mustCommit(t, w, "more work")
	res := mustPush(t, w)
	if res.Created || res.Forced || res.Commits != 1 {
		t.Errorf("PushResult = %+v, want an update of the existing branch by 1 commit", res)
	}
	if cs := remote.Commits(t, branch); len(cs) != 3 || cs[1].SHA != tip {
		t.Errorf("remote history = %d commits (second %v), want ours on top of %s", len(cs), cs, tip)
	}
}

func TestMissingFolderIsRecreatedFromBranch(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "gone")
	writeFile(t, w.Root(), "kept.txt", "committed, never pushed\n")
	sha := mustCommit(t, w, "keep me")
	w.Close()

	if err := os.RemoveAll(w.Root()); err != nil {
		t.Fatal(err)
	}
	w2 := e.open("app", "gone")
	if got := readFile(t, w2.Root(), "kept.txt"); got != "committed, never pushed\n" {
		t.Errorf("kept.txt = %q, want the branch's committed content", got)
	}
	head, _ := runGitPlain(w2.Root(), "rev-parse", "HEAD")
	if strings.TrimSpace(head) != sha {
		t.Errorf("HEAD = %s, want %s", head, sha)
	}
	// The unpushed commit is still pushable.
	if res := mustPush(t, w2); res.SHA != sha || res.Commits != 1 {
		t.Errorf("PushResult = %+v, want %s with 1 commit", res, sha)
	}
}

func TestOpenBadInput(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	masterOnly := gitremote.NewBare(t, gitremote.Options{Name: "legacy", DefaultBranch: "master", Files: seedFiles()})
	masterOnly.Commit(t, gitremote.Change{Branch: "develop", Files: map[string]string{"d": "d"}})
	e := newEnv(t,
		Repo{Name: "web", URL: remote.Path},
		Repo{Name: "app", URL: remote.Path},
		Repo{Name: "legacy", URL: masterOnly.Path, DefaultBranch: "main"},
		Repo{Name: "missing", URL: filepath.Join(t.TempDir(), "nope.git")},
	)
	ctx := context.Background()

	_, err := e.m.Open(ctx, "nope", ThreadKey{"slack", "1"})
	if !errors.Is(err, ErrUnknownRepo) {
		t.Fatalf("Open unknown repo: err = %v, want ErrUnknownRepo", err)
	}
	if msg := ErrorMessage(err); !strings.Contains(msg, `"nope"`) || !strings.Contains(msg, "app, legacy, missing, web") {
		t.Errorf("message = %q, want the name and the sorted known names", msg)
	}

	_, err = e.m.Open(ctx, "legacy", ThreadKey{"slack", "1"})
	if !errors.Is(err, ErrNoDefaultBranch) {
		t.Fatalf("Open without default branch: err = %v, want ErrNoDefaultBranch", err)
	}
	if msg := ErrorMessage(err); !strings.Contains(msg, `"main"`) || !strings.Contains(msg, "develop, master") {
		t.Errorf("message = %q, want the missing branch and the existing ones", msg)
	}
	if _, statErr := os.Stat(filepath.Join(e.cfg.DataDir, "mirrors", "legacy.git")); !os.IsNotExist(statErr) {
		t.Errorf("a mirror was left behind for a repository that failed to open (stat err %v)", statErr)
	}

	_, err = e.m.Open(ctx, "missing", ThreadKey{"slack", "1"})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Open of a missing remote: err = %v, want ErrUnreachable", err)
	}
	if msg := ErrorMessage(err); !strings.Contains(msg, `"missing"`) || strings.Contains(msg, t.TempDir()[:5]) && strings.Contains(msg, "/") {
		t.Errorf("message = %q, want the repository name and no path", msg)
	}

	_, err = e.m.Open(ctx, "app", ThreadKey{"slack", ""})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Open with empty key: err = %v, want ErrInvalid", err)
	}
}

func TestDiffIncludesCommittedUncommittedAndUntracked(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path, Forge: "github"})
	ctx := context.Background()
	w := e.open("app", "diff")

	writeFile(t, w.Root(), "committed.txt", "one\ntwo\n")
	mustCommit(t, w, "first")
	writeFile(t, w.Root(), "README.md", "# demo changed\n")           // modified, uncommitted
	writeFile(t, w.Root(), "new/untracked.txt", "brand\nnew\nfile\n") // untracked
	if err := os.Remove(filepath.Join(w.Root(), "src/main.go")); err != nil {
		t.Fatal(err)
	}
	// main moving on must not show up as reverted in the thread's diff
	remote.Commit(t, gitremote.Change{Branch: "main", Files: map[string]string{"upstream.txt": "u\n"}})
	if err := e.m.mirrors["app"].fetch(ctx); err != nil {
		t.Fatal(err)
	}

	d, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileStat{
		{Path: "README.md", Added: 1, Deleted: 1},
		{Path: "committed.txt", Added: 2},
		{Path: "new/untracked.txt", Added: 3},
		{Path: "src/main.go", Deleted: 3},
	}
	if !slices.Equal(d.Stat, want) {
		t.Errorf("Diff.Stat = %+v, want %+v", d.Stat, want)
	}
	for _, s := range []string{"+# demo changed", "+brand", "-func main() {}", "+two"} {
		if !strings.Contains(d.Patch, s) {
			t.Errorf("Diff.Patch lacks %q:\n%s", s, d.Patch)
		}
	}
	if strings.Contains(d.Patch, "upstream.txt") {
		t.Errorf("Diff.Patch shows upstream.txt, a change of main, want only the thread's work")
	}
	if d.CompareURL != "" {
		t.Errorf("CompareURL = %q for a local path, want empty", d.CompareURL)
	}
	// The real index is untouched: nothing is staged by Diff.
	staged, _ := runGitPlain(w.Root(), "diff", "--cached", "--name-only")
	if strings.TrimSpace(staged) != "" {
		t.Errorf("Diff staged %q in the real index, want nothing", staged)
	}

	// Renames are reported as such.
	mustCommit(t, w, "the rest")
	if err := os.Rename(filepath.Join(w.Root(), "committed.txt"), filepath.Join(w.Root(), "renamed.txt")); err != nil {
		t.Fatal(err)
	}
	d, err = w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(d.Stat, FileStat{Path: "renamed.txt", OldPath: "", Added: 2}) && !slices.Contains(d.Stat, FileStat{Path: "renamed.txt", Added: 2}) {
		t.Errorf("Diff.Stat after rename = %+v, want renamed.txt with 2 added lines (the file is new relative to main)", d.Stat)
	}
}

func TestParseNumstat(t *testing.T) {
	t.Parallel()
	in := "1\t2\ta.txt\x00-\t-\timg.png\x000\t0\t\x00old name.txt\x00new name.txt\x00"
	got := parseNumstat(in)
	want := []FileStat{{Path: "a.txt", Added: 1, Deleted: 2}, {Path: "img.png", Binary: true}, {Path: "new name.txt", OldPath: "old name.txt"}}
	if !slices.Equal(got, want) {
		t.Errorf("parseNumstat = %+v, want %+v", got, want)
	}
}

func TestReopenFastForwardsToCommitsOthersPushed(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "ff")
	writeFile(t, w.Root(), "a.txt", "a\n")
	mustCommit(t, w, "a")
	mustPush(t, w)
	w.Close()
	theirs := remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{"b.txt": "b\n"}, Message: "theirs"})
	// An uncommitted edit elsewhere does not stop a fast-forward.
	writeFile(t, w.Root(), "wip.txt", "wip\n")

	w2 := e.open("app", "ff")
	if head := gitremote.Git(t, w2.Root(), "rev-parse", "HEAD"); head != theirs {
		t.Errorf("HEAD after reopen = %s, want their commit %s", head, theirs)
	}
	if got := readFile(t, w2.Root(), "wip.txt"); got != "wip\n" {
		t.Errorf("wip.txt = %q, want the uncommitted edit kept", got)
	}
}

func TestBrokenFolderIsReplaced(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "broken")
	writeFile(t, w.Root(), "x.txt", "x\n")
	sha := mustCommit(t, w, "x")
	w.Close()
	// Someone deletes .git (or a crash left a half-made folder).
	if err := os.Remove(filepath.Join(w.Root(), ".git")); err != nil {
		t.Fatal(err)
	}
	w2 := e.open("app", "broken")
	if head := gitremote.Git(t, w2.Root(), "rev-parse", "HEAD"); head != sha {
		t.Errorf("HEAD = %s, want the branch's %s", head, sha)
	}
	if got := e.m.BranchFor(ThreadKey{"slack", "broken"}); got != w2.Branch() {
		t.Errorf("BranchFor = %q, want %q", got, w2.Branch())
	}
	if w2.Repo() != "app" || w2.DefaultBranch() != "main" || w2.Thread() != (ThreadKey{"slack", "broken"}) {
		t.Errorf("Repo/DefaultBranch/Thread = %s/%s/%v", w2.Repo(), w2.DefaultBranch(), w2.Thread())
	}
	if got := e.m.Repos(); !slices.Equal(got, []string{"app"}) {
		t.Errorf("Repos = %v, want [app]", got)
	}
}
