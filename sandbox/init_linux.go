package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// init turns this binary into the sandbox's init when it was started as one.
// It runs during package initialisation on purpose: the main goroutine is
// then locked to the main thread, which is what the init needs for Landlock
// and capabilities (both per thread) to reach the command it starts.
func init() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case initArg0:
		if os.Getpid() == 1 {
			os.Exit(runInit())
		}
	}
}

// runInit is pid 1 of the sandbox: it builds the root, starts the command,
// reaps every process and reports how the command ended on fd 4.
func runInit() int {
	status := os.NewFile(4, "status")
	report := func(format string, args ...any) {
		fmt.Fprintf(status, format+"\n", args...)
	}
	specFile := os.NewFile(3, "spec")
	b, err := io.ReadAll(specFile)
	specFile.Close()
	if err != nil {
		report("error reading the sandbox spec: %v", err)
		return 1
	}
	var spec initSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		report("error decoding the sandbox spec: %v", err)
		return 1
	}
	unix.CloseOnExec(4)
	if err := receiveStdio(spec.Stdio); err != nil {
		report("error receiving the standard files: %v", err)
		return 1
	}
	if !spec.Idmap {
		unix.Close(5)
	}
	var trees map[int]int
	if spec.Idmap {
		if trees, err = receiveMounts(); err != nil {
			report("error receiving the mounts: %v", err)
			return 1
		}
	}
	// Nothing in the sandbox may read this process's memory or /proc files.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)

	if err := buildRoot(&spec, trees); err != nil {
		report("error %v", err)
		return 1
	}
	if err := setupNetwork(&spec); err != nil {
		report("error %v", err)
		return 1
	}
	_ = unix.Sethostname([]byte("sandbox"))
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			report("error the working directory %s is not in the sandbox: %v", spec.Dir, err)
			return 1
		}
	}

	pid, code, err := startCommand(spec.Cmd)
	if err != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
			report("exit %d", code)
			return 0
		}
		report("error %v", err)
		return 1
	}
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			report("error waiting for the command: %v", err)
			return 1
		}
		if wpid != pid {
			continue // an orphan of the command, reparented to us
		}
		if ws.Signaled() {
			report("signal %d", int(ws.Signal()))
		} else {
			report("exit %d", ws.ExitStatus())
		}
		// Returning ends pid 1, and the kernel kills whatever is left.
		return 0
	}
}

// Mount flags of everything read-only the sandbox shows.
const roAttr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

