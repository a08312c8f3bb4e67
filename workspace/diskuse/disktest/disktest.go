// Package disktest gives tests a filesystem small enough to fill: a tmpfs
// of a given size, which only root may mount; elsewhere the test skips,
// saying why, unless THREADSMITH_REQUIRE_FULL_DISK is set.
package disktest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Small mounts a tmpfs of size bytes on a new directory until the test ends
// and returns the directory.
func Small(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size))
	if err != nil {
		if os.Getenv("THREADSMITH_REQUIRE_FULL_DISK") != "" {
			t.Fatalf("mounting a small tmpfs to fill: %v", err)
		}
		t.Skipf("a full disk is played on a small tmpfs, which only root may mount (%v); set THREADSMITH_REQUIRE_FULL_DISK=1 to fail instead", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's tmpfs: %v", err)
		}
	})
	return dir
}

// Fill writes zeros to path until the filesystem is full.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}
