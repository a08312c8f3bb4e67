package bridge

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/threadsmith/threadsmith/agent/tools"
)

// A symlink planted in the scratch folder (possible without a sandbox)
// does not lead the bot's write of a shared file out of it.
func TestSaveUploadDoesNotFollowPlantedSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	os.MkdirAll(root, 0o755)
	tws, err := tools.NewWorkspace(tools.WorkspaceConfig{Root: root, Scratch: filepath.Join(dir, "scratch")})
	if err != nil {
		t.Fatal(err)
	}
	defer tws.Close()
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(outside, 0o755)
	os.MkdirAll(filepath.Join(tws.Scratch(), "uploads"), 0o700)
	victim := filepath.Join(outside, "victim.txt")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(tws.Scratch(), "uploads", "report.txt"))

	th := &thread{tws: tws}
	path, err := th.saveUpload("report.txt", []byte("shared"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the write followed the planted symlink: victim = %q", b)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "shared" || filepath.Dir(path) != filepath.Join(tws.Scratch(), "uploads") {
		t.Fatalf("saved at %s: %q, %v", path, b, err)
	}

	// A planted symlink in place of the folder itself.
	os.RemoveAll(filepath.Join(tws.Scratch(), "uploads"))
	os.Symlink(outside, filepath.Join(tws.Scratch(), "uploads"))
	if _, err := th.saveUpload("x.txt", []byte("x")); err == nil {
		if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
			t.Fatal("the write went through a symlinked uploads folder")
		}
	}
}