// buildRoot makes the sandbox's file tree and pivots into it. It works as
// bubblewrap does: a tmpfs over /tmp becomes the root with the host's tree
// under /oldroot (pivot_root moves the tmpfs away, so /oldroot/tmp is the
// host's /tmp again), the new tree is assembled under /newroot, and a second
// pivot_root drops everything else.
func buildRoot(spec *initSpec, trees map[int]int) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting the base tmpfs: %w", err)
	}
	if err := os.Chdir("/tmp"); err != nil {
		return err
	}
	for _, d := range []string{"newroot", "oldroot"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("tmpfs", "newroot", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting the new root: %w", err)
	}
	if err := unix.PivotRoot(".", "oldroot"); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := os.WriteFile("/empty", nil, 0o444); err != nil {
		return err
	}

	for _, p := range systemPaths {
		if err := showSystemPath(p); err != nil {
			return err
		}
	}
	for _, e := range etcEntries {
		if err := bindIfExists("/etc/"+e, true); err != nil {
			return err
		}
	}
	if err := os.MkdirAll("/newroot/etc", 0o755); err != nil {
		return err
	}
	if err := showResolvConf(spec); err != nil {
		return fmt.Errorf("writing the sandbox's resolv.conf: %w", err)
	}
	if err := buildDev(spec.TmpfsSize); err != nil {
		return err
	}
	if err := buildProc(); err != nil {
		return err
	}
	if err := mkMount("/newroot/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, tmpfsOpts(spec.TmpfsSize)); err != nil {
		return err
	}
	if err := os.MkdirAll("/newroot/var", 0o755); err == nil {
		_ = os.Symlink("/tmp", "/newroot/var/tmp")
	}

	// Whether each mount is a directory: from the tree the bot handed over
	// (the init may not be able to look at the host path itself: a root
	// bot's sandbox runs as nobody), else from the host path.
	dirs, skip := make([]bool, len(spec.Mounts)), make([]bool, len(spec.Mounts))
	for i, m := range spec.Mounts {
		var st unix.Stat_t
		if tree, ok := trees[i]; ok {
			if err := unix.Fstat(tree, &st); err != nil {
				return fmt.Errorf("mount %s: %w", m.Path, err)
			}
		} else if err := unix.Stat("/oldroot"+m.Path, &st); err != nil {
			switch m.Access {
			case Hidden:
				st.Mode = unix.S_IFDIR // decided by what is visible
			case ReadOnly:
				// Something to look at that is gone (a worktree's git
				// metadata being registered again): the command runs
				// without it rather than not at all.
				skip[i] = true
			default:
				return fmt.Errorf("mount %s: %w", m.Path, err)
			}
		}
		dirs[i] = st.Mode&unix.S_IFMT == unix.S_IFDIR
	}
	for i, m := range spec.Mounts {
		if skip[i] {
			continue
		}
		tree, ok := trees[i]
		if !ok {
			tree = -1
		}
		if err := applyMount(m, tree, dirs[i], spec.Mounts[i+1:], dirs[i+1:]); err != nil {
			return err
		}
	}

	if err := os.Chdir("/newroot"); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the new root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := setAttr("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false); err != nil {
		return fmt.Errorf("making the root read-only: %w", err)
	}
	return nil
}

// showSystemPath shows a host directory read-only, or recreates it when it is
// a symlink (/bin -> usr/bin on merged-/usr systems).
func showSystemPath(p string) error {
	fi, err := os.Lstat("/oldroot" + p)
	if err != nil {
		return nil // not on this system
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink("/oldroot" + p)
		if err != nil {
			return err
		}
		return os.Symlink(target, "/newroot"+p)
	}
	return bindIfExists(p, true)
}

// bindIfExists shows host path p at the same place, read-only when ro.
func bindIfExists(p string, ro bool) error {
	fi, err := os.Stat("/oldroot" + p)
	if err != nil {
		return nil
	}
	return bind("/oldroot"+p, "/newroot"+p, fi.IsDir(), ro)
}

// bind mounts src on dst (created as a directory or an empty file), with
// everything mounted below src, read-only (and nosuid, nodev) when ro.
func bind(src, dst string, dir, ro bool) error {
	if err := makeMountpoint(dst, dir); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mounting %s: %w", strings.TrimPrefix(src, "/oldroot"), err)
	}
	if ro {
		if err := setAttr(dst, roAttr, true); err != nil {
			return fmt.Errorf("making %s read-only: %w", strings.TrimPrefix(src, "/oldroot"), err)
		}
	} else if err := setAttr(dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, true); err != nil {
		return fmt.Errorf("mounting %s nosuid: %w", strings.TrimPrefix(src, "/oldroot"), err)
	}
	return nil
}

func makeMountpoint(dst string, dir bool) error {
	if dir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func setAttr(path string, attr uint64, recursive bool) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: attr})
}

func mkMount(dst, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(fstype, dst, fstype, flags, data); err != nil {
		return fmt.Errorf("mounting %s on %s: %w", fstype, strings.TrimPrefix(dst, "/newroot"), err)
	}
	return nil
}

