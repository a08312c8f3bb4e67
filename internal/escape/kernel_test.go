//go:build linux && (amd64 || arm64)

package escape

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// leakedFD is where the bot holds its config file open without
// close-on-exec, as a bot started with an open descriptor would.
const leakedFD = 77

// holdLeakedFD opens path on leakedFD without close-on-exec until the test
// ends.
func holdLeakedFD(t *testing.T, path string) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Dup3(fd, leakedFD, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(leakedFD) })
}

// warmUp runs one command, so that the next sandbox's init (started ahead,
// as the bot keeps one waiting) is started with what the bot holds now.
func (w *world) warmUp() {
	w.t.Helper()
	w.attack("true")
}

// The attacker reaches for the kernel's interfaces a coding sandbox has no
// use for (the key store, io_uring, the new mount API, new namespaces,
// userfaultfd, turning off address space randomisation) and for a
// descriptor the bot leaked. Every call is refused and nothing leaks.
func TestTheKernelsSharpEdgesAreOutOfReach(t *testing.T) {
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("perl is needed to make system calls by number")
	}
	w := newWorld(t)
	holdLeakedFD(t, w.config)
	w.warmUp()
	// Each call's arguments are what would work where nothing filters it.
	out := w.attack(fmt.Sprintf(`
		perl -e '
			sub try { my ($name, $r) = @_; print "$name: ", ($r == -1 ? "refused (" . ($!+0) . ")" : "WORKED $r"), "\n" }
			try("keyctl", syscall(%[1]d, %[2]d, %[3]d, 0));
			$params = "\0" x 120; try("io_uring_setup", syscall(%[4]d, 8, $params));
			$fs = "tmpfs"; try("fsopen", syscall(%[5]d, $fs, 0));
			try("unshare", syscall(%[6]d, 0));
			try("userfaultfd", syscall(%[7]d, 1));
			try("personality", syscall(%[8]d, 0x0040000));
		' 2>&1
		cat <&%[9]d 2>&1; cat /proc/self/fd/%[9]d 2>&1
		grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status`,
		unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, unix.SYS_IO_URING_SETUP,
		unix.SYS_FSOPEN, unix.SYS_UNSHARE, unix.SYS_USERFAULTFD, unix.SYS_PERSONALITY, leakedFD))
	w.botRuns()
	w.intact(out)
	if strings.Contains(out, "WORKED") || strings.Count(out, "refused") != 6 {
		t.Errorf("a call the filter denies went through:\n%s", out)
	}
	if !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("bash does not run under the seccomp filter:\n%s", out)
	}
}

// An MCP server starts through the same init as bash: it runs under the
// same filter, and the descriptor the bot leaked does not reach it either.
func TestMCPServerRunsUnderTheSameFilter(t *testing.T) {
	w := newWorld(t)
	holdLeakedFD(t, w.config)
	w.warmUp()
	call := w.fakeMCPServer()
	var out strings.Builder
	for _, p := range []string{"/proc/self/status", fmt.Sprintf("/proc/self/fd/%d", leakedFD)} {
		out.WriteString(call("fake__read", jsonPath(p)))
	}
	w.botRuns()
	w.intact(out.String())
	if !strings.Contains(out.String(), "Seccomp:\t2") || !strings.Contains(out.String(), "NoNewPrivs:\t1") {
		t.Errorf("the MCP server does not run under the filter:\n%s", out.String())
	}
	// The server opens the path: the kernel would refuse the bot's file to
	// the sandbox's user, so what counts is that the descriptor is gone.
	if want := fmt.Sprintf("open /proc/self/fd/%d: no such file or directory", leakedFD); !strings.Contains(out.String(), want) {
		t.Errorf("the descriptor the bot leaked reached the MCP server (want %q):\n%s", want, out.String())
	}
}
