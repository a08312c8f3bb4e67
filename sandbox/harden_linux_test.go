package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/threadsmith/threadsmith/sandbox"
)

// A root bot's sandbox runs as nobody and carries no supplementary group:
// host gid 0 would let it read files that only root's group may read.
func TestARootBotsGroupsStayOutside(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("a bot that is not root keeps its supplementary groups in the sandbox (the kernel forbids setgroups there); run the bot without any")
	}
	// The bot carries host gid 0 as a supplementary group, as a root
	// login does.
	old, err := syscall.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setgroups([]int{0}); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setgroups(old)
	r := newRig(t, sandbox.Config{})
	out, _ := r.run(t, `grep '^Groups:' /proc/self/status`)
	if strings.TrimSpace(out) != "Groups:" {
		t.Errorf("supplementary groups in the sandbox: %q, want none", out)
	}
	if !strings.Contains(r.sb.String(), "runs as uid 65534") {
		t.Skip("this machine runs a root bot's sandboxes as root (no idmapped mounts): group 0 is its own")
	}
	// A root-only file where the sandbox can see it: under /usr, shown
	// read-only as the host has it (system paths are not idmapped).
	dir, err := os.MkdirTemp("/usr/local", "threadsmith-test-")
	if err != nil {
		t.Skipf("no place under /usr for a root-only file: %v", err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	secret := filepath.Join(dir, "group-root-only")
	if err := os.WriteFile(secret, []byte("root's group only "+botSecret), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chown(secret, 0, 0)
	out, _ = r.run(t, "cat "+secret+" 2>&1; echo status $?")
	noLeak(t, out)
	if !strings.Contains(out, "Permission denied") {
		t.Fatalf("reading a 0640 root:root file:\n%s", out)
	}
}
