package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// initArg0 is the name the bot's binary is started under as the sandbox's
// init.
const initArg0 = "threadsmith-sandbox-init"

// systemPaths are shown read-only when they exist: programs and libraries.
var systemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcEntries is the part of /etc a command needs to run programs, resolve
// names and verify TLS. The rest of /etc (shadow, ssh host keys, private TLS
// keys, the bot's own config, credentials of other services) stays out.
var etcEntries = []string{
	"alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "debian_version",
	"environment.d", "gai.conf", "group", "host.conf", "hostname", "hosts", "inputrc",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "locale.alias", "locale.conf",
	"login.defs", "lsb-release", "magic", "mime.types", "nsswitch.conf", "os-release", "passwd",
	"pki/ca-trust", "pki/tls/certs", "profile", "profile.d", "protocols", "resolv.conf", "rpc",
	"services", "ssl/certs", "ssl/openssl.cnf", "terminfo", "timezone", "vim", "wgetrc",
}

// initSpec is what the init is told, as JSON on fd 3.
type initSpec struct {
	Mounts  []Mount `json:"mounts"`
	Dir     string  `json:"dir"`
	Network bool    `json:"network,omitempty"`
	// Idmap says the bot hands over the non-hidden mounts, idmapped, on fd 5.
	Idmap     bool    `json:"idmap,omitempty"`
	Cmd       cmdSpec `json:"cmd"`
	Landlock  int     `json:"landlock,omitempty"`
	TmpfsSize int64   `json:"tmpfs_size,omitempty"`
	// Stdio lists the standard files (0, 1, 2) the bot hands over on fd 5;
	// the others stay /dev/null.
	Stdio []int `json:"stdio,omitempty"`
	// Blocked are the host's addresses and networks, made unreachable
	// inside, and NetFD the pipe on which the network helper says it is
	// ready (with the network on).
	Blocked []prefix `json:"blocked,omitempty"`
	NetFD   int      `json:"net_fd,omitempty"`
}

// cmdSpec is the command and the restrictions it starts under.
type cmdSpec struct {
	Path      string   `json:"path"`
	Args      []string `json:"args"`
	Env       []string `json:"env"`
	Memory    int64    `json:"memory,omitempty"`
	Processes int      `json:"processes,omitempty"`
	FileSize  int64    `json:"file_size,omitempty"`
	Landlock  int      `json:"landlock,omitempty"`
	Network   bool     `json:"network,omitempty"`
	Writable  []string `json:"writable,omitempty"`
	// NoSeccomp leaves the seccomp filter out (tests of what lies under it).
	NoSeccomp bool `json:"no_seccomp,omitempty"`
}

// confined is a command in a sandbox: the init process and the pipe on which
// the init reports the command's end.
type confined struct {
	cmd    *spawn
	status *os.File
	waited chan struct{}
	exit   Exit
	err    error
	once   sync.Once
	killed bool
	mu     sync.Mutex
	// metrics is told when the init reports that it could not build the
	// sandbox (a failure after Start returned).
	metrics interface{ StartFailed() }
	// ended, if set, is called once the command has ended: it starts the
	// init of a next command then, off the path of this one and the next.
	ended func()
	// net is the sandbox's network helper, nil without network.
	net *netStack
}

func (s *Sandbox) startConfined(sp Spec) (process, error) {
	spec := s.initSpec(sp)
	return s.startInit(spec, sp, !s.unpooled)
}

func (s *Sandbox) initSpec(sp Spec) initSpec {
	mounts := s.mounts(sp.Mounts)
	var writable []string
	for _, m := range mounts {
		if m.Access == ReadWrite {
			writable = append(writable, m.Path)
		}
	}
	var tmpfs int64
	if s.cfg.Memory > 0 {
		tmpfs = s.cfg.Memory
	}
	return initSpec{
		Mounts:    mounts,
		Idmap:     s.idmap,
		Dir:       sp.Dir,
		Network:   s.cfg.Network,
		TmpfsSize: tmpfs,
		Cmd: cmdSpec{
			Path:      sp.Path,
			Args:      sp.Args,
			Env:       sp.Env,
			Memory:    s.cfg.Memory,
			Processes: s.cfg.Processes,
			FileSize:  sp.FileSize,
			Landlock:  s.landlock,
			Network:   s.cfg.Network,
			Writable:  writable,
			NoSeccomp: s.noSeccomp,
		},
	}
}

