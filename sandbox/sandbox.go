package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// Mode says how commands are isolated.
type Mode string

const (
	// ModeAuto picks the strongest isolation the kernel offers (today:
	// namespaces, plus Landlock where available) and fails when there is none.
	ModeAuto Mode = "auto"
	// ModeNamespaces requires user, mount, PID and network namespaces
	// (Landlock is added when the kernel has it).
	ModeNamespaces Mode = "namespaces"
	// ModeNone runs commands unsandboxed, in their own process group.
	ModeNone Mode = "none"
)

// Defaults of Config.
const (
	DefaultMemory    int64 = 2 << 30
	DefaultProcesses       = 512
)

// Config configures a Sandbox.
type Config struct {
	Mode Mode
	// Network lets commands reach the network outside this host, through a
	// user-mode network stack (slirp4netns) in a network namespace of their
	// own: never the host's loopback, its own addresses, the networks it is
	// directly on or link-local addresses, so none of the host's services
	// (the bot's listener, a database here or beside it, a cloud's metadata).
	Network bool
	// Memory caps each process's address space in bytes (RLIMIT_AS).
	// Default DefaultMemory; negative means no limit.
	Memory int64
	// Processes caps the processes of one command (RLIMIT_NPROC in the
	// sandbox's user namespace). Default DefaultProcesses; negative: no limit.
	Processes int
	// ReadOnly are extra host paths shown read-only at the same place (a
	// toolchain under /opt, say).
	ReadOnly []string
	// Hide are host paths that must never be visible, even when they lie
	// inside a path that is (the bot's config file under /etc, its data
	// directory). They are masked by an empty directory or file.
	Hide []string
	// Metrics is told of every sandbox that could not be started (the
	// operator's metrics); nil tells no one.
	Metrics interface{ StartFailed() }
}

// Access is how a Mount is shown inside the sandbox.
type Access int

const (
	// ReadOnly shows the host path read-only.
	ReadOnly Access = iota
	// ReadWrite shows the host path writable.
	ReadWrite
	// Hidden masks the path with an empty, read-only directory or file;
	// later mounts below it may show parts of it again.
	Hidden
)

func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "ro"
	case ReadWrite:
		return "rw"
	case Hidden:
		return "hidden"
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

// Mount shows a host path at the same path inside the sandbox.
type Mount struct {
	Path   string
	Access Access
}

// Spec is one command to run.
type Spec struct {
	// Path is the program's absolute path; it must be visible inside.
	Path string
	// Args is argv, Args[0] included.
	Args []string
	// Env is the whole environment of the command.
	Env []string
	// Dir is the working directory; it must be visible inside.
	Dir string
	// Mounts are shown in addition to the system's programs and libraries.
	// Parents are mounted before the paths inside them, whatever the order.
	Mounts []Mount
	// Stdin, Stdout and Stderr are the command's standard files; nil is
	// /dev/null.
	Stdin, Stdout, Stderr *os.File
	// FileSize caps the size any regular file the command writes may reach
	// (RLIMIT_FSIZE, in bytes): a write past it fails with EFBIG ("File too
	// large"; SIGXFSZ is ignored in a sandbox, while an unsandboxed writer is
	// killed by it). 0 is no limit; NoFileGrowth lets no file grow.
	FileSize int64
}

// NoFileGrowth as Spec.FileSize forbids writing any byte to a regular file
// (RLIMIT_FSIZE 0); deleting and truncating still work.
const NoFileGrowth int64 = -1

// fileSizeLimit is the RLIMIT_FSIZE value of Spec.FileSize, or -1 for none.
func fileSizeLimit(fileSize int64) int64 {
	switch {
	case fileSize > 0:
		return fileSize
	case fileSize == NoFileGrowth:
		return 0
	}
	return -1
}

// Exit is how a command ended.
type Exit struct {
	// Code is the exit code, or -1 when the command was killed by a signal.
	Code int
	// Signal is the signal that killed the command, or 0.
	Signal syscall.Signal
}

// Signaled reports whether a signal ended the command.
func (e Exit) Signaled() bool { return e.Signal != 0 }

// ErrUnavailable is wrapped by New when the requested isolation cannot be had
// on this machine.
var ErrUnavailable = errors.New("sandbox unavailable")