// receiveMounts reads the idmapped mount trees the bot hands over on fd 5,
// by mount index, until "end".
func receiveMounts() (map[int]int, error) {
	defer unix.Close(5)
	trees := map[int]int{}
	buf, oob := make([]byte, 32), make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(5, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			return nil, err
		}
		msg := string(buf[:n])
		if msg == "end" {
			return trees, nil
		}
		i, err := strconv.Atoi(msg)
		if err != nil {
			return nil, fmt.Errorf("bad message %q", msg)
		}
		cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(cmsgs) != 1 {
			return nil, fmt.Errorf("mount %d came without its tree", i)
		}
		fds, err := unix.ParseUnixRights(&cmsgs[0])
		if err != nil || len(fds) != 1 {
			return nil, fmt.Errorf("mount %d came without its tree", i)
		}
		trees[i] = fds[0]
	}
}

// applyMount shows one caller mount: the idmapped tree the bot handed over
// (tree >= 0), or a bind of the host path. A hidden directory becomes an
// empty tmpfs in which the mountpoints of the later mounts below it are made
// before it turns read-only.
func applyMount(m Mount, tree int, dir bool, later []Mount, laterDirs []bool) error {
	src, dst := "/oldroot"+m.Path, "/newroot"+m.Path
	switch m.Access {
	case ReadOnly, ReadWrite:
		if tree < 0 {
			return bind(src, dst, dir, m.Access == ReadOnly)
		}
		defer unix.Close(tree)
		if err := makeMountpoint(dst, dir); err != nil {
			return err
		}
		if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mounting %s: %w", m.Path, err)
		}
		attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		if m.Access == ReadOnly {
			attr = roAttr
		}
		return setAttr(dst, attr, true)
	case Hidden:
		fi, err := os.Lstat(dst)
		if err != nil {
			return nil // not visible anyway
		}
		if !fi.IsDir() {
			return bind("/empty", dst, false, true)
		}
		if err := unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
			return fmt.Errorf("hiding %s: %w", m.Path, err)
		}
		for j, l := range later {
			if rel, ok := strings.CutPrefix(l.Path, m.Path+"/"); ok {
				if err := makeMountpoint(dst+"/"+rel, laterDirs[j]); err != nil {
					return err
				}
			}
		}
		return setAttr(dst, unix.MOUNT_ATTR_RDONLY, false)
	}
	return fmt.Errorf("mount %s: unknown access %v", m.Path, m.Access)
}

// tmpfsOpts are the options of a world-writable tmpfs. Its pages are memory,
// so it is capped like the memory of one process (tmpfs would default to
// half the machine's).
func tmpfsOpts(size int64) string {
	if size > 0 {
		return fmt.Sprintf("mode=1777,size=%d", size)
	}
	return "mode=1777"
}

// buildDev makes a /dev with the harmless device nodes only.
func buildDev(size int64) error {
	if err := mkMount("/newroot/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, n := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		src, dst := "/oldroot/dev/"+n, "/newroot/dev/"+n
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := makeMountpoint(dst, false); err != nil {
			return err
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mounting /dev/%s: %w", n, err)
		}
		if err := setAttr(dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, false); err != nil {
			return err
		}
	}
	links := [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}}
	for _, l := range links {
		if err := os.Symlink(l[0], "/newroot/dev/"+l[1]); err != nil {
			return err
		}
	}
	if err := mkMount("/newroot/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, tmpfsOpts(size)); err != nil {
		return err
	}
	return setAttr("/newroot/dev", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, false)
}

// Parts of /proc that reach beyond the sandbox: made read-only, or hidden.
var (
	procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}
	procHidden   = []string{"kcore", "keys", "key-users", "timer_list", "sched_debug", "latency_stats", "acpi", "scsi", "kmsg", "kallsyms", "config.gz"}
)