// mounts orders the caller's mounts, the configured extra read-only paths and
// masks for the configured hidden paths that would otherwise be visible, so
// that a parent is always mounted before what lies inside it.
func (s *Sandbox) mounts(extra []Mount) []Mount {
	var ms []Mount
	for _, p := range s.cfg.ReadOnly {
		ms = append(ms, Mount{Path: path.Clean(p), Access: ReadOnly})
	}
	for _, m := range extra {
		ms = append(ms, Mount{Path: path.Clean(m.Path), Access: m.Access})
	}
	visible := slices.Clone(systemPaths)
	for _, e := range etcEntries {
		visible = append(visible, "/etc/"+e)
	}
	for _, m := range ms {
		if m.Access != Hidden {
			visible = append(visible, m.Path)
		}
	}
	for _, h := range s.cfg.Hide {
		h = path.Clean(h)
		if slices.ContainsFunc(visible, func(v string) bool { return strings.HasPrefix(h, v+"/") }) {
			ms = append(ms, Mount{Path: h, Access: Hidden})
		}
	}
	slices.SortStableFunc(ms, func(a, b Mount) int {
		return strings.Count(a.Path, "/") - strings.Count(b.Path, "/")
	})
	return ms
}

// startInit hands the command to an init: one started ahead and waiting
// (pooled), or a new one. A pooled command's end starts the init of the
// next one, off the path of both.
func (s *Sandbox) startInit(spec initSpec, sp Spec, pooled bool) (*confined, error) {
	k := initKey{hostID: s.hostID, hostGID: s.hostGID(), network: spec.Network}
	if spec.Network {
		return s.startNetworked(k, spec, sp)
	}
	var ended func()
	if pooled {
		ended = func() { refillInit(k) }
		// One that died while it waited (the out-of-memory killer takes
		// the sandbox's processes first) leaves the work to a new one.
		if p := takeIdleInit(k); p != nil && p.alive() {
			if c, err := s.handOver(p, spec, sp, ended, nil); err == nil {
				return c, nil
			}
		} else if p != nil {
			p.discard()
		}
	}
	if pooled {
		unreadyInits.Add(1)
	}
	p, err := launchInit(k, nil)
	if err != nil {
		return nil, err
	}
	return s.handOver(p, spec, sp, ended, nil)
}

// startNetworked starts a command with the network on in an init of its
// own (never one started ahead): the init gets the read end of the pipe on
// which the network helper says it is ready, and the helper is started on
// the init's namespace once the init has its spec.
func (s *Sandbox) startNetworked(k initKey, spec initSpec, sp Spec) (*confined, error) {
	np, ready, err := s.prepareNet(&spec)
	if err != nil {
		return nil, err
	}
	p, err := launchInit(k, ready)
	ready.Close()
	if err != nil {
		np.ready.Close()
		return nil, err
	}
	return s.handOver(p, spec, sp, nil, np)
}

// unreadyInits counts the pooled commands that found no init ready.
var unreadyInits atomic.Int64

// initKey is what an init is started with, before it knows its command:
// the ids of the sandbox's root and whether it has a network namespace.
type initKey struct {
	hostID, hostGID int
	network         bool
}

// initProc is a started init waiting for its spec on fd 3; it reports on
// fd 4 and receives the command's standard files and mounts on fd 5.
type initProc struct {
	cmd     *spawn
	specW   *os.File
	statusR *os.File
	sock    *os.File
}

