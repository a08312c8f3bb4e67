package safefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree builds a worktree with a secret beside it (outside the root) and
// returns the worktree's path and the secret's.
func tree(t *testing.T) (root, secret string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "wt")
	secret = filepath.Join(dir, "secret.txt")
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(secret, []byte("sk-outside"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "ok.md"), []byte("hello"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "sub", "in.md"), []byte("in-root"), 0o644))
	return root, secret
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, root string) *Root {
	t.Helper()
	r, err := OpenRoot(root, "the worktree")
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// refused asserts err is a refusal whose sentence names name and says want.
func refused(t *testing.T, err error, name, want string) {
	t.Helper()
	e, ok := Refused(err)
	if !ok {
		t.Fatalf("%s: got %v, want a refusal", name, err)
	}
	if e.Path != name || !strings.HasPrefix(err.Error(), name+" was not read: ") || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: got %q, want it to name the file and say %q", name, err, want)
	}
}

func TestReadsRegularFilesAndHardLinks(t *testing.T) {
	root, _ := tree(t)
	must(t, os.Link(filepath.Join(root, "ok.md"), filepath.Join(root, "hard.md")))
	r := open(t, root)
	for name, want := range map[string]string{"ok.md": "hello", "sub/in.md": "in-root", "hard.md": "hello"} {
		b, err := r.ReadFile(name, 100)
		if err != nil || string(b) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := r.ReadFile("missing.md", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, ok := Refused(func() error { _, err := r.ReadFile("missing.md", 100); return err }()); ok {
		t.Error("a missing file is not a refusal")
	}
}

func TestRefusesSymlinks(t *testing.T) {
	root, secret := tree(t)
	must(t, os.Symlink(secret, filepath.Join(root, "out.md")))
	must(t, os.Symlink("ok.md", filepath.Join(root, "in.md")))
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(root, "outdir")))
	must(t, os.Symlink("sub", filepath.Join(root, "indir")))
	must(t, os.Symlink("/proc/self/environ", filepath.Join(root, "env.md")))
	r := open(t, root)
	for _, c := range []struct{ name, want string }{
		{"out.md", "it is a symbolic link; the bot reads only regular files of the worktree"},
		{"in.md", "it is a symbolic link"},
		{"env.md", "it is a symbolic link"},
		{"outdir/secret.txt", "outdir is a symbolic link; the bot follows no link in the worktree"},
		{"indir/in.md", "indir is a symbolic link"},
	} {
		b, err := r.ReadFile(c.name, 1<<20)
		refused(t, err, c.name, c.want)
		if b != nil {
			t.Errorf("%s: got content %q", c.name, b)
		}
	}
	for _, name := range []string{"../secret.txt", "/etc/passwd", "sub/../../secret.txt"} {
		_, err := r.ReadFile(name, 1<<20)
		refused(t, err, name, "not a path inside the worktree")
	}
	if _, err := r.ReadDir("outdir"); err == nil {
		t.Error("ReadDir followed a symlinked folder")
	} else {
		refused(t, err, "outdir", "symbolic link")
	}
}

func TestWalkRefusesWhatOpenat2Refuses(t *testing.T) {
	root, secret := tree(t)
	must(t, os.Symlink(secret, filepath.Join(root, "out.md")))
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(root, "outdir")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo.md"), 0o644))
	must(t, os.Symlink("/dev/zero", filepath.Join(root, "zero.md")))
	noOpenat2.Store(true)
	t.Cleanup(func() { noOpenat2.Store(false) })
	r := open(t, root)
	refused(t, func() error { _, err := r.ReadFile("out.md", 100); return err }(), "out.md", "it is a symbolic link")
	refused(t, func() error { _, err := r.ReadFile("outdir/secret.txt", 100); return err }(), "outdir/secret.txt", "outdir is a symbolic link")
	refused(t, func() error { _, err := r.ReadFile("fifo.md", 100); return err }(), "fifo.md", "it is a named pipe")
	refused(t, func() error { _, err := r.ReadFile("zero.md", 100); return err }(), "zero.md", "it is a symbolic link")
	if b, err := r.ReadFile("sub/in.md", 100); err != nil || string(b) != "in-root" {
		t.Errorf("walk: %q, %v", b, err)
	}
	if es, err := r.ReadDir("."); err != nil || len(es) != 6 {
		t.Errorf("walk ReadDir(.) = %v, %v", es, err)
	}
}

func TestFIFOAndDevicesReturnAtOnce(t *testing.T) {
	root, _ := tree(t)
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo.md"), 0o644))
	must(t, os.Symlink("/dev/zero", filepath.Join(root, "zero.md")))
	r := open(t, root)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := r.ReadFile("fifo.md", 100)
		refused(t, err, "fifo.md", "it is a named pipe; the bot reads only regular files")
		_, _, err = r.ReadHead("zero.md", 100)
		refused(t, err, "zero.md", "symbolic link")
		_, err = r.ReadDir("fifo.md")
		refused(t, err, "fifo.md", "not a folder")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a failure, never a wait of a passing run
		t.Fatal("a read of a named pipe blocked")
	}
}

