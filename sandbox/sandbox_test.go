package sandbox_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// botSecret stands for a key that lives only in the bot's memory and
// environment; no command in a sandbox may print it.
var botSecret = "sk-bot-" + strconv.Itoa(os.Getpid()) + "-f3a9c1d2e8"

// rig is one thread's world as the bot lays it out: a worktree the command
// may change, and beside it what it must never see.
type rig struct {
	sb       *sandbox.Sandbox
	work     string // the thread's worktree (read-write)
	dataDir  string // the bot's data dir: database, other threads
	other    string // another thread's worktree
	config   string // the bot's config file
	home     string // the bot's home
	hostFile string // a file outside everything, that must not change
}

func newRig(t *testing.T, cfg sandbox.Config) *rig {
	t.Helper()
	root := t.TempDir()
	r := &rig{
		work:    filepath.Join(root, "data", "workspaces", "app", "slack-a"),
		dataDir: filepath.Join(root, "data"),
		other:   filepath.Join(root, "data", "workspaces", "app", "slack-b"),
		config:  filepath.Join(root, "config.yaml"),
		home:    filepath.Join(root, "home"),
	}
	r.hostFile = filepath.Join(r.home, "notes")
	for _, d := range []string{r.work, r.other, r.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(r.dataDir, "threadsmith.db"), "thread b said: "+botSecret)
	write(t, filepath.Join(r.other, "main.go"), "package main // thread b")
	write(t, r.config, "llm: {api_key: "+botSecret+"}")
	write(t, r.hostFile, "the bot's home "+botSecret)
	write(t, filepath.Join(r.work, "README"), "hello from the worktree\n")
	cfg.Hide = append(cfg.Hide, r.dataDir, r.config, r.home)
	r.sb = sandboxtest.New(t, cfg)
	return r
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs script with bash in the rig's worktree and returns its combined
// output and how it ended.
func (r *rig) run(t *testing.T, script string, extra ...sandbox.Mount) (string, sandbox.Exit) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := r.sb.Start(sandbox.Spec{
		Path:   "/bin/bash",
		Args:   []string{"bash", "-c", script},
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + r.work, "BOT_PID=" + strconv.Itoa(os.Getpid())},
		Dir:    r.work,
		Mounts: append([]sandbox.Mount{{Path: r.work, Access: sandbox.ReadWrite}}, extra...),
		Stdout: out, Stderr: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	return string(b), exit
}

// runLimited is run with Spec.FileSize set, its output through a pipe (the
// limit holds for regular files, which run's output file is).
func (r *rig) runLimited(t *testing.T, fileSize int64, script string) (string, sandbox.Exit) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	p, err := r.sb.Start(sandbox.Spec{
		Path: "/bin/bash", Args: []string{"bash", "-c", script},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Dir: r.work,
		Mounts: []sandbox.Mount{{Path: r.work, Access: sandbox.ReadWrite}},
		Stdout: pw, Stderr: pw, FileSize: fileSize,
	})
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(pr)
	exit, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return string(b), exit
}

// noLeak fails when out shows the bot's secret or the content of files the
// command must not see.
func noLeak(t *testing.T, out string) {
	t.Helper()
	if sandboxtest.Shows(out, botSecret) {
		t.Fatalf("the sandbox leaked the bot's secret (plain, reversed or in base64):\n%s", out)
	}
	for _, s := range []string{"thread b said", "package main // thread b", "the bot's home"} {
		if strings.Contains(out, s) {
			t.Fatalf("the sandbox leaked %q:\n%s", s, out)
		}
	}
}

func TestMain(m *testing.M) {
	// The bot's environment holds its secrets; none may reach a sandbox.
	os.Setenv("THREADSMITH_TEST_BOT_KEY", botSecret)
	os.Exit(m.Run())
}

func TestCommandWorksInItsWorktree(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	out, exit := r.run(t, `set -e; cat README; echo new > made.txt; mkdir -p sub/dir; mv made.txt sub/dir/; ls sub/dir; echo $PWD; id -u; cat /etc/passwd >/dev/null && echo etc-ok; echo tmp > /tmp/x && cat /tmp/x`)
	if exit.Code != 0 {
		t.Fatalf("exit %+v:\n%s", exit, out)
	}
	for _, want := range []string{"hello from the worktree", "made.txt", r.work, "etc-ok", "tmp"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(r.work, "sub", "dir", "made.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("file written in the sandbox: %q, %v; want \"new\\n\" on the host", b, err)
	}
}