// Sandbox starts commands under one isolation policy. It is safe for
// concurrent use.
type Sandbox struct {
	cfg      Config
	landlock int // Landlock ABI version in use, 0 when none
	// hostID is the host uid and gid the sandbox's root is: the bot's own,
	// or, when the bot is root, an unprivileged one (see idmap).
	hostID int
	// idmap says the sandbox's mounts are idmapped (host root's files look
	// like the sandbox root's own), which is what lets a root bot run its
	// sandboxes as an unprivileged uid.
	idmap bool
	// netHelper is the path of the user-mode network stack, "" when it is
	// not installed.
	netHelper string
	// noSeccomp leaves the seccomp filter out (tests only).
	noSeccomp bool
	// unpooled starts a new init for every command (tests only).
	unpooled bool
}

// New checks cfg and, unless cfg.Mode is ModeNone, proves that the isolation
// works by running an empty command through the whole chain once. The error
// of an unusable mode wraps ErrUnavailable and says why.
func New(cfg Config) (*Sandbox, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeAuto
	}
	if cfg.Memory == 0 {
		cfg.Memory = DefaultMemory
	}
	if cfg.Processes == 0 {
		cfg.Processes = DefaultProcesses
	}
	for _, p := range append(slices.Clone(cfg.ReadOnly), cfg.Hide...) {
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: path %q is not absolute", p)
		}
	}
	s := &Sandbox{cfg: cfg}
	switch cfg.Mode {
	case ModeNone:
		return s, nil
	case ModeAuto, ModeNamespaces:
		if err := s.probe(); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("sandbox: unknown mode %q (want auto, namespaces or none)", cfg.Mode)
}

// None returns a sandbox that isolates nothing (ModeNone).
func None() *Sandbox { return &Sandbox{cfg: Config{Mode: ModeNone}} }

// Confined reports whether commands run isolated.
func (s *Sandbox) Confined() bool { return s != nil && s.cfg.Mode != ModeNone }

// WithNetwork returns a sandbox like s whose commands may (or may not) use the
// network: per command settings such as an MCP server's. Unconfined
// sandboxes have the network anyway.
func (s *Sandbox) WithNetwork(on bool) *Sandbox {
	if !s.Confined() {
		return s
	}
	c := *s
	c.cfg.Network = on
	return &c
}

// Network reports whether commands may use the network.
func (s *Sandbox) Network() bool { return s == nil || !s.Confined() || s.cfg.Network }

// String describes the isolation in use, for -check and logs.
func (s *Sandbox) String() string {
	if !s.Confined() {
		return "none (unsandboxed: commands run as the bot's user with its view of the machine)"
	}
	var b strings.Builder
	b.WriteString("namespaces (user, mount, pid, ipc, uts, net)")
	if s.landlock > 0 {
		fmt.Fprintf(&b, " + landlock ABI %d", s.landlock)
	} else {
		b.WriteString(", no landlock")
	}
	if seccompAvailable {
		b.WriteString(" + seccomp")
	}
	if s.idmap {
		fmt.Fprintf(&b, "; runs as uid %d", s.hostID)
	} else if s.hostID == 0 {
		b.WriteString("; runs as root without capabilities (no idmapped mounts here: the process limit is not enforced)")
	}
	if s.cfg.Network {
		b.WriteString("; network on (through slirp4netns: not this host's own services)")
	} else {
		b.WriteString("; network off")
	}
	if s.cfg.Memory > 0 {
		fmt.Fprintf(&b, "; memory %s", formatBytes(s.cfg.Memory))
	}
	if s.cfg.Processes > 0 {
		fmt.Fprintf(&b, "; %d processes", s.cfg.Processes)
	}
	return b.String()
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Process is a started command.
type Process struct {
	impl process
}

type process interface {
	kill()
	wait() (Exit, error)
}

// Start starts sp. The caller must call Wait.
func (s *Sandbox) Start(sp Spec) (*Process, error) {
	if !path.IsAbs(sp.Path) {
		return nil, fmt.Errorf("sandbox: program path %q is not absolute", sp.Path)
	}
	if len(sp.Args) == 0 {
		sp.Args = []string{sp.Path}
	}
	for _, m := range sp.Mounts {
		if !path.IsAbs(m.Path) {
			return nil, fmt.Errorf("sandbox: mount %q is not absolute", m.Path)
		}
	}
	var (
		p   process
		err error
	)
	if s.Confined() {
		p, err = s.startConfined(sp)
		if err != nil && s.cfg.Metrics != nil {
			s.cfg.Metrics.StartFailed()
		}
	} else {
		p, err = startDirect(sp)
	}
	if err != nil {
		return nil, err
	}
	return &Process{impl: p}, nil
}

// Kill kills the command and everything it started. It may be called at any
// time, more than once, and concurrently with Wait.
func (p *Process) Kill() { p.impl.kill() }

// Wait waits for the command to end. In a sandbox, the command's end ends
// every process it started.
func (p *Process) Wait() (Exit, error) { return p.impl.wait() }
