package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// A repository's cache folder goes with its last workspace: the janitor
// removes it once every workspace of the repository was removed (idle past
// IdleTTL), keeps it while one is on disk or open, and removes at once the
// cache of a repository no longer configured. A thread opened after starts
// an empty cache.
func TestCleanupRemovesCachesNoWorkspaceUses(t *testing.T) {
	t.Parallel()
	appRemote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	libRemote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	dataDir := t.TempDir()
	e := newEnvIn(t, dataDir, newFakeClock(), Repo{Name: "app", URL: appRemote.Path}, Repo{Name: "lib", URL: libRemote.Path})
	ctx := context.Background()

	busy := e.open("app", "busy") // open across the TTL: a long run
	idleApp, lib := e.open("app", "idle"), e.open("lib", "one")
	for _, w := range []*Workspace{busy, lib} {
		writeFile(t, w.CacheDir(), "go-build/x", "warm\n")
	}
	idleApp.Close()
	lib.Close()
	stray := filepath.Join(dataDir, "caches", "gone")
	writeFile(t, stray, "x", "a removed repository's\n")

	if _, err := e.m.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stray); !os.IsNotExist(err) {
		t.Errorf("the cache of a repository no longer configured is still there (%v)", err)
	}
	for _, w := range []*Workspace{busy, lib} {
		if got := readFile(t, w.CacheDir(), "go-build/x"); got != "warm\n" {
			t.Errorf("%s's cache holds %q before its workspaces went idle, want it kept", w.Repo(), got)
		}
	}

	e.clock.Advance(8 * 24 * time.Hour)
	if _, err := e.m.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(lib.CacheDir()); !os.IsNotExist(err) {
		t.Errorf("lib's cache outlived its last workspace (%v)", err)
	}
	if got := readFile(t, busy.CacheDir(), "go-build/x"); got != "warm\n" {
		t.Errorf("app's cache holds %q while a workspace of app is open, want it kept", got)
	}

	again := e.open("lib", "two")
	defer again.Close()
	if fi, err := os.Lstat(again.CacheDir()); err != nil || !fi.IsDir() {
		t.Fatalf("lib's cache after a new Open: %v, %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(again.CacheDir(), "go-build", "x")); !os.IsNotExist(err) {
		t.Errorf("lib's new cache has the old one's files (%v)", err)
	}
	busy.Close()
}
