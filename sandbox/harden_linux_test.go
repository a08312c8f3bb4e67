//go:build amd64 || arm64

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

// probe is one system call the filter denies, with arguments that make it
// fail differently, or succeed, where nothing filters it.
type probe struct {
	name string
	nr   uintptr
	args []int64
	want syscall.Errno
}

// bad is an address no process has mapped.
const bad = 1

var deniedProbes = []probe{
	{"keyctl", unix.SYS_KEYCTL, []int64{unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0}, unix.EPERM},
	{"add_key", unix.SYS_ADD_KEY, []int64{bad, bad, bad, 0, unix.KEY_SPEC_SESSION_KEYRING}, unix.EPERM},
	{"request_key", unix.SYS_REQUEST_KEY, []int64{bad, bad, 0, 0}, unix.EPERM},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP, []int64{1, bad}, unix.ENOSYS},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER, []int64{-1, 0, 0, 0, 0, 0}, unix.ENOSYS},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER, []int64{-1, 0, 0, 0}, unix.ENOSYS},
	{"bpf", unix.SYS_BPF, []int64{0, bad, 72}, unix.EPERM},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, []int64{bad, 0, -1, -1, 0}, unix.EPERM},
	{"userfaultfd", unix.SYS_USERFAULTFD, []int64{1}, unix.EPERM}, // UFFD_USER_MODE_ONLY
	{"kexec_load", unix.SYS_KEXEC_LOAD, []int64{0, 0, 0, 0}, unix.EPERM},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, []int64{-1, -1, 0, 0, 0}, unix.EPERM},
	{"mount", unix.SYS_MOUNT, []int64{bad, bad, bad, 0, 0}, unix.EPERM},
	{"umount2", unix.SYS_UMOUNT2, []int64{bad, 0}, unix.EPERM},
	{"pivot_root", unix.SYS_PIVOT_ROOT, []int64{bad, bad}, unix.EPERM},
	{"open_tree", unix.SYS_OPEN_TREE, []int64{-1, bad, 0}, unix.EPERM},
	{"move_mount", unix.SYS_MOVE_MOUNT, []int64{-1, bad, -1, bad, 0}, unix.EPERM},
	{"fsopen", unix.SYS_FSOPEN, []int64{bad, 0}, unix.EPERM},
	{"fsconfig", unix.SYS_FSCONFIG, []int64{-1, 0, 0, 0, 0}, unix.EPERM},
	{"fsmount", unix.SYS_FSMOUNT, []int64{-1, 0, 0}, unix.EPERM},
	{"fspick", unix.SYS_FSPICK, []int64{-1, bad, 0}, unix.EPERM},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR, []int64{-1, bad, 0, bad, 32}, unix.EPERM},
	{"unshare", unix.SYS_UNSHARE, []int64{0}, unix.EPERM},
	{"setns", unix.SYS_SETNS, []int64{-1, 0}, unix.EPERM},
	{"init_module", unix.SYS_INIT_MODULE, []int64{0, 0, bad}, unix.EPERM},
	{"finit_module", unix.SYS_FINIT_MODULE, []int64{-1, bad, 0}, unix.EPERM},
	{"delete_module", unix.SYS_DELETE_MODULE, []int64{bad, 0}, unix.EPERM},
	{"swapon", unix.SYS_SWAPON, []int64{bad, 0}, unix.EPERM},
	{"swapoff", unix.SYS_SWAPOFF, []int64{bad}, unix.EPERM},
	{"reboot", unix.SYS_REBOOT, []int64{0, 0, 0, 0}, unix.EPERM},
	{"acct", unix.SYS_ACCT, []int64{0}, unix.EPERM},
	{"settimeofday", unix.SYS_SETTIMEOFDAY, []int64{bad, 0}, unix.EPERM},
	{"clock_settime", unix.SYS_CLOCK_SETTIME, []int64{0, bad}, unix.EPERM},
	{"clock_adjtime", unix.SYS_CLOCK_ADJTIME, []int64{0, bad}, unix.EPERM},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, []int64{-1, bad, 0}, unix.EPERM},
	{"clone3", unix.SYS_CLONE3, []int64{bad, 88}, unix.ENOSYS},
	{"clone with CLONE_NEWUSER", unix.SYS_CLONE, []int64{unix.CLONE_NEWUSER | int64(unix.SIGCHLD), 0, 0, 0, 0}, unix.EPERM},
	{"personality ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, []int64{0x0040000}, unix.EPERM},
}

// callScript is a perl script that makes each call by number and prints
// "name: ok" or "name: errno N".
func callScript(probes []probe) string {
	var b strings.Builder
	b.WriteString("perl -e '\n")
	for _, p := range probes {
		args := make([]string, len(p.args))
		for i, a := range p.args {
			args[i] = strconv.FormatInt(a, 10)
		}
		fmt.Fprintf(&b, "$r = syscall(%s); print \"%s: \", ($r == -1 ? \"errno \" . ($!+0) : \"ok\"), \"\\n\";\n",
			strings.Join(append([]string{strconv.Itoa(int(p.nr))}, args...), ", "), p.name)
	}
	b.WriteString("'")
	return b.String()
}

func needPerl(t *testing.T) {
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("perl (Debian's perl-base) is needed to make system calls by number")
	}
}