// launchInit starts an init in new namespaces, which waits for its spec.
// netReady, if not nil, becomes the init's fd 6 (netFD): the network
// helper's readiness pipe.
func launchInit(k initKey, netReady *os.File) (*initProc, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specR.Close()
		specW.Close()
		statusR.Close()
		statusW.Close()
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	sock, peer := os.NewFile(uintptr(fds[0]), "handover"), os.NewFile(uintptr(fds[1]), "handover-peer")
	rootBot := os.Getuid() == 0
	cmd := &spawn{
		Path: "/proc/self/exe",
		Args: []string{initArg0},
		// Nothing of the bot's environment: that is where its secrets are.
		Env:        initEnv,
		ExtraFiles: extraFiles(specR, statusW, peer, netReady),
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
				syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP | syscall.CLONE_NEWNET,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: k.hostID, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: k.hostGID, Size: 1}},
			GidMappingsEnableSetgroups: rootBot,
			// Become the namespace's root, so that the init keeps its
			// capabilities there across execve even when the bot's own uid
			// is not the one mapped (a root bot's sandbox runs as nobody).
			// A root bot also drops its supplementary groups (host gid 0
			// among them) there; the kernel lets only a privileged writer
			// of gid_map leave setgroups allowed, so a bot that is not root
			// keeps its own (see the package documentation).
			Credential: &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: !rootBot},
			// The sandbox dies with the bot, whatever kills it.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	err = startDumpable(cmd)
	specR.Close()
	statusW.Close()
	peer.Close()
	if err != nil {
		specW.Close()
		statusR.Close()
		sock.Close()
		return nil, fmt.Errorf("sandbox: start: %w", err)
	}
	// Memory is limited per process (RLIMIT_AS), so many processes of one
	// sandbox can still fill the machine: the kernel's out-of-memory killer
	// is to take them before anything else, the bot above all. The init
	// waits for its spec, so this holds before the command starts, and every
	// process of the sandbox inherits it. A root bot (CAP_SYS_RESOURCE) also
	// makes it the floor nothing inside can go below; Landlock keeps /proc
	// read-only inside anyway.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", cmd.Process.Pid), []byte("1000\n"), 0)
	return &initProc{cmd: cmd, specW: specW, statusR: statusR, sock: sock}, nil
}

// handOver gives the init its spec, the command's standard files (those
// that are not /dev/null, which the init already has) and, idmapped, its
// mounts; with np, it starts the network helper on the init's namespace
// (the init builds the sandbox's tree meanwhile and waits for the network
// before the command starts).
func (s *Sandbox) handOver(p *initProc, spec initSpec, sp Spec, ended func(), np *netPrep) (*confined, error) {
	defer p.sock.Close()
	var stdio []int
	for i, f := range []*os.File{sp.Stdin, sp.Stdout, sp.Stderr} {
		if f != nil {
			spec.Stdio = append(spec.Stdio, i)
			stdio = append(stdio, int(f.Fd()))
		}
	}
	c := &confined{cmd: p.cmd, status: p.statusR, waited: make(chan struct{}), metrics: s.cfg.Metrics, ended: ended}
	b, _ := json.Marshal(spec)
	_, werr := p.specW.Write(b)
	p.specW.Close()
	if np != nil && werr == nil {
		c.net, werr = np.start(p.cmd.Process.Pid)
	} else if np != nil {
		np.ready.Close()
	}
	if werr == nil && len(stdio) > 0 {
		werr = unix.Sendmsg(int(p.sock.Fd()), []byte("stdio"), unix.UnixRights(stdio...), nil, 0)
		runtime.KeepAlive(sp)
	}
	if werr == nil && spec.Idmap {
		werr = passMounts(p.cmd.Process.Pid, spec.Mounts, p.sock)
	}
	if werr != nil {
		c.kill()
		_, _ = c.wait()
		return nil, fmt.Errorf("sandbox: handing over the command: %w", werr)
	}
	return c, nil
}

// idleInits holds one started init per key, waiting for the next command:
// the namespaces and the init's own start (the bot's binary, re-executed)
// are most of a sandbox's start, and are then paid between commands. An
// init waiting here holds nothing of a command yet (its spec, files and
// mounts come with the command) and dies with the bot like any other.
var idleInits struct {
	sync.Mutex
	idle map[initKey]*initProc
	// starting holds, for an init being started ahead, a channel closed
	// when it is there (or could not be started).
	starting map[initKey]chan struct{}
}

// takeIdleInit returns the init waiting for k, if any. One being started
// is waited for: it is partway, and a second start beside it would slow
// both down.
func takeIdleInit(k initKey) *initProc {
	idleInits.Lock()
	p, ready := idleInits.idle[k], idleInits.starting[k]
	delete(idleInits.idle, k)
	idleInits.Unlock()
	if p != nil || ready == nil {
		return p
	}
	<-ready
	idleInits.Lock()
	defer idleInits.Unlock()
	p = idleInits.idle[k]
	delete(idleInits.idle, k)
	return p
}