// buildProc mounts a /proc of the sandbox's own PID namespace.
func buildProc() error {
	if err := mkMount("/newroot/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	// No user namespaces inside: an `unshare -U` would give the command a
	// full set of capabilities over a copy of this tree to probe the kernel
	// with. The limit is per user namespace, so this is the sandbox's own.
	if err := os.WriteFile("/newroot/proc/sys/user/max_user_namespaces", []byte("0\n"), 0); err != nil {
		return fmt.Errorf("forbidding nested user namespaces: %w", err)
	}
	for _, p := range procReadOnly {
		dst := "/newroot/proc/" + p
		if _, err := os.Lstat(dst); err != nil {
			continue
		}
		if err := unix.Mount(dst, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding /proc/%s: %w", p, err)
		}
		if err := setAttr(dst, roAttr, true); err != nil {
			return fmt.Errorf("making /proc/%s read-only: %w", p, err)
		}
	}
	for _, p := range procHidden {
		dst := "/newroot/proc/" + p
		fi, err := os.Lstat(dst)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", dst, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0")
		} else {
			err = unix.Mount("/empty", dst, "", unix.MS_BIND, "")
			if err == nil {
				err = setAttr(dst, roAttr, false)
			}
		}
		if err != nil {
			return fmt.Errorf("hiding /proc/%s: %w", p, err)
		}
	}
	return nil
}

// loopbackUp brings up lo in the sandbox's own network namespace, so that a
// test server on 127.0.0.1 works while nothing outside is reachable.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// startCommand starts the command as the sandbox's only child, with none of
// the init's powers: this thread (the init's main thread, locked to the main
// goroutine during package initialisation, which is where the init runs)
// takes on PR_SET_NO_NEW_PRIVS, the Landlock domain and an empty capability
// set, and a child forked from it inherits them. Resource limits belong to a
// whole process, and the init's Go runtime must stay free to allocate, so
// the child is started traced: it stops right after execve, before running
// a single instruction of the command, gets its limits, and is let go.
//
// A command that cannot be executed returns the shell's exit code for it
// (127 not found, 126 otherwise) with the error.
func startCommand(c cmdSpec) (int, int, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, 0, fmt.Errorf("no_new_privs: %w", err)
	}
	if c.Landlock > 0 {
		if err := restrictLandlock(c.Landlock, c.Writable); err != nil {
			return 0, 0, fmt.Errorf("landlock: %w", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return 0, 0, fmt.Errorf("dropping capabilities: %w", err)
	}
	// A write past RLIMIT_FSIZE fails with EFBIG, which the writer reports,
	// instead of killing it (a shell's builtin echo would take the shell).
	signal.Ignore(syscall.SIGXFSZ)
	if err := hardenThread(!c.NoSeccomp); err != nil {
		return 0, 0, err
	}
	pid, err := syscall.ForkExec(c.Path, c.Args, &syscall.ProcAttr{
		Env:   c.Env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true, Ptrace: true},
	})
	if err != nil {
		code := 126
		if errors.Is(err, syscall.ENOENT) {
			code = 127
		}
		return 0, code, fmt.Errorf("%s: %w", c.Path, err)
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, unix.WALL, nil)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return 0, 0, fmt.Errorf("waiting for the command to start: %w", err)
			}
			break
		}
	}
	if !ws.Stopped() {
		return 0, 0, fmt.Errorf("the command did not stop at its start (%v)", ws)
	}
	limits := []struct {
		res int
		val int64
	}{{unix.RLIMIT_CORE, 0}, {unix.RLIMIT_AS, c.Memory}, {unix.RLIMIT_NPROC, int64(c.Processes)}, {unix.RLIMIT_FSIZE, fileSizeLimit(c.FileSize)}}
	for _, l := range limits {
		if l.val < 0 {
			continue
		}
		lim := unix.Rlimit{Cur: uint64(l.val), Max: uint64(l.val)}
		if err := unix.Prlimit(pid, l.res, &lim, nil); err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return 0, 0, fmt.Errorf("setting resource limit %d: %w", l.res, err)
		}
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return 0, 0, fmt.Errorf("releasing the command: %w", err)
	}
	return pid, 0, nil
}

// dropCapabilities leaves the calling thread, and what it execs, without
// any capability and without a way to regain them as uid 0.
func dropCapabilities() error {
	const secbits = 1<<0 | 1<<1 | 1<<2 | 1<<3 // NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP, NO_SETUID_FIXUP_LOCKED
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability of this kernel
			}
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}
