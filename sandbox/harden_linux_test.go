package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/threadsmith/threadsmith/sandbox"
	"golang.org/x/sys/unix"
)

func needPerl(t *testing.T) {
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("perl (Debian's perl-base) is needed to make system calls by number")
	}
}

// A key in the bot's session keyring is not the sandbox's: the sandbox
// gets a new, empty session keyring.
func TestTheBotsSessionKeyringStaysOutside(t *testing.T) {
	needPerl(t)
	r := newRig(t, sandbox.Config{})
	// The bot's thread (this goroutine's, whose credentials the sandbox's
	// init inherits) joins a session keyring of its own and puts a key in
	// it. The thread is never unlocked: it ends with the test, keyring and
	// all.
	runtime.LockOSThread()
	if _, _, errno := unix.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
		t.Fatalf("joining a session keyring: %v", errno)
	}
	desc := fmt.Sprintf("threadsmith-test-%d", os.Getpid())
	if _, err := unix.AddKey("user", desc, []byte(botSecret), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
		t.Fatalf("adding the bot's key: %v", err)
	}
	if id, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", desc, 0); err != nil || id <= 0 {
		t.Fatalf("the bot's own search for its key: %d, %v", id, err)
	}
	script := fmt.Sprintf(`perl -e '
		($type, $desc) = ("user", "%[4]s");
		$id = syscall(%[1]d, %[2]d, %[3]d, $type, $desc, 0);
		if ($id == -1) { print "search: errno ", $!+0, "\n"; exit }
		$buf = "\0" x 256; $n = syscall(%[1]d, %[5]d, $id, $buf, 256);
		print "FOUND the key: ", substr($buf, 0, $n), "\n"'`,
		unix.SYS_KEYCTL, unix.KEYCTL_SEARCH, unix.KEY_SPEC_SESSION_KEYRING, desc, unix.KEYCTL_READ)
	out, _ := r.run(t, script)
	noLeak(t, out)
	if !strings.Contains(out, fmt.Sprintf("search: errno %d", unix.ENOKEY)) {
		t.Fatalf("the search for the bot's key: want ENOKEY:\n%s", out)
	}
}

// A descriptor the bot holds without close-on-exec (one it inherited from
// whatever started it, or one a library opened carelessly) does not reach
// the command.
func TestTheBotsInheritedDescriptorsStayOutside(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	fd, err := unix.Open(r.config, unix.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const high = 77
	if err := unix.Dup3(fd, high, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(high)
	if flags, _ := unix.FcntlInt(high, unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("the test's descriptor is close-on-exec")
	}
	out, _ := r.run(t, fmt.Sprintf(`cat <&%[1]d 2>&1; cat /proc/self/fd/%[1]d 2>&1; ls /proc/self/fd | tr '\n' ' ' | sed 's/^/fds: /'`, high))
	noLeak(t, out)
	_, list, _ := strings.Cut(out, "fds: ")
	for _, f := range strings.Fields(list) {
		// ls holds one more: the directory it lists.
		if n, err := strconv.Atoi(f); err != nil || n > 3 {
			t.Errorf("descriptor %s is open in the sandbox:\n%s", f, out)
		}
	}
}

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
