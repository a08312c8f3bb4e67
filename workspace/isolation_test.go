package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// viewGit runs git as the agent's sandbox can: in thread w's worktree, with
// only what ReadOnlyGitPaths shows (the repository named explicitly, as
// Root/.git does).
func viewGit(t *testing.T, w *Workspace, args ...string) (string, error) {
	t.Helper()
	out, err := gitremote.TryGit(w.Root(), append([]string{"--git-dir=" + w.GitDir()}, args...)...)
	return strings.TrimRight(out, "\n"), err
}

// A thread sees the remote as it is plus its own work, and nothing of the
// other threads' unpushed work: not a commit the remote refused, not the WIP
// commit saved when a workspace was removed, by no ref and no object, in
// any file a sandbox shows it. Its own history works as usual.
func TestThreadsSeeNoOtherThreadsUnpushedCommits(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	a := e.open("app", "attacker")
	b := e.open("app", "refused")
	c := e.open("app", "removed")
	d := e.open("app", "published")

	// B's push is refused by the remote.
	hook := "#!/bin/sh\nwhile read old new ref; do [ \"$ref\" = refs/heads/" + b.Branch() + " ] && { echo no >&2; exit 1; }; done; exit 0\n"
	if err := os.WriteFile(filepath.Join(remote.Path, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, b.Root(), "refused.txt", "b-refused-secret\n")
	refused := mustCommit(t, b, "refused work")
	if _, err := b.Push(ctx); err == nil {
		t.Fatal("B's push went through; the test needs it refused")
	}
	// C's workspace is removed with uncommitted work: a WIP commit.
	writeFile(t, c.Root(), "wip.txt", "c-wip-secret\n")
	if err := c.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	wip, err := runGitPlain(c.CommonDir(), "rev-parse", c.Branch())
	if err != nil || wip == "" {
		t.Fatalf("C's WIP commit: %q, %v", wip, err)
	}
	// D's work is pushed: on the remote, so any thread may read it.
	writeFile(t, d.Root(), "published.txt", "d-published\n")
	published := mustCommit(t, d, "published work")
	mustPush(t, d)

	// A's own work: one commit pushed, one not, an edit not committed.
	writeFile(t, a.Root(), "a.txt", "a pushed\n")
	mustCommit(t, a, "a pushed")
	mustPush(t, a)
	writeFile(t, a.Root(), "a.txt", "a unpushed\n")
	mine := mustCommit(t, a, "a unpushed")
	writeFile(t, a.Root(), "a.txt", "a uncommitted\n")
	if _, err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	secrets := map[string]string{"B's refused commit": refused, "C's WIP commit": wip}
	for _, s := range []string{"b-refused-secret", "c-wip-secret"} {
		secrets[s] = s
	}
	// Every file the sandbox shows: names and contents (refs, packed-refs,
	// logs, worktree records; loose objects are named by their hash).
	for _, dir := range a.ReadOnlyGitPaths() {
		filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			rel := filepath.ToSlash(strings.TrimPrefix(p, dir))
			data, _ := os.ReadFile(p)
			for what, s := range secrets {
				if strings.Contains(string(data), s) || strings.Contains(strings.ReplaceAll(rel, "/", ""), s) {
					t.Errorf("%s is in %s", what, p)
				}
			}
			return nil
		})
	}
	// Git itself: refs, every object it can list, and each hash asked for.
	refs, err := viewGit(t, a, "for-each-ref", "--format=%(refname)")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range strings.Split(refs, "\n") {
		if ref != "refs/heads/"+a.Branch() && !strings.HasPrefix(ref, "refs/remotes/origin/") {
			t.Errorf("thread A sees ref %s", ref)
		}
	}
	if !strings.Contains(refs, "refs/remotes/origin/"+d.Branch()) {
		t.Errorf("thread A does not see D's pushed branch; refs:\n%s", refs)
	}
	all, err := viewGit(t, a, "cat-file", "--batch-all-objects", "--batch")
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("git cat-file --batch-all-objects shows %s", what)
		}
	}
	for what, sha := range map[string]string{"B's refused commit": refused, "C's WIP commit": wip} {
		if out, err := viewGit(t, a, "cat-file", "-p", sha); err == nil {
			t.Errorf("thread A reads %s:\n%s", what, out)
		}
	}
	if out, err := viewGit(t, a, "cat-file", "-p", published+":published.txt"); err != nil || out != "d-published" {
		t.Errorf("D's pushed commit in thread A: %q, %v; want it readable", out, err)
	}
	// The session pages read pushes from the mirror: a refused commit is
	// not among them.
	if patch, _, err := e.m.CommitDiff(ctx, "app", "", refused); err == nil {
		t.Errorf("CommitDiff of B's refused commit = %q, want an error", patch)
	}
	// A's own history.
	if out, err := viewGit(t, a, "log", "--format=%H %s", "-2"); err != nil || !strings.HasPrefix(out, mine+" a unpushed\n") || !strings.HasSuffix(out, " a pushed") {
		t.Errorf("git log in A = %q, %v; want its two commits", out, err)
	}
	if out, err := viewGit(t, a, "status", "--porcelain", "--branch"); err != nil || !strings.Contains(out, " M a.txt") {
		t.Errorf("git status in A = %q, %v; want the edit", out, err)
	}
	if out, err := viewGit(t, a, "diff", "origin/main"); err != nil || !strings.Contains(out, "+a uncommitted") {
		t.Errorf("git diff origin/main in A = %q, %v", out, err)
	}
}

