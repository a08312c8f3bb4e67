package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

func TestIdleWorkspacesRemovedAfterTTL(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()

	idle := e.open("app", "idle")
	writeFile(t, idle.Root(), "unsaved.txt", "typed but never committed\n")
	writeFile(t, idle.ScratchDir(), "log.txt", "tool output\n")
	idle.Close()
	busy := e.open("app", "busy") // held open across the TTL: a long run
	recent := e.open("app", "recent")
	recent.Close()

	e.clock.Advance(6 * 24 * time.Hour)
	if removed, err := e.m.Cleanup(ctx); err != nil || len(removed) != 0 {
		t.Fatalf("Cleanup before the TTL = %v, %v; want nothing removed", removed, err)
	}
	recent = e.open("app", "recent") // used again: its idle time restarts
	recent.Close()
	e.clock.Advance(2 * 24 * time.Hour)

	removed, err := e.m.Cleanup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{idle.Branch()}; !slices.Equal(removed, want) {
		t.Errorf("Cleanup removed %v, want %v", removed, want)
	}
	for _, dir := range []string{idle.Root(), idle.ScratchDir()} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s still exists (err %v), want it removed", dir, err)
		}
	}
	for _, w := range []*Workspace{busy, recent} {
		if _, err := os.Stat(w.Root()); err != nil {
			t.Errorf("%s was removed, want it kept: %v", w.Branch(), err)
		}
	}
	// The stale handle says so instead of failing obscurely.
	if _, err := idle.Changed(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Changed on a removed workspace: err = %v, want ErrClosed", err)
	}

	// The branch stays, with the uncommitted work saved on it.
	subject, err := runGitPlain(idle.CommonDir(), "log", "-1", "--format=%s%n%ae", idle.Branch())
	if err != nil || !strings.Contains(subject, "WIP: uncommitted changes saved") || !strings.Contains(subject, bot.Email) {
		t.Errorf("branch tip = %q (%v), want the bot's WIP commit", subject, err)
	}
	again := e.open("app", "idle")
	if got := readFile(t, again.Root(), "unsaved.txt"); got != "typed but never committed\n" {
		t.Errorf("unsaved.txt after recreation = %q, want the saved content", got)
	}
	if changed, _ := again.Changed(ctx); changed {
		t.Errorf("recreated workspace is dirty, want clean")
	}
	again.Close()
	busy.Close()

	// Remove does the same on demand.
	if err := recent.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(recent.Root()); !os.IsNotExist(err) {
		t.Errorf("Remove left %s (err %v)", recent.Root(), err)
	}
	if remote.Rev(t, idle.Branch()) != "" {
		t.Errorf("cleanup pushed %s, want the remote untouched", idle.Branch())
	}
}

func TestCleanupRunsGCOnMirrors(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "gc")
	mirror := filepath.Join(e.cfg.DataDir, "mirrors", "app.git")
	gitremote.Git(t, mirror, "repack", "-a", "-d", "-q")
	// Pushed commits reach the mirror (small fetches leave them loose).
	writeFile(t, w.Root(), "packed.txt", "a blob for a second pack\n")
	mustCommit(t, w, "second pack")
	mustPush(t, w)
	gitremote.Git(t, mirror, "repack", "-d", "-q")
	writeFile(t, w.Root(), "loose.txt", "a new blob\n")
	mustCommit(t, w, "loose objects")
	mustPush(t, w)
	w.Close()
	loose := func() string {
		out := gitremote.Git(t, mirror, "count-objects", "-v")
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "count: ") {
				return strings.TrimPrefix(line, "count: ")
			}
		}
		return "?"
	}
	if got := loose(); got == "0" {
		t.Fatalf("no loose objects before gc; the test needs some")
	}
	// Not by lowering gc.autoPackLimit in the mirror's config: the bot owns
	// that file and puts it back.
	addPacks(t, mirror)
	if _, err := e.m.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := loose(); got != "0" {
		t.Errorf("loose objects after Cleanup = %s, want 0 (git gc --auto ran)", got)
	}
	// The worktree's commit survived gc.
	if out := gitremote.Git(t, w.Root(), "log", "-1", "--format=%s"); out != "loose objects" {
		t.Errorf("HEAD after gc = %q, want the commit kept", out)
	}
}

