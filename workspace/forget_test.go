package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// TestForgetDeletesOnlyTheThreadsFiles plays the agent: it planted symbolic
// links in its scratch folder and worktree pointing outside the data dir
// (a folder and a file of the operator's), and replaced a folder of its
// scratch with a link to another thread's scratch. Forget removes the
// thread's files and the links themselves; every target keeps its content,
// and the other thread's workspace stays whole.
func TestForgetDeletesOnlyTheThreadsFiles(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	outside := t.TempDir()
	writeFile(t, outside, "precious/keep.txt", "the operator's\n")
	writeFile(t, outside, "secret.txt", "the operator's too\n")

	other := e.open("app", "other")
	writeFile(t, other.ScratchDir(), "out.log", "other thread's output\n")
	other.Close()
	old := e.open("app", "old")
	writeFile(t, old.Root(), "unsaved.txt", "work\n")
	writeFile(t, old.ScratchDir(), "big.log", "0123456789\n")
	for link, target := range map[string]string{
		filepath.Join(old.ScratchDir(), "dir"):    filepath.Join(outside, "precious"),
		filepath.Join(old.ScratchDir(), "file"):   filepath.Join(outside, "secret.txt"),
		filepath.Join(old.Root(), "escape"):       outside,
		filepath.Join(old.ScratchDir(), "others"): other.ScratchDir(),
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	key := ThreadKey{Platform: "slack", Key: "old"}
	if err := e.m.Forget(ctx, "app", key); err == nil {
		t.Fatal("Forget of a workspace held open succeeded")
	}
	old.Close()

	size, err := ThreadFilesSize(ctx, e.cfg.DataDir, "app", key)
	if err != nil || size < int64(len("0123456789\n")+len("work\n")) {
		t.Errorf("ThreadFilesSize = %d, %v; want at least the files written", size, err)
	}
	if err := e.m.Forget(ctx, "app", key); err != nil {
		t.Fatal(err)
	}
	id := threadID(key)
	for _, p := range threadPaths("app", id) {
		if _, err := os.Lstat(filepath.Join(e.cfg.DataDir, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there after Forget (%v)", p, err)
		}
	}
	if got := readFile(t, outside, "precious/keep.txt"); got != "the operator's\n" {
		t.Errorf("outside folder's file = %q", got)
	}
	if got := readFile(t, outside, "secret.txt"); got != "the operator's too\n" {
		t.Errorf("outside file = %q", got)
	}
	if got := readFile(t, other.ScratchDir(), "out.log"); got != "other thread's output\n" {
		t.Errorf("other thread's scratch = %q", got)
	}
	if _, err := os.Stat(filepath.Join(other.Root(), ".git")); err != nil {
		t.Errorf("other thread's worktree: %v", err)
	}
	if size, err := ThreadFilesSize(ctx, e.cfg.DataDir, "app", key); err != nil || size != 0 {
		t.Errorf("ThreadFilesSize after Forget = %d, %v", size, err)
	}
	// Forgotten: the thread opens afresh, from the remote.
	again := e.open("app", "old")
	defer again.Close()
	if _, err := os.Stat(filepath.Join(again.Root(), "unsaved.txt")); !os.IsNotExist(err) {
		t.Errorf("the forgotten thread's uncommitted file came back (%v)", err)
	}
	// A folder on the way that is a link out of the data dir (meta/app) is
	// not followed: the file of the same name there stays.
	elsewhere := t.TempDir()
	x := ThreadKey{Platform: "slack", Key: "x"}
	writeFile(t, elsewhere, threadID(x)+".json", "not the bot's\n")
	meta := filepath.Join(e.cfg.DataDir, "meta", "app")
	if err := os.RemoveAll(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, meta); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Forget(ctx, "app", x); err == nil {
		t.Error("Forget through a link out of the data dir succeeded")
	}
	if got := readFile(t, elsewhere, threadID(x)+".json"); got != "not the bot's\n" {
		t.Errorf("file beyond a link = %q", got)
	}
	// A name that is not one configured name (a stored thread's repo) is
	// refused, also when it leads back to a repository's folders: "x/../app"
	// would reach the open workspace of "app" past its in-use check.
	for _, bad := range []string{"", "..", "../x", "/abs", "x/../app", "app/.", "./app"} {
		if err := e.m.Forget(ctx, bad, key); err == nil {
			t.Errorf("Forget(repo %q) succeeded", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(again.Root(), ".git")); err != nil {
		t.Errorf("the open workspace of app: %v", err)
	}
}

// ThreadFilesSize counts the space the thread's files take, as du does: the
// agent hard-linking one file many times in its scratch folder does not
// make the thread look many times its size.
func TestThreadFilesSizeCountsHardLinksOnce(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	key := ThreadKey{Platform: "slack", Key: "links"}
	w := e.open("app", "links")
	defer w.Close()
	before, err := ThreadFilesSize(ctx, e.cfg.DataDir, "app", key)
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(w.ScratchDir(), "big.bin")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := os.Link(big, filepath.Join(w.ScratchDir(), "link"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	after, err := ThreadFilesSize(ctx, e.cfg.DataDir, "app", key)
	if err != nil {
		t.Fatal(err)
	}
	if grew := after - before; grew < 1<<20 || grew > 2<<20 {
		t.Errorf("a 1 MiB file linked 50 times grew the thread by %d bytes; want about 1 MiB", grew)
	}
}
