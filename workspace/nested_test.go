package workspace

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// Nested repositories of every kind the agent can make do not stop the
// thread's commits and pushes: one without a commit (`git init`, `cargo
// new`) is committed as files, one with a commit as a link to it, a folder
// whose .git is a file pointing elsewhere is left out, and each is reported.
func TestNestedRepositoriesDoNotBreakCommits(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	w := e.open("app", "nested")
	r := w.Root()

	// cargo new: a repository with files and a .gitignore, no commit.
	crate := filepath.Join(r, "crates", "new crate")
	agentGit(t, "", "init", "--quiet", crate)
	writeFile(t, crate, "Cargo.toml", "[package]\nname = \"x\"\n")
	writeFile(t, crate, "src/main.rs", "fn main() {}\n")
	writeFile(t, crate, ".gitignore", "/target\n")
	writeFile(t, crate, "target/debug/x", "binary\n")
	// git init inside it again, no commit either: files too.
	inner := filepath.Join(crate, "inner")
	agentGit(t, "", "init", "--quiet", inner)
	writeFile(t, inner, "i.txt", "i\n")
	// A bare git init, nothing in it but .git.
	agentGit(t, "", "init", "--quiet", filepath.Join(r, "empty"))
	// A repository with a commit.
	lib := filepath.Join(r, "vendor", "lib")
	agentGit(t, "", "init", "--quiet", lib)
	writeFile(t, lib, "lib.txt", "lib\n")
	agentGit(t, lib, "add", "lib.txt")
	agentGit(t, lib, "commit", "--quiet", "-m", "lib")
	libHead := agentGit(t, lib, "rev-parse", "HEAD")
	// A .git file pointing at that repository's .git.
	writeFile(t, r, "planted/.git", "gitdir: "+filepath.Join(lib, ".git")+"\n")
	writeFile(t, r, "planted/p.txt", "p\n")
	writeFile(t, r, "plain.txt", "plain\n")

	res, err := w.CommitWork(ctx, CommitRequest{Request: "nested repositories"})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if res.SHA == "" {
		t.Fatal("nothing was committed")
	}
	want := []Nested{
		{Path: "crates/new crate", How: NestedAsFiles},
		{Path: "crates/new crate/inner", How: NestedAsFiles},
		{Path: "planted", How: NestedSkipped},
		{Path: "vendor/lib", How: NestedLinked},
	}
	if !slices.Equal(res.Nested, want) {
		t.Errorf("nested = %+v, want %+v", res.Nested, want)
	}
	files := agentGit(t, r, "ls-tree", "-r", "--format=%(objectmode) %(path)", res.SHA)
	wantFiles := []string{
		"100644 README.md",
		"100644 crates/new crate/.gitignore",
		"100644 crates/new crate/Cargo.toml",
		"100644 crates/new crate/inner/i.txt",
		"100644 crates/new crate/src/main.rs",
		"100644 plain.txt",
		"100644 src/main.go",
		"160000 vendor/lib",
	}
	if got := strings.Split(files, "\n"); !slices.Equal(got, wantFiles) {
		t.Errorf("committed tree:\n%s\nwant:\n%s", files, strings.Join(wantFiles, "\n"))
	}
	if got := agentGit(t, r, "rev-parse", res.SHA+":vendor/lib"); got != libHead {
		t.Errorf("vendor/lib links %s, want its HEAD %s", got, libHead)
	}
	mustPush(t, w)

	// Later commits work: new and changed files of the crate are ordinary
	// files now; the others are reported again, not recorded twice.
	writeFile(t, crate, "src/lib.rs", "pub fn f() {}\n")
	writeFile(t, crate, "Cargo.toml", "[package]\nname = \"y\"\n")
	writeFile(t, r, "plain.txt", "plain 2\n")
	writeFile(t, inner, "i.txt", "i 2\n")
	res, err = w.CommitWork(ctx, CommitRequest{Request: "more"})
	if err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	if got := agentGit(t, r, "show", "--name-only", "--format=", res.SHA); got != "crates/new crate/Cargo.toml\ncrates/new crate/inner/i.txt\ncrates/new crate/src/lib.rs\nplain.txt" {
		t.Errorf("second commit touched %q", got)
	}
	for _, n := range res.Nested {
		if n.How != NestedSkipped {
			t.Errorf("second commit recorded %+v again", n)
		}
	}
	pushed := mustPush(t, w)
	if got := remote.Files(t, w.Branch())["crates/new crate/src/lib.rs"]; pushed.SHA != res.SHA || strings.TrimSpace(got) != "pub fn f() {}" {
		t.Errorf("push = %+v; the remote branch lacks the crate's new file", pushed)
	}
	if _, err := os.Stat(filepath.Join(crate, ".git", "HEAD")); err != nil {
		t.Errorf("the crate's own repository was touched: %v", err)
	}
}