func TestDirectoryIsNotAFile(t *testing.T) {
	root, _ := tree(t)
	r := open(t, root)
	_, err := r.ReadFile("sub", 100)
	refused(t, err, "sub", "it is a folder")
}

func TestSizeCap(t *testing.T) {
	root, _ := tree(t)
	big := filepath.Join(root, "big.md")
	f, err := os.Create(big)
	must(t, err)
	must(t, f.Truncate(50<<20))
	f.Close()
	r := open(t, root)
	_, err = r.ReadFile("big.md", 64<<10)
	refused(t, err, "big.md", "it is larger than 64 KB")
	b, long, err := r.ReadHead("big.md", 32<<10)
	if err != nil || !long || len(b) != 32<<10 {
		t.Fatalf("ReadHead = %d bytes, longer %v, %v", len(b), long, err)
	}
	b, long, err = r.ReadHead("ok.md", 5)
	if err != nil || long || string(b) != "hello" {
		t.Fatalf("ReadHead of exactly the cap = %q, %v, %v", b, long, err)
	}
}

func TestReadDirReportsEntriesWithoutFollowing(t *testing.T) {
	root, secret := tree(t)
	must(t, os.Symlink(filepath.Dir(secret), filepath.Join(root, "link")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	odd := "caf\xe9.md" // not UTF-8
	must(t, os.WriteFile(filepath.Join(root, odd), []byte("odd"), 0o644))
	r := open(t, root)
	es, err := r.ReadDir(".")
	must(t, err)
	got := map[string]fs.FileMode{}
	for _, e := range es {
		got[e.Name] = e.Type
	}
	want := map[string]fs.FileMode{"ok.md": 0, "sub": fs.ModeDir, "link": fs.ModeSymlink, "fifo": fs.ModeNamedPipe, odd: 0}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for n, m := range want {
		if got[n] != m {
			t.Errorf("%q: type %v, want %v", n, got[n], m)
		}
	}
	if b, err := r.ReadFile(odd, 10); err != nil || string(b) != "odd" {
		t.Errorf("a non-UTF-8 name: %q, %v", b, err)
	}
	if _, err := r.ReadDir("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing folder: %v", err)
	}
}

func TestFollowingRootStillRefusesPipesAndCaps(t *testing.T) {
	root, secret := tree(t)
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo.md"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(root, "linked.md")))
	must(t, os.Symlink("sub", filepath.Join(root, "linkdir")))
	r := OpenFollowing(root, "the skills folder")
	if b, err := r.ReadFile("linked.md", 100); err != nil || string(b) != "sk-outside" {
		t.Errorf("an operator's link is followed: %q, %v", b, err)
	}
	_, err := r.ReadFile("fifo.md", 100)
	refused(t, err, filepath.Join(root, "fifo.md"), "named pipe")
	_, err = r.ReadFile("linked.md", 3)
	refused(t, err, filepath.Join(root, "linked.md"), "larger than 3 bytes")
	es, err := r.ReadDir(".")
	must(t, err)
	for _, e := range es {
		if e.Name == "linkdir" && !e.IsDir() {
			t.Error("a following root reports a linked folder as a folder")
		}
	}
}

func TestInRootHelpers(t *testing.T) {
	root, _ := tree(t)
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(t, os.Symlink("ok.md", filepath.Join(root, "in.md")))
	r, err := os.OpenRoot(root)
	must(t, err)
	defer r.Close()
	if b, err := ReadFileIn(r, "in.md", 100); err != nil || string(b) != "hello" {
		t.Errorf("an in-root link is followed by the os.Root helpers: %q, %v", b, err)
	}
	if _, _, err := OpenIn(r, "fifo"); err == nil {
		t.Error("OpenIn opened a named pipe")
	}
	if _, err := OpenDirIn(r, "fifo"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("OpenDirIn on a named pipe: %v", err)
	}
	if _, err := ReadFileIn(r, "ok.md", 2); err == nil {
		t.Error("ReadFileIn read past its cap")
	}
	if b, _, err := readCapped(bytes.NewReader(make([]byte, 10)), 0, 4); err != nil || len(b) != 4 {
		t.Errorf("readCapped of a file that grew: %d, %v", len(b), err)
	}
}

func TestBudget(t *testing.T) {
	root, _ := tree(t)
	r := open(t, root)
	r.Budget(8)
	if _, err := r.ReadFile("ok.md", 100); err != nil {
		t.Fatal(err)
	}
	_, err := r.ReadFile("sub/in.md", 100)
	refused(t, err, "sub/in.md", "would pass 8 bytes")
}