func TestJanitorStopsOnClose(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	m, err := New(Config{DataDir: t.TempDir(), Repos: []Repo{{Name: "app", URL: remote.Path}}, CleanupInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close = %v, want the janitor stopped", err)
	}
	select {
	case <-m.janitorDone:
	default:
		t.Errorf("janitor still running after Close")
	}
	if _, err := m.Cleanup(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Cleanup after Close: err = %v, want ErrClosed", err)
	}
}

// Cleanup packs a thread repository's loose objects (its own only: the
// mirror's stay borrowed) and keeps its commits.
func TestCleanupRunsGCOnThreadRepositories(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	mainTip := remote.Rev(t, "main")
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "gc")
	store := w.CommonDir()
	writeFile(t, w.Root(), "loose.txt", "a new blob\n")
	mustCommit(t, w, "loose objects")
	w.Close()
	addPacks(t, store)
	idx := func() []string {
		p, _ := filepath.Glob(filepath.Join(store, "objects", "pack", "*.idx"))
		return p
	}
	if len(idx()) < 51 {
		t.Fatalf("%d packs before gc; the test needs 51", len(idx()))
	}
	if _, err := e.m.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	packed := idx()
	if len(packed) != 1 {
		t.Fatalf("packs after Cleanup = %d, want 1 (git gc --auto ran)", len(packed))
	}
	idxData, err := os.ReadFile(packed[0])
	if err != nil {
		t.Fatal(err)
	}
	if list := gitremote.GitInput(t, store, idxData, nil, "show-index"); strings.Contains(list, mainTip) {
		t.Errorf("gc copied the mirror's objects (main's tip) into the thread's repository")
	}
	if out := gitremote.Git(t, w.Root(), "log", "-1", "--format=%s"); out != "loose objects" {
		t.Errorf("HEAD after gc = %q, want the commit kept", out)
	}
}

// ThreadDirs names the folders Open gives the thread, before it is opened:
// files kept there for a message are the workspace's.
func TestThreadDirsAreTheWorkspacesFolders(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	key := ThreadKey{Platform: "slack", Key: "dirs"}
	root, scratch := e.m.ThreadDirs("app", key)
	w := e.open("app", key.Key)
	if w.Root() != root || w.ScratchDir() != scratch {
		t.Errorf("ThreadDirs = %s, %s; the workspace has %s, %s", root, scratch, w.Root(), w.ScratchDir())
	}
}

// addPacks adds 51 packs to repository dir, more than gc.autoPackLimit (50),
// so that `gc --auto` finds work: one fast-import with a checkpoint per
// commit, every object reachable (gc packs them rather than loosen them).
func addPacks(t *testing.T, dir string) {
	t.Helper()
	var packs strings.Builder
	for i := range 51 {
		fmt.Fprintf(&packs, "commit refs/test/packs\ncommitter t <t@t> 0 +0000\ndata 1\nx\n")
		if i > 0 {
			packs.WriteString("from refs/test/packs^0\n")
		}
		fmt.Fprintf(&packs, "M 100644 inline f%d\ndata 2\n%d\n\ncheckpoint\n\n", i, i%10)
	}
	gitremote.GitInput(t, dir, []byte(packs.String()), nil, "-c", "fastimport.unpackLimit=0", "fast-import", "--quiet")
}

// The Manager keeps in memory only the workspaces someone holds: one closed
// by its last holder is forgotten there, and opens again from disk with its
// files and branch.
func TestClosedWorkspacesAreNotKeptInMemory(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	var branches []string
	for i := range 5 {
		w := e.open("app", fmt.Sprintf("served-%d", i))
		writeFile(t, w.Root(), "note.txt", fmt.Sprintf("thread %d\n", i))
		branches = append(branches, w.Branch())
		w.Close()
	}
	held := e.open("app", "held")
	e.m.mu.Lock()
	n := len(e.m.open)
	e.m.mu.Unlock()
	if n != 1 {
		t.Fatalf("the manager holds %d workspaces in memory after 5 closed and 1 open, want 1", n)
	}
	w := e.open("app", "served-0")
	defer w.Close()
	if got := readFile(t, w.Root(), "note.txt"); got != "thread 0\n" || w.Branch() != branches[0] {
		t.Fatalf("reopened: note %q, branch %s; want the file kept and branch %s", got, w.Branch(), branches[0])
	}
	held.Close()
}