func TestExitCodesAndSignals(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	if _, exit := r.run(t, "exit 7"); exit.Code != 7 || exit.Signaled() {
		t.Errorf("exit 7: got %+v", exit)
	}
	if _, exit := r.run(t, "kill -TERM $$"); exit.Signal != syscall.SIGTERM {
		t.Errorf("kill -TERM $$: got %+v, want signal SIGTERM", exit)
	}
	out, exit := r.run(t, "no-such-command-xyz")
	if exit.Code != 127 || !strings.Contains(out, "not found") {
		t.Errorf("unknown command: got %+v %q, want 127 and 'not found'", exit, out)
	}
}

func TestBotEnvironmentAndProcessAreOutOfReach(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	out, _ := r.run(t, `
		echo "env: $(env)"
		for p in /proc/$PPID /proc/1 /proc/$BOT_PID /proc/self; do
			cat $p/environ $p/cmdline 2>&1 | tr '\0' ' '; echo
			cat $p/maps 2>&1 | head -3
			ls -l $p/cwd $p/root $p/exe 2>&1
		done
		ls /proc | grep -E '^[0-9]+$' | wc -l
		cat /proc/*/environ 2>/dev/null | rev | base64
		perl -e '`+sandboxtest.MemGrep+`' $PPID 1 $BOT_PID 2>&1
		kill -STOP $BOT_PID 2>&1; kill -STOP 1 2>&1; kill -9 -1 2>&1; echo after-kill`)
	noLeak(t, out)
	if !strings.Contains(out, "maps 1: ") && !strings.Contains(out, "mem 1: ") {
		t.Errorf("the memory reader did not run:\n%s", out)
	}
	if strings.Contains(out, "THREADSMITH_TEST_BOT_KEY") {
		t.Fatalf("the bot's environment reached the sandbox:\n%s", out)
	}
	if st := procState(t, os.Getpid()); st == "T" {
		t.Fatalf("the bot was stopped from inside the sandbox")
	}
}

func procState(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0]
}

func TestFilesOutsideAreInvisibleAndReadOnly(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	script := fmt.Sprintf(`
		ls -a / | tr '\n' ' '; echo
		cat %[1]q/threadsmith.db %[2]q %[3]q %[4]q/main.go 2>&1
		grep -ra thread %[1]q 2>&1 | head
		ls /proc/self/root/ 2>&1 | tr '\n' ' '
		cat /etc/shadow /etc/ssh/ssh_host_ed25519_key 2>&1
		for f in /usr/pwned /etc/pwned /pwned /bin/pwned /proc/sys/kernel/hostname /proc/sysrq-trigger %[4]q/pwned; do
			echo x > $f 2>&1 || echo "refused $f"
		done
		mount -t tmpfs none /tmp 2>&1 || echo mount-refused
		mount -o remount,rw /usr 2>&1 || echo remount-refused
		unshare -U true 2>&1 || echo unshare-user-refused
		unshare -m true 2>&1 || echo unshare-mount-refused
		chroot / true 2>&1 || echo chroot-refused`, r.dataDir, r.config, r.hostFile, r.other)
	out, _ := r.run(t, script)
	noLeak(t, out)
	for _, want := range []string{"mount-refused", "remount-refused", "unshare-user-refused", "unshare-mount-refused", "chroot-refused",
		"refused /usr/pwned", "refused /etc/pwned", "refused /pwned", "refused /proc/sysrq-trigger", "refused /proc/sys/kernel/hostname"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, p := range []string{"/usr/pwned", "/etc/pwned", "/pwned", filepath.Join(r.other, "pwned")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created on the host", p)
		}
	}
	if b, _ := os.ReadFile(r.hostFile); !strings.Contains(string(b), "the bot's home") {
		t.Errorf("a file in the bot's home changed: %q", b)
	}
}

func TestHiddenPathsInsideVisibleOnes(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	// A toolchain folder that is shown, holding a config file and a data
	// folder that must not be: as /etc/threadsmith/config.yaml would be.
	tool := filepath.Join(t.TempDir(), "opt")
	write(t, filepath.Join(tool, "bin", "tool"), "#!/bin/sh\necho tool-ran\n")
	write(t, filepath.Join(tool, "secret.yaml"), botSecret)
	write(t, filepath.Join(tool, "data", "db"), botSecret)
	os.Chmod(filepath.Join(tool, "bin", "tool"), 0o755)
	sb := sandboxtest.New(t, sandbox.Config{
		ReadOnly: []string{tool},
		Hide:     []string{filepath.Join(tool, "secret.yaml"), filepath.Join(tool, "data")},
	})
	r.sb = sb
	out, _ := r.run(t, fmt.Sprintf(`%[1]s/bin/tool; cat %[1]s/secret.yaml; ls -A %[1]s/data; cat %[1]s/data/db 2>&1; echo x > %[1]s/new 2>&1 || echo ro`, tool))
	noLeak(t, out)
	if !strings.Contains(out, "tool-ran") || !strings.Contains(out, "ro") {
		t.Fatalf("the read-only path did not work as shown:\n%s", out)
	}
}