// refillInit starts an init for k in the background unless one waits or is
// being started. An init that cannot be started is not retried: the next
// command starts its own and reports why.
func refillInit(k initKey) {
	idleInits.Lock()
	defer idleInits.Unlock()
	if idleInits.idle[k] != nil || idleInits.starting[k] != nil {
		return
	}
	if idleInits.idle == nil {
		idleInits.idle, idleInits.starting = map[initKey]*initProc{}, map[initKey]chan struct{}{}
	}
	ready := make(chan struct{})
	idleInits.starting[k] = ready
	go func() {
		defer close(ready)
		p, err := launchInit(k, nil)
		idleInits.Lock()
		delete(idleInits.starting, k)
		if err == nil && idleInits.idle[k] == nil {
			idleInits.idle[k], p = p, nil
		}
		idleInits.Unlock()
		if p != nil {
			p.discard()
		}
	}()
}

// alive reports whether the init still waits: its end of the status pipe
// is open.
func (p *initProc) alive() bool {
	raw, err := p.statusR.SyscallConn()
	if err != nil {
		return false
	}
	n := -1
	_ = raw.Control(func(fd uintptr) {
		n, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	})
	return n == 0
}

// discard ends an init that was never handed a command.
func (p *initProc) discard() {
	p.specW.Close()
	p.sock.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.statusR.Close()
}

func (c *confined) kill() {
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	// pid 1 of the namespace: its death kills every process in it. After
	// Wait the pid may be reused, so Kill after Wait does nothing.
	select {
	case <-c.waited:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
}

func (c *confined) wait() (Exit, error) {
	c.once.Do(func() {
		defer close(c.waited)
		// The init writes one line when the command ends, then exits; read
		// it before reaping so that the pipe cannot fill.
		line, _ := bufio.NewReader(c.status).ReadString('\n')
		c.status.Close()
		werr := c.cmd.Wait()
		failed := strings.HasPrefix(line, "error ")
		if helper := c.net.stop(failed); helper != "" {
			line = strings.TrimSpace(line) + " (" + netHelperName + ": " + helper + ")"
		}
		c.exit, c.err = parseStatus(line, werr)
		if failed && c.metrics != nil {
			c.metrics.StartFailed()
		}
		if c.ended != nil {
			c.ended()
		}
	})
	return c.exit, c.err
}

// parseStatus reads the init's report ("exit N", "signal N" or "error
// TEXT"). Without one, the init itself was killed (by Kill, or by the
// kernel), and so was the command.
func parseStatus(line string, werr error) (Exit, error) {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch word {
	case "exit":
		n, err := strconv.Atoi(rest)
		if err == nil {
			return Exit{Code: n}, nil
		}
	case "signal":
		n, err := strconv.Atoi(rest)
		if err == nil {
			return Exit{Code: -1, Signal: syscall.Signal(n)}, nil
		}
	case "error":
		return Exit{}, fmt.Errorf("sandbox: %s", rest)
	}
	if werr != nil {
		return Exit{}, fmt.Errorf("sandbox: wait: %w", werr)
	}
	return Exit{Code: -1, Signal: syscall.SIGKILL}, nil
}

// hostGID is the host gid of the sandbox's root.
func (s *Sandbox) hostGID() int {
	if s.idmap {
		return s.hostID
	}
	return os.Getgid()
}

// unprivilegedID is the host uid and gid a root bot's sandboxes run as:
// "nobody" on most systems. Nothing of the host that it could own is visible
// inside, and its processes are counted against RLIMIT_NPROC, which the
// kernel never enforces for uid 0.
const unprivilegedID = 65534

// passMounts hands the init every non-hidden mount, cloned from the host's
// tree and idmapped through the sandbox's user namespace, so that files the
// bot (root) owns are the sandbox root's own. Only the bot can make them:
// idmapping needs CAP_SYS_ADMIN over the filesystem.
func passMounts(pid int, mounts []Mount, sock *os.File) error {
	userns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the sandbox's user namespace: %w", err)
	}
	defer unix.Close(userns)
	for i, m := range mounts {
		if m.Access == Hidden {
			continue
		}
		fd, err := idmappedTree(m.Path, userns)
		if errors.Is(err, unix.ENOENT) && m.Access == ReadOnly {
			continue // gone meanwhile: nothing to show (see applyMount)
		}
		if err != nil {
			return err
		}
		err = unix.Sendmsg(int(sock.Fd()), []byte(strconv.Itoa(i)), unix.UnixRights(fd), nil, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("handing over %s: %w", m.Path, err)
		}
	}
	return unix.Sendmsg(int(sock.Fd()), []byte("end"), nil, nil, 0)
}