// A commit writes into the thread's repository only the objects the mirror
// lacks: unchanged trees are found among the mirror's objects, not written
// again.
func TestCommitWritesOnlyNewObjects(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "objects")
	writeFile(t, w.Root(), "README.md", "# changed\n")
	mustCommit(t, w, "one file")
	var loose []string
	filepath.WalkDir(filepath.Join(w.CommonDir(), "objects"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() && len(filepath.Base(filepath.Dir(p))) == 2 {
			loose = append(loose, p)
		}
		return nil
	})
	// The blob, the root tree, the commit; not src/'s unchanged tree.
	if len(loose) != 3 {
		t.Errorf("the commit wrote %d objects into the thread's repository, want 3: %v", len(loose), loose)
	}
}

// A thread's repository starts with the remote's branches in one
// packed-refs file, not a file per branch.
func TestThreadRepositoryPacksTheRemotesRefs(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	for i := range 20 {
		remote.Commit(t, gitremote.Change{Branch: "feature/" + string(rune('a'+i)), Files: map[string]string{"f.txt": "f\n"}, Message: "f"})
	}
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "packed")
	var loose []string
	filepath.WalkDir(filepath.Join(w.CommonDir(), "refs", "remotes"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			loose = append(loose, p)
		}
		return nil
	})
	if len(loose) != 0 {
		t.Errorf("%d loose remote-tracking refs, want them packed: %v", len(loose), loose)
	}
	if b, err := os.ReadFile(filepath.Join(w.CommonDir(), "packed-refs")); err != nil || strings.Count(string(b), " refs/remotes/origin/") != 21 {
		t.Errorf("packed-refs = %q, %v; want the remote's 21 branches", b, err)
	}
}

// Threads of one repository share its cache folder, kept when a workspace
// is removed; another repository's threads get a folder of their own,
// outside every path a thread of the first is shown.
func TestCacheFolderIsPerRepository(t *testing.T) {
	t.Parallel()
	appRemote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	libRemote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: appRemote.Path}, Repo{Name: "lib", URL: libRemote.Path})
	a1, a2, b := e.open("app", "one"), e.open("app", "two"), e.open("lib", "one")
	if a1.CacheDir() == "" || a1.CacheDir() != a2.CacheDir() {
		t.Fatalf("threads of one repository have caches %q and %q", a1.CacheDir(), a2.CacheDir())
	}
	if fi, err := os.Lstat(a1.CacheDir()); err != nil || !fi.IsDir() {
		t.Fatalf("cache folder after Open: %v, %v", fi, err)
	}
	for _, p := range append([]string{b.Root(), b.ScratchDir(), b.CacheDir()}, b.ReadOnlyGitPaths()...) {
		if p == a1.CacheDir() || strings.HasPrefix(a1.CacheDir(), p+"/") || strings.HasPrefix(p, a1.CacheDir()+"/") {
			t.Errorf("lib's thread is shown %s, which overlaps app's cache %s", p, a1.CacheDir())
		}
	}
	writeFile(t, a1.CacheDir(), "go-build/x", "warm\n")
	if err := a1.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, a2.CacheDir(), "go-build/x"); got != "warm\n" {
		t.Errorf("after a workspace's removal the cache holds %q", got)
	}
}

// With caches off no cache folder is made or named.
func TestNoCaches(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	dataDir := t.TempDir()
	m, err := New(Config{DataDir: dataDir, Repos: []Repo{{Name: "app", URL: remote.Path}}, NoCaches: true, CleanupInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	w, err := m.Open(context.Background(), "app", ThreadKey{Platform: "slack", Key: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if w.CacheDir() != "" {
		t.Errorf("CacheDir = %q with caches off", w.CacheDir())
	}
	if _, err := os.Lstat(filepath.Join(dataDir, "caches")); err == nil {
		t.Error("a cache folder was made with caches off")
	}
}