func TestNoProcessOutlivesTheCommand(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	marker := fmt.Sprintf("tsmark%d", time.Now().UnixNano())
	out, exit := r.run(t, fmt.Sprintf(`
		(exec -a %[1]s-a sleep 1000) &
		setsid bash -c 'exec -a %[1]s-b sleep 1000' &
		nohup bash -c 'exec -a %[1]s-c sleep 1000' >/dev/null 2>&1 &
		( ( exec -a %[1]s-d sleep 1000 ) & ) &
		disown -a; echo started`, marker))
	if exit.Code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("exit %+v:\n%s", exit, out)
	}
	// The PID namespace is torn down before its init is reaped, so by now
	// nothing of the command is left anywhere on the machine.
	if left := sandboxtest.Live(marker); len(left) > 0 {
		t.Fatalf("processes outlived the command: %v", left)
	}
}

func TestKillEndsEverything(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	marker := fmt.Sprintf("tskill%d", time.Now().UnixNano())
	rd, wr, _ := os.Pipe()
	defer rd.Close()
	p, err := r.sb.Start(sandbox.Spec{
		Path: "/bin/bash", Args: []string{"bash", "-c", fmt.Sprintf(`setsid bash -c 'exec -a %[1]s sleep 1000' & echo up; exec -a %[1]s sleep 1000`, marker)},
		Dir: r.work, Mounts: []sandbox.Mount{{Path: r.work, Access: sandbox.ReadWrite}}, Stdout: wr,
	})
	wr.Close()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(rd, buf); err != nil || string(buf) != "up\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	p.Kill()
	exit, err := p.Wait()
	if err != nil || exit.Signal != syscall.SIGKILL {
		t.Fatalf("after Kill: %+v, %v; want killed by SIGKILL", exit, err)
	}
	if left := sandboxtest.Live(marker); len(left) > 0 {
		t.Fatalf("processes survived Kill: %v", left)
	}
	p.Kill() // after Wait: harmless
}

func TestNetworkIsOffByDefault(t *testing.T) {
	port, accepted := sandboxtest.HostListener(t)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	uport := udp.LocalAddr().(*net.UDPAddr).Port
	script := fmt.Sprintf(`
		(exec 3<>/dev/tcp/127.0.0.1/%d && echo tcp-connected) 2>&1
		(echo hello >/dev/udp/127.0.0.1/%d && echo udp-sent) 2>&1
		(exec 3<>/dev/tcp/93.184.216.34/80 && echo internet) 2>&1 | tail -1
		cat /proc/net/dev | grep -c : `, port, uport)

	r := newRig(t, sandbox.Config{})
	out, _ := r.run(t, script)
	if strings.Contains(out, "tcp-connected") || strings.Contains(out, "internet") {
		t.Fatalf("the sandbox reached the network:\n%s", out)
	}
	// Its own loopback is up (connection refused, not unreachable) and a
	// datagram to it goes nowhere: the host's listener never sees it.
	if !strings.Contains(out, "Connection refused") {
		t.Errorf("want the sandbox's own loopback up (connection refused):\n%s", out)
	}
	udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Fatalf("a datagram of %d bytes left the sandbox", n)
	}
	select {
	case <-accepted:
		t.Fatal("the host's listener accepted a connection from the sandbox")
	default:
	}
}

func TestPtraceAndSignalsStayInside(t *testing.T) {
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("perl is needed to call ptrace")
	}
	r := newRig(t, sandbox.Config{})
	// PTRACE_ATTACH (16) by syscall number (101 on x86_64) on the init and
	// on the bot's pid; both must fail.
	out, _ := r.run(t, `for pid in 1 $PPID $BOT_PID; do perl -e '$r = syscall(101, 16, $ARGV[0], 0, 0); print "attach $ARGV[0]: ", ($r == -1 ? "refused ($!)" : "ATTACHED"), "\n"' $pid; done`)
	if strings.Contains(out, "ATTACHED") || strings.Count(out, "refused") != 3 {
		t.Fatalf("ptrace from the sandbox:\n%s", out)
	}
}