// idmappedTree clones the mount tree at path, idmapped through userns.
func idmappedTree(path string, userns int) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("cloning %s: %w", path, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("idmapping %s: %w", path, err)
	}
	return fd, nil
}

// A process that is not dumpable has its /proc files owned by root, so a bot
// that is not root (and made itself not dumpable) cannot write its child's
// uid_map while it starts the init. For those few instants the bot is made
// dumpable again: the sandboxed processes cannot see it (they live in their
// own PID namespace), and the bot's other children are its own git.
var dumpable struct {
	sync.Mutex
	users int
	was   int
}

func startDumpable(cmd *spawn) error {
	if os.Getuid() == 0 {
		return cmd.Start() // root writes the map whoever owns the file
	}
	dumpable.Lock()
	if dumpable.users == 0 {
		dumpable.was, _ = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		if dumpable.was != 1 {
			_ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		}
	}
	dumpable.users++
	dumpable.Unlock()
	defer func() {
		dumpable.Lock()
		if dumpable.users--; dumpable.users == 0 && dumpable.was != 1 {
			_ = unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(dumpable.was), 0, 0, 0)
		}
		dumpable.Unlock()
	}()
	return cmd.Start()
}

// probe runs the whole chain once with an empty command.
func (s *Sandbox) probe() error {
	if err := s.findNet(); err != nil {
		return err
	}
	s.landlock = landlockABI()
	s.hostID = os.Getuid()
	if s.hostID != 0 {
		return s.probeOnce()
	}
	// A root bot runs its sandboxes as an unprivileged uid over idmapped
	// mounts where the kernel and filesystem allow it, and as a root
	// without capabilities otherwise.
	s.hostID, s.idmap = unprivilegedID, true
	if s.probeOnce() == nil {
		return nil
	}
	s.hostID, s.idmap = 0, false
	return s.probeOnce()
}

func (s *Sandbox) probeOnce() error {
	dir, err := os.MkdirTemp("", "threadsmith-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer os.RemoveAll(dir)
	// The empty command: a system program, so that the probe proves it can
	// be found and run inside, under every restriction.
	prog := []string{"/bin/sh", "-c", ":"}
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			prog = []string{p}
			break
		}
	}
	spec := s.initSpec(Spec{Path: prog[0], Args: prog, Dir: dir, Mounts: []Mount{{Path: dir, Access: ReadWrite}}})
	var out strings.Builder
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			if out.Len() < 4096 {
				out.Write(b[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	c, err := s.startInit(spec, Spec{Stdout: w, Stderr: w}, false)
	w.Close()
	if err != nil {
		r.Close()
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	timer := time.AfterFunc(30*time.Second, c.kill)
	exit, err := c.wait()
	timer.Stop()
	<-done
	r.Close()
	if err == nil && (exit.Code != 0 || exit.Signaled()) {
		err = fmt.Errorf("the test command ended with %+v", exit)
	}
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if msg != "" {
			err = fmt.Errorf("%v: %s", err, msg)
		}
		return fmt.Errorf("%w: user, mount and PID namespaces do not work here (%v)", ErrUnavailable, err)
	}
	return nil
}

// startLimited starts cmd with RLIMIT_FSIZE at limit from its first
// instruction on: as the sandbox's init does, the child is started traced,
// stops right after execve, gets its limit and is let go. Ptrace requests
// come from the thread that forked, so the goroutine stays on it.
func startLimited(cmd *spawn, limit int64) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	fail := func(err error) error {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return err
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, unix.WALL, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("waiting for the command to start: %w", err))
		}
		break
	}
	if !ws.Stopped() {
		return fail(fmt.Errorf("the command did not stop at its start (%v)", ws))
	}
	lim := unix.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		return fail(fmt.Errorf("file size limit: %w", err))
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		return fail(fmt.Errorf("releasing the command: %w", err))
	}
	return nil
}

// extraFiles lists the init's files from fd 3 on: the spec, the status
// pipe, the hand-over socket and, with the network on, the helper's
// readiness pipe.
func extraFiles(spec, status, handover, netReady *os.File) []*os.File {
	files := []*os.File{spec, status, handover}
	if netReady != nil {
		files = append(files, netReady)
	}
	return files
}