// A named pipe as a nested repository's HEAD (which git opens and waits on)
// holds the bot's git up for GitTimeout at most, and the thread is told which
// file to remove; once it is gone, commits work again.
func TestNestedRepositoryWithAPipeDoesNotHangTheThread(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	m, err := New(Config{
		DataDir:         t.TempDir(),
		Repos:           []Repo{{Name: "app", URL: remote.Path}},
		Author:          bot,
		GitTimeout:      2 * time.Second,
		CleanupInterval: -1,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	ctx := context.Background()
	w, err := m.Open(ctx, "app", ThreadKey{"slack", "pipe"})
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(w.Root(), "sub")
	agentGit(t, "", "init", "--quiet", sub)
	head := filepath.Join(sub, ".git", "HEAD")
	os.Remove(head)
	if err := syscall.Mkfifo(head, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	writeFile(t, w.Root(), "work.txt", "work\n")

	start := time.Now()
	_, err = w.Commit(ctx, CommitRequest{Request: "stuck"})
	if err == nil || time.Since(start) > 30*time.Second {
		t.Fatalf("Commit = %v after %s; want an error within the timeout", err, time.Since(start))
	}
	if msg := ErrorMessage(err); !strings.Contains(msg, `"sub/.git/HEAD"`) || !strings.Contains(msg, "did not finish within 2s") {
		t.Errorf("message = %q, want it to name the pipe", msg)
	}
	os.Remove(head)
	if _, err := w.Commit(ctx, CommitRequest{Request: "unstuck"}); err != nil {
		t.Fatalf("Commit after the pipe was removed: %v", err)
	}
	mustPush(t, w)
}

// A submodule of the remote's branch (a gitlink and .gitmodules, checked
// out as an empty folder) is left as it is: later commits and pushes work,
// and nothing about it is reported. Filled in by the agent (a clone of the
// library at another commit), it is recorded at its new commit, as git add
// would.
func TestSubmoduleOfTheRemoteDoesNotBreakCommits(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	lib := gitremote.NewBare(t, gitremote.Options{Name: "lib", Files: map[string]string{"lib.txt": "v1\n"}})
	libV1 := lib.Rev(t, "main")
	clone := filepath.Join(t.TempDir(), "clone")
	agentGit(t, "", "clone", "--quiet", remote.Path, clone)
	writeFile(t, clone, ".gitmodules", "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = "+lib.Path+"\n")
	agentGit(t, clone, "update-index", "--add", "--cacheinfo", "160000,"+libV1+",vendor/lib")
	agentGit(t, clone, "add", ".gitmodules")
	agentGit(t, clone, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "--quiet", "-m", "add lib")
	agentGit(t, clone, "push", "--quiet", "origin", "HEAD:main")

	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	w := e.open("app", "submodule")
	writeFile(t, w.Root(), "a.txt", "a\n")
	res, err := w.CommitWork(ctx, CommitRequest{Request: "a"})
	if err != nil || res.SHA == "" || len(res.Nested) != 0 {
		t.Fatalf("Commit = %+v, %v; want a commit and nothing reported", res, err)
	}
	if got := agentGit(t, w.Root(), "show", "--name-only", "--format=", res.SHA); got != "a.txt" {
		t.Errorf("commit touched %q, want a.txt", got)
	}
	mustPush(t, w)

	// The agent fills the submodule in, at a newer commit of the library.
	lib.Commit(t, gitremote.Change{Branch: "main", Files: map[string]string{"lib.txt": "v2\n"}, Message: "v2"})
	libV2 := lib.Rev(t, "main")
	sub := filepath.Join(w.Root(), "vendor", "lib")
	os.RemoveAll(sub)
	agentGit(t, "", "clone", "--quiet", lib.Path, sub)
	res, err = w.CommitWork(ctx, CommitRequest{Request: "update lib"})
	if err != nil || res.SHA == "" {
		t.Fatalf("Commit = %+v, %v", res, err)
	}
	if got := agentGit(t, w.Root(), "rev-parse", res.SHA+":vendor/lib"); got != libV2 {
		t.Errorf("vendor/lib recorded at %s, want the clone's %s", got, libV2)
	}
	mustPush(t, w)
}

// A nested .git folder the agent wrote to borrow another thread's
// repository (its commondir file, or its refs linked there) is left out:
// resolving its HEAD would record the other thread's unpushed commit in
// this thread's branch.
func TestNestedRepositoryCannotNameAnotherThreadsCommit(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	b := e.open("app", "victim")
	writeFile(t, b.Root(), "secret.txt", "unpushed\n")
	secret, err := b.Commit(ctx, CommitRequest{Request: "unpushed work"})
	if err != nil || secret == "" {
		t.Fatalf("victim's commit: %q, %v", secret, err)
	}
	a := e.open("app", "attacker")
	ref := "ref: refs/heads/" + b.Branch() + "\n"
	writeFile(t, a.Root(), "common/.git/HEAD", ref)
	writeFile(t, a.Root(), "common/.git/commondir", b.CommonDir()+"\n")
	writeFile(t, a.Root(), "common/f.txt", "f\n")
	writeFile(t, a.Root(), "linked/.git/HEAD", ref)
	if err := os.Symlink(filepath.Join(b.CommonDir(), "refs"), filepath.Join(a.Root(), "linked", ".git", "refs")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a.Root(), "linked/f.txt", "f\n")
	writeFile(t, a.Root(), "plain.txt", "plain\n")

	res, err := a.CommitWork(ctx, CommitRequest{Request: "borrow"})
	if err != nil || res.SHA == "" {
		t.Fatalf("Commit: %+v, %v", res, err)
	}
	if tree := agentGit(t, a.Root(), "ls-tree", "-r", "HEAD"); strings.Contains(tree, secret) {
		t.Errorf("the other thread's commit %s is in the attacker's branch:\n%s", secret, tree)
	}
	want := []Nested{{Path: "common", How: NestedSkipped}, {Path: "linked", How: NestedSkipped}}
	if !slices.Equal(res.Nested, want) {
		t.Errorf("Nested = %+v, want %+v", res.Nested, want)
	}
}