func TestResourceLimitsHold(t *testing.T) {
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		t.Skip("perl is needed for the fork bomb and the memory hog")
	}
	r := newRig(t, sandbox.Config{Memory: 256 << 20, Processes: 32})
	out, _ := r.run(t, `ulimit -v; ulimit -u
		perl -e '$x = "a" x (1024*1024*1024); print "allocated 1 GiB\n"' 2>&1
		perl -e 'my $n = 0; while (1) { my $p = fork(); last unless defined $p; if ($p == 0) { sleep 1000; exit 0 } $n++ } print "forked $n\n"'`)
	if !strings.Contains(out, "262144\n32\n") {
		t.Errorf("limits inside: want 262144 KiB and 32 processes:\n%s", out)
	}
	if strings.Contains(out, "allocated") || !strings.Contains(out, "Out of memory") {
		t.Errorf("the memory hog was not stopped:\n%s", out)
	}
	var forked int
	if i := strings.Index(out, "forked "); i < 0 {
		t.Fatalf("the fork bomb did not stop by itself:\n%s", out)
	} else {
		fmt.Sscanf(out[i:], "forked %d", &forked)
	}
	if forked >= 32 || forked < 5 {
		t.Errorf("the fork bomb forked %d processes, want fewer than the limit of 32", forked)
	}
}

// Spec.FileSize caps every file a command writes: a 5 MiB write under a
// 1 MiB limit stops at 1 MiB with "File too large"; NoFileGrowth
// lets nothing grow while rm and truncation still work.
func TestFileSizeLimitHolds(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	out, exit := r.runLimited(t, 1<<20, `ulimit -f; head -c 5M /dev/zero > big.bin; echo "head: $?"; stat -c %s big.bin`)
	if !strings.HasPrefix(out, "1024\n") || !strings.Contains(out, "File too large") || !strings.Contains(out, "head: 1\n") || !strings.Contains(out, "\n1048576\n") || exit.Code != 0 {
		t.Errorf("a 5 MiB write under a 1 MiB limit (want ulimit -f 1024 KiB, head failing with EFBIG, 1048576 bytes written):\n%s", out)
	}
	out, _ = r.runLimited(t, sandbox.NoFileGrowth, `echo more >> README; echo "append: $?"; echo new > new.txt; echo "create: $?"; rm big.bin && echo removed; : > README && echo truncated`)
	for _, want := range []string{"append: 1", "File too large", "removed", "truncated"} {
		if !strings.Contains(out, want) {
			t.Errorf("under NoFileGrowth, want %q:\n%s", want, out)
		}
	}
	if fi, err := os.Stat(filepath.Join(r.work, "new.txt")); err == nil && fi.Size() > 0 {
		t.Errorf("under NoFileGrowth a new file got %d bytes", fi.Size())
	}
	if _, err := os.Stat(filepath.Join(r.work, "big.bin")); err == nil {
		t.Error("rm did not remove big.bin under NoFileGrowth")
	}
	if out, _ := r.runLimited(t, 0, `ulimit -f`); out != "unlimited\n" {
		t.Errorf("without FileSize: ulimit -f = %q, want unlimited", out)
	}
}

// RLIMIT_AS holds per process; a sandbox of many processes that fills the
// machine's memory is what the kernel's out-of-memory killer takes first,
// not the bot, and nothing inside can change that.
func TestOutOfMemoryKillerTakesTheSandboxFirst(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	out, _ := r.run(t, `cat /proc/self/oom_score_adj; (echo 0 > /proc/self/oom_score_adj; echo -500 > /proc/self/oom_score_adj) 2>/dev/null
		sh -c 'cat /proc/self/oom_score_adj'`)
	lines := strings.Fields(out)
	if len(lines) != 2 || lines[0] != "1000" {
		t.Fatalf("oom_score_adj inside: %q, want 1000", out)
	}
	if lines[1] != "1000" && (os.Geteuid() == 0 || strings.Contains(r.sb.String(), "landlock")) {
		t.Errorf("the sandbox lowered its oom_score_adj to %s", lines[1])
	}
}