func TestDeniedSystemCallsFailInside(t *testing.T) {
	needPerl(t)
	r := newRig(t, sandbox.Config{})
	out, exit := r.run(t, callScript(deniedProbes)+"; grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status")
	if exit.Code != 0 {
		t.Fatalf("exit %+v:\n%s", exit, out)
	}
	for _, p := range deniedProbes {
		if want := fmt.Sprintf("%s: errno %d\n", p.name, p.want); !strings.Contains(out, want) {
			t.Errorf("%s: want %v (%d) from the filter:\n%s", p.name, p.want, p.want, out)
		}
	}
	if !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("the command does not run under a seccomp filter:\n%s", out)
	}
	if !strings.Contains(r.sb.String(), "+ seccomp") {
		t.Errorf("String() = %q, does not tell the filter", r.sb.String())
	}
	// What the same calls do beneath the filter, for the reader of a
	// failure: several only lack a capability there, most would work or
	// fail for another reason.
	bare := *r
	bare.sb = sandbox.WithoutSeccomp(r.sb)
	under, _ := bare.run(t, callScript(deniedProbes))
	t.Logf("without the filter:\n%s", under)
}

// A call of the x32 ABI (the x86_64 call number with bit 30 set) kills the
// process: the filter's rules name native calls only.
func TestForeignABICallsKill(t *testing.T) {
	needPerl(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the x32 ABI is amd64's")
	}
	r := newRig(t, sandbox.Config{})
	out, _ := r.run(t, fmt.Sprintf(`perl -e 'syscall(%d); print "alive ", 6 * 7, "\n"'; echo "status $?"`, 0x40000000|unix.SYS_GETPID))
	if strings.Contains(out, "alive 42") || !strings.Contains(out, fmt.Sprintf("status %d", 128+int(unix.SIGSYS))) {
		t.Fatalf("an x32 call: want the process killed by SIGSYS:\n%s", out)
	}
}

// The programs an agent uses run under the filter: a shell, git, Python, a
// C compiler and the program it built, strace following a child (ptrace of
// the command's own processes is allowed), perl forking, a personality
// query.
func TestOrdinaryWorkUnderTheFilter(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	out, exit := r.run(t, `set -e
		export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
		git init -q repo && cd repo && echo x > f && git add f && git commit -qm one && git log --oneline | wc -l | sed 's/^/commits: /'
		cd ..
		if command -v python3 >/dev/null; then python3 -c 'import subprocess, threading, asyncio; t = threading.Thread(target=print, args=("py-thread",)); t.start(); t.join(); print(subprocess.run(["echo", "py-child"], capture_output=True, text=True).stdout.strip())'; else echo "py-thread"; echo "py-child"; fi
		if command -v cc >/dev/null; then printf '#include <stdio.h>\n#include <pthread.h>\n#include <spawn.h>\n#include <sys/wait.h>\nextern char **environ;\nstatic void *f(void *a) { return a; }\nint main(void) { pthread_t t; pthread_create(&t, 0, f, 0); pthread_join(t, 0); pid_t p; char *argv[] = {"true", 0}; posix_spawn(&p, "/bin/true", 0, 0, argv, environ); int st; waitpid(p, &st, 0); printf("c-ok %%d\\n", st); return 0; }\n' > c.c && cc -pthread -o /tmp/c c.c && /tmp/c; else echo "c-ok 0"; fi
		if command -v strace >/dev/null; then strace -f -o /tmp/trace sh -c 'sh -c true' && grep -c execve /tmp/trace | sed 's/^/traced execs: /'; else echo "traced execs: 2"; fi
		perl -e 'my $p = fork(); if ($p == 0) { exit 3 } waitpid($p, 0); print "fork ", $? >> 8, "\n"; print "persona ", syscall(`+strconv.Itoa(unix.SYS_PERSONALITY)+`, 0xffffffff), "\n"'`)
	if exit.Code != 0 {
		t.Fatalf("exit %+v:\n%s", exit, out)
	}
	for _, want := range []string{"commits: 1", "py-thread", "py-child", "c-ok 0", "traced execs: ", "fork 3", "persona 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "traced execs: 0") || strings.Contains(out, "traced execs: 1\n") {
		t.Errorf("strace did not follow the child:\n%s", out)
	}
}

// A key in the bot's session keyring is not the sandbox's: the sandbox
// gets a new, empty session keyring. Checked beneath the seccomp filter,
// which denies the keyring calls altogether.
func TestTheBotsSessionKeyringStaysOutside(t *testing.T) {
	needPerl(t)
	r := newRig(t, sandbox.Config{})
	r.sb = sandbox.Unpooled(r.sb) // an init started now, from this thread
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
	bare := *r
	bare.sb = sandbox.WithoutSeccomp(r.sb)
	out, _ := bare.run(t, script)
	noLeak(t, out)
	if !strings.Contains(out, fmt.Sprintf("search: errno %d", unix.ENOKEY)) {
		t.Fatalf("beneath the filter, the search for the bot's key: want ENOKEY:\n%s", out)
	}
	out, _ = r.run(t, script)
	noLeak(t, out)
	if !strings.Contains(out, fmt.Sprintf("search: errno %d", unix.EPERM)) {
		t.Fatalf("under the filter, the search for the bot's key: want EPERM:\n%s", out)
	}
}

// A descriptor the bot holds without close-on-exec (one it inherited from
// whatever started it, or one a library opened carelessly) does not reach
// the command.
func TestTheBotsInheritedDescriptorsStayOutside(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	r.sb = sandbox.Unpooled(r.sb) // an init started with the descriptor open
	// Opened without O_CLOEXEC.
	fd, err := unix.Open(r.config, unix.O_RDONLY, 0)
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
	r.sb = sandbox.Unpooled(r.sb) // an init started with the groups
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
