package diskuse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/workspace/diskuse/disktest"
	"golang.org/x/sys/unix"
)

// du is what du -s says root's contents take, in bytes (root's own blocks
// taken off), and the number of inodes below root by find.
func du(t testing.TB, root string) Usage {
	t.Helper()
	out, err := exec.Command("du", "-s", "-B1", root).Output()
	if err != nil {
		t.Skipf("du: %v", err)
	}
	total, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command("find", root, "-mindepth", "1").Output()
	if err != nil {
		t.Fatal(err)
	}
	files := int64(strings.Count(string(out), "\n"))
	return Usage{Bytes: total - st.Blocks*512, Files: files}
}

func write(t testing.TB, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Measure agrees with du -s on bytes: whole blocks, sparse files by what is
// allocated, hard links once, symbolic links not followed.
func TestMeasureAgreesWithDu(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(outside, "big"), 4<<20)
	write(t, filepath.Join(root, "a"), 1)
	write(t, filepath.Join(root, "d/e/f"), 100_000)
	write(t, filepath.Join(root, "d/g"), 0)
	if err := os.Link(filepath.Join(root, "d/e/f"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "big"), filepath.Join(root, "sym")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "symdir")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()

	got, err := Measure(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	want := du(t, root)
	want.Files-- // find lists both names of the hard link
	if got != want {
		t.Errorf("Measure = %+v, du/find = %+v", got, want)
	}
	if got.Bytes >= 1<<30 || got.Bytes >= 4<<20 {
		t.Errorf("Measure = %d bytes: the sparse file's holes or the symlinked file were counted", got.Bytes)
	}
	if got.Files != 8 { // a, d, d/e, d/e/f (= link), d/g, sym, symdir, sparse
		t.Errorf("Measure counted %d files, want 8", got.Files)
	}
}

// Several roots add up; a missing root counts nothing.
func TestMeasureSeveralRoots(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write(t, filepath.Join(a, "x"), 10_000)
	write(t, filepath.Join(b, "y/z"), 10_000)
	ua, _ := Measure(t.Context(), a)
	ub, _ := Measure(t.Context(), b)
	got, err := Measure(t.Context(), a, b, filepath.Join(a, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	if got != ua.Add(ub) || got.Files != 3 {
		t.Errorf("Measure(a, b) = %+v, want %+v + %+v (3 files)", got, ua, ub)
	}
}

// A tree deeper than MaxDepth is an error, not a crash or a wrong count; a
// cancelled context ends the walk.
func TestMeasureRefusesTooDeepAndStops(t *testing.T) {
	root := t.TempDir()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range MaxDepth + 2 {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	unix.Close(fd)
	if _, err := Measure(t.Context(), root); !errors.Is(err, ErrTooDeep) {
		t.Errorf("Measure of a %d-deep tree: %v, want ErrTooDeep", MaxDepth+2, err)
	}

	flat := t.TempDir()
	for i := range 3000 {
		write(t, filepath.Join(flat, strconv.Itoa(i)), 0)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Measure(ctx, flat); !errors.Is(err, context.Canceled) {
		t.Errorf("Measure with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestFree(t *testing.T) {
	if free, err := Free(t.TempDir()); err != nil || free <= 0 {
		t.Fatalf("Free = %d, %v", free, err)
	}
	if _, err := Free(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Free of a missing path: no error")
	}
}

// The floor holds its reserve in a file; a nil floor, or one it cannot set
// aside, is respectively never and always low.
func TestFloorSetsTheReserveAside(t *testing.T) {
	dir := t.TempDir()
	f := &Floor{Path: dir, Reserve: 1 << 20}
	st, err := f.Check()
	if err != nil || st.Low || st.Room <= 0 {
		t.Fatalf("Check = %+v, %v; want not low", st, err)
	}
	var s unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, BalloonName), &s); err != nil || s.Blocks*512 < 1<<20 {
		t.Errorf("the reserve's file: %v, %d bytes allocated", err, s.Blocks*512)
	}
	// A bot started again finds its reserve set aside.
	again := &Floor{Path: dir, Reserve: 1 << 20}
	if st, err := again.Check(); err != nil || st.Low {
		t.Errorf("a second floor on the same reserve: %+v, %v", st, err)
	}
	free, _ := Free(dir)
	if st, _ := (&Floor{Path: t.TempDir(), Reserve: free * 1000}).Check(); !st.Low || st.Room != 0 {
		t.Errorf("a reserve that cannot be set aside: %+v, want low", st)
	}
	if st, err := (*Floor)(nil).Check(); st.Low || err != nil {
		t.Errorf("no floor: %+v, %v", st, err)
	}
}

// On a disk that fills (a small tmpfs, as root), the reserve is handed
// over: the free space is back to the reserve at once, and the floor is
// low; once space returns it is set aside again and the floor is not low.
func TestFloorHandsTheReserveOverWhenTheDiskFills(t *testing.T) {
	dir := disktest.Small(t, 32<<20)
	f := &Floor{Path: dir, Reserve: 8 << 20}
	if st, err := f.Check(); err != nil || st.Low {
		t.Fatalf("an empty disk: %+v, %v", st, err)
	}
	disktest.Fill(t, filepath.Join(dir, "agent.bin"))
	st, err := f.Check()
	if err != nil || !st.Low || st.Free < 8<<20 {
		t.Fatalf("a full disk: %+v, %v; want low with the 8 MiB reserve free", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, BalloonName)); err == nil {
		t.Error("the reserve's file is still there")
	}
	if st, _ := f.Check(); !st.Low {
		t.Errorf("still full: %+v, want low", st)
	}
	os.Remove(filepath.Join(dir, "agent.bin"))
	if st, err := f.Check(); err != nil || st.Low || st.Room <= 0 {
		t.Errorf("space returned: %+v, %v; want not low", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, BalloonName)); err != nil {
		t.Errorf("the reserve was not set aside again: %v", err)
	}
}

// A bot started again on a disk that has room for its agents but not for a
// second reserve finds its reserve's file and keeps it: the floor is not
// low, and the file is handed over when the disk fills.
func TestFloorKeepsItsReserveAcrossARestart(t *testing.T) {
	dir := disktest.Small(t, 32<<20)
	if st, err := (&Floor{Path: dir, Reserve: 8 << 20}).Check(); err != nil || st.Low {
		t.Fatalf("an empty disk: %+v, %v", st, err)
	}
	agent := filepath.Join(dir, "agent.bin")
	if err := os.WriteFile(agent, make([]byte, 16<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if free, _ := Free(dir); free >= 12<<20 {
		t.Fatalf("%d bytes free: the test needs less than the reserve and its margins", free)
	}
	f := &Floor{Path: dir, Reserve: 8 << 20}
	if st, err := f.Check(); err != nil || st.Low || st.Room <= 0 {
		t.Fatalf("restarted with its reserve set aside: %+v, %v; want not low", st, err)
	}
	disktest.Fill(t, agent+".more")
	if st, err := f.Check(); err != nil || !st.Low || st.Free < 8<<20 {
		t.Errorf("a full disk after the restart: %+v, %v; want low with the 8 MiB reserve free", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, BalloonName)); err == nil {
		t.Error("the reserve's file found at the restart was not handed over")
	}
}

// tree makes files files of size bytes under root, spread over folders of
// perDir files each, nested depth levels.
func tree(b *testing.B, root string, files, perDir, depth, size int) {
	b.Helper()
	data := make([]byte, size)
	for i := range files {
		d := root
		n := i / perDir
		for range depth {
			d = filepath.Join(d, fmt.Sprintf("d%d", n%8))
			n /= 8
		}
		d = filepath.Join(d, fmt.Sprintf("g%d", i/perDir))
		if i%perDir == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMeasure walks trees of several shapes against du -s of the same
// tree in the same run (warm cache: the watcher measures a tree it measured
// a second earlier).
func BenchmarkMeasure(b *testing.B) {
	shapes := []struct {
		name                       string
		files, perDir, depth, size int
	}{
		{"10k-flat", 10_000, 10_000, 0, 100},
		{"10k-repo", 10_000, 20, 3, 2000},
		{"200k-repo", 200_000, 50, 4, 100},
		{"200k-deep", 200_000, 5, 6, 0},
	}
	for _, s := range shapes {
		root := b.TempDir()
		tree(b, root, s.files, s.perDir, s.depth, s.size)
		b.Run(s.name+"/Measure", func(b *testing.B) {
			for b.Loop() {
				if _, err := Measure(b.Context(), root); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/du", func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command("du", "-s", root).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