// Unsandboxed, Spec.FileSize holds too; the writer is killed by SIGXFSZ
// (the bot does not ignore it for its children).
func TestNoneCapsFileSize(t *testing.T) {
	sb := sandbox.None()
	dir := t.TempDir()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := sb.Start(sandbox.Spec{Path: "/bin/bash", Args: []string{"bash", "-c", "head -c 5M /dev/zero > big; echo $? >&2"}, Dir: dir, Stderr: out, FileSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	fi, err := os.Stat(filepath.Join(dir, "big"))
	if err != nil || fi.Size() != 1<<20 || !strings.Contains(string(b), "153") {
		t.Errorf("a 5 MiB write under a 1 MiB limit, unsandboxed: %v, %d bytes written, output %q", err, fi.Size(), b)
	}
}

func TestNoneRunsDirectlyAndKillsItsGroup(t *testing.T) {
	sb, err := sandbox.New(sandbox.Config{Mode: sandbox.ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Confined() || !strings.Contains(sb.String(), "unsandboxed") {
		t.Fatalf("none: Confined=%v String=%q", sb.Confined(), sb)
	}
	dir := t.TempDir()
	marker := fmt.Sprintf("tsnone%d", time.Now().UnixNano())
	p, err := sb.Start(sandbox.Spec{Path: "/bin/bash", Args: []string{"bash", "-c", fmt.Sprintf("(exec -a %s sleep 1000) & exit 3", marker)}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	exit, err := p.Wait()
	if err != nil || exit.Code != 3 {
		t.Fatalf("got %+v, %v; want exit 3", exit, err)
	}
	// The background job was sent SIGKILL with its group; the kernel
	// delivers it asynchronously, so give it a moment to die.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var alive []string
		for _, pr := range sandboxtest.Live(marker) {
			pid, _, _ := strings.Cut(pr, ":")
			n, _ := strconv.Atoi(pid)
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n)); err == nil && !strings.Contains(string(b), ") Z ") {
				alive = append(alive, pr)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a background job outlived its command unsandboxed: %v", alive)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDescribe(t *testing.T) {
	sb := sandboxtest.New(t, sandbox.Config{})
	s := sb.String()
	for _, want := range []string{"namespaces", "network off", "memory 2 GiB", "512 processes"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, lacks %q", s, want)
		}
	}
	if _, err := sandbox.New(sandbox.Config{Mode: "chroot"}); err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Errorf("unknown mode: %v", err)
	}
}

// The bot makes itself not dumpable; a bot that is not root must still be
// able to start sandboxes (the kernel then owns its children's /proc files
// by root, uid_map included). CI runs as root; run this file's tests as
// another user (setpriv --reuid=65534 --regid=65534 --clear-groups) to see
// the other path.
func TestStartsFromANonDumpableBot(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
	out, exit := r.run(t, "echo inside")
	if exit.Code != 0 || !strings.Contains(out, "inside") {
		t.Fatalf("from a non-dumpable bot (uid %d): %+v %q", os.Getuid(), exit, out)
	}
	if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); d != 0 {
		t.Errorf("the bot is dumpable again after starting a sandbox")
	}
}

func TestMissingReadOnlyMountIsLeftOut(t *testing.T) {
	r := newRig(t, sandbox.Config{})
	gone := filepath.Join(t.TempDir(), "gone")
	out, exit := r.run(t, "ls "+gone+" 2>&1; echo ran", sandbox.Mount{Path: gone, Access: sandbox.ReadOnly})
	if exit.Code != 0 || !strings.Contains(out, "ran") || !strings.Contains(out, "No such file") {
		t.Fatalf("with a missing read-only mount: %+v %q", exit, out)
	}
	p, err := r.sb.Start(sandbox.Spec{Path: "/bin/true", Dir: r.work, Mounts: []sandbox.Mount{{Path: r.work, Access: sandbox.ReadWrite}, {Path: gone, Access: sandbox.ReadWrite}}})
	if err == nil {
		_, err = p.Wait()
	}
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("a missing writable mount: %v, want an error naming it", err)
	}
}

func TestTmpfsIsCappedLikeMemory(t *testing.T) {
	r := newRig(t, sandbox.Config{Memory: 64 << 20})
	out, _ := r.run(t, "df -k /tmp /dev/shm | tail -2 | awk '{print $2}'")
	if strings.Count(out, "65536\n") != 2 {
		t.Fatalf("sizes of /tmp and /dev/shm in KiB:\n%s\nwant 65536 each", out)
	}
}

func TestWithNetworkPerCommand(t *testing.T) {
	netRig(t) // or skip: the network is refused here
	// The user-mode network's device is there with the network only.
	script := "grep -c tap0: /proc/net/dev"
	r := newRig(t, sandbox.Config{})
	off := r.sb
	r.sb = off.WithNetwork(true)
	if out, _ := r.run(t, script); strings.TrimSpace(out) != "1" {
		t.Errorf("WithNetwork(true): %q", out)
	}
	r.sb = off
	if out, _ := r.run(t, script); strings.TrimSpace(out) != "0" {
		t.Errorf("the original sandbox got the network: %q", out)
	}
	if sandbox.None().WithNetwork(false).Confined() {
		t.Error("None().WithNetwork confines")
	}
}
