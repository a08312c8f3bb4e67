package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// The build and package caches, played by the agent through bash in the
// real sandbox: one repository's sessions share them, another
// repository's sessions neither see nor write them, they count under the
// thread's quota, and a link planted in them is not followed by the bot.

// newCacheDir is a cache folder as the workspace manager makes one.
func newCacheDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCacheIsSharedByOneRepositorysSessionsOnly(t *testing.T) {
	appCache, libCache := newCacheDir(t), newCacheDir(t)
	first := newSandboxedWorkspace(t, WorkspaceConfig{Cache: appCache})
	res := call(t, NewBashTool(first.Workspace), map[string]any{"command": `set -e
		for v in GOCACHE GOMODCACHE npm_config_cache PIP_CACHE_DIR XDG_CACHE_HOME; do printenv $v; done
		mkdir -p "$GOCACHE" && echo warm > "$GOCACHE/probe" && echo written`})
	out := textOf(res)
	if res.IsError || !strings.Contains(out, "written") {
		t.Fatalf("first session:\n%s", out)
	}
	for _, want := range []string{"go-build", "go-mod", "npm", "pip", "xdg"} {
		if !strings.Contains(out, appCache+"/"+want) {
			t.Errorf("the cache variables do not name %s/%s:\n%s", appCache, want, out)
		}
	}

	// The next session of the same repository finds it.
	second := newSandboxedWorkspace(t, WorkspaceConfig{Cache: appCache})
	res = call(t, NewBashTool(second.Workspace), map[string]any{"command": `cat "$GOCACHE/probe"`})
	if out := textOf(res); res.IsError || !strings.Contains(out, "warm") {
		t.Errorf("the next session of the repository does not see the cache:\n%s", out)
	}

	// Another repository's session neither reads nor poisons it.
	other := newSandboxedWorkspace(t, WorkspaceConfig{Cache: libCache})
	probe := filepath.Join(appCache, "go-build", "probe")
	res = call(t, NewBashTool(other.Workspace), map[string]any{"command": `cat "$GOCACHE/probe"; cat ` + probe + `; echo poisoned > ` + probe + `; ls ` + appCache + `; echo done`})
	if out := textOf(res); strings.Contains(out, "warm") || !strings.Contains(out, "done") {
		t.Errorf("another repository's session sees the cache:\n%s", out)
	}
	if b, err := os.ReadFile(probe); err != nil || string(b) != "warm\n" {
		t.Errorf("after another repository's session the cache holds %q, %v", b, err)
	}
}

// The cache counts under the thread's quota: what another session left
// there takes this thread's room.
func TestQuotaCountsTheCache(t *testing.T) {
	cache := newCacheDir(t)
	if err := os.WriteFile(filepath.Join(cache, "blob"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newQuotaRigWith(t, WorkspaceConfig{Cache: cache, Quota: Quota{Bytes: 1 << 20}})
	res := call(t, r.bash, map[string]any{"command": `echo x > new.txt; echo "write: $?"; rm "$(dirname "$GOCACHE")/blob" && echo removed`})
	out := textOf(res)
	if !strings.Contains(out, "write: 1") || !strings.Contains(out, "removed") || !strings.Contains(out, "3.0MB used of 1.0MB allowed") {
		t.Errorf("a full cache: want the write refused, rm of the cache working and the model told:\n%s", out)
	}
	if ns := r.noticesSeen(); len(ns) != 1 || ns[0].Limit != "bytes" {
		t.Errorf("notices %+v, want one of bytes", ns)
	}
}

// A link the agent plants in the cache, to a big folder outside it, is
// measured as a link: the bot does not walk through it.
func TestCacheLinkIsNotFollowed(t *testing.T) {
	cache := newCacheDir(t)
	r := newQuotaRigWith(t, WorkspaceConfig{Cache: cache, Quota: Quota{Bytes: 1 << 20}})
	if err := os.WriteFile(filepath.Join(r.outside, "big"), make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := `mkdir -p "$GOCACHE" && ln -s ` + r.outside + ` "$GOCACHE/out" && ln -s ` + filepath.Join(r.outside, "big") + ` "$GOMODCACHE" && echo planted`
	if res := call(t, r.bash, map[string]any{"command": plant}); !strings.Contains(textOf(res), "planted") {
		t.Fatalf("planting: %s", textOf(res))
	}
	res := call(t, r.bash, map[string]any{"command": `echo x > new.txt && echo "write: $?"`})
	if out := textOf(res); !strings.Contains(out, "write: 0") || strings.Contains(out, "Disk quota") {
		t.Errorf("the bot followed the planted links into 3 MB outside the cache:\n%s", out)
	}
	if ns := r.noticesSeen(); len(ns) != 0 {
		t.Errorf("notices %+v, want none", ns)
	}
	if u := r.quotaUsage(t); u.Bytes >= 1<<20 {
		t.Errorf("the quota measured %d bytes: it walked through the links", u.Bytes)
	}
}

// As the bot lays it out: the cache folder inside data_dir, which the
// sandbox hides; the cache is shown, its sibling caches are not.
func TestCacheInsideHiddenDataDir(t *testing.T) {
	dataDir := newCacheDir(t)
	app, lib := filepath.Join(dataDir, "caches", "app"), filepath.Join(dataDir, "caches", "lib")
	for _, d := range []string{app, lib} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lib, "secret"), []byte("LIBSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tw := newTestWorkspace(t, WorkspaceConfig{Cache: app, Sandbox: sandboxtest.New(t, sandbox.Config{Hide: []string{dataDir}})})
	res := call(t, NewBashTool(tw.Workspace), map[string]any{"command": `mkdir -p "$GOCACHE" && echo warm > "$GOCACHE/probe" && echo written; cat ` + filepath.Join(lib, "secret") + `; echo "shown: $(ls ` + filepath.Join(dataDir, "caches") + ` | tr '\n' ,)"`})
	out := textOf(res)
	if !strings.Contains(out, "written") || strings.Contains(out, "LIBSECRET") || !strings.Contains(out, "shown: app,\n") {
		t.Errorf("in a hidden data_dir: want the cache writable and nothing else shown:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(app, "go-build", "probe")); err != nil || string(b) != "warm\n" {
		t.Errorf("the cache on the host holds %q, %v", b, err)
	}
}
