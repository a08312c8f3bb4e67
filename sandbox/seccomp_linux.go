//go:build amd64 || arm64

package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompAvailable says this build installs the seccomp filter.
const seccompAvailable = true

// Offsets in the kernel's struct seccomp_data (native byte order; on both
// supported architectures the low 32 bits of an argument come first).
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArg0 = 16
)

// Actions of the filter.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	// ENOSYS is what a kernel without the call answers: programs that
	// probe for it (io_uring, clone3) fall back to what they did before.
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// deniedSyscalls are the system calls no sandboxed command may make, in the
// spirit of Docker's default profile: the kernel's key store (shared with
// the bot: its session keyring and the user's keyrings), the large kernel
// attack surfaces nothing in a coding sandbox needs (io_uring, bpf,
// perf_event_open, userfaultfd), and everything that administers the
// machine or changes the sandbox's own shape (mounts, namespaces, modules,
// kexec, swap, reboot, accounting, the clock). Most of these already fail
// for want of a capability; the filter keeps them out of reach of a kernel
// bug in their permission checks.
func deniedSyscalls() []struct {
	nr  uint32
	ret uint32
} {
	type rule = struct {
		nr  uint32
		ret uint32
	}
	rules := []rule{
		{unix.SYS_IO_URING_SETUP, retENOSYS},
		{unix.SYS_IO_URING_ENTER, retENOSYS},
		{unix.SYS_IO_URING_REGISTER, retENOSYS},
		// clone3 passes its flags in memory, where the filter cannot
		// check them for new namespaces; C libraries fall back to clone.
		{unix.SYS_CLONE3, retENOSYS},
	}
	for _, nr := range []uint32{
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
		unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
		unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT,
		unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
		unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
		unix.SYS_UNSHARE, unix.SYS_SETNS,
		unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
		unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT,
		unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME,
		unix.SYS_OPEN_BY_HANDLE_AT,
	} {
		rules = append(rules, rule{nr, retEPERM})
	}
	return rules
}

// cloneNamespaceFlags are clone's flags that make new namespaces.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// allowedPersonalities are the personality(2) arguments a command may pass,
// as in Docker's profile: the query, Linux, 32-bit Linux and the 2.6-style
// uname, without and with the 32-bit flag. Everything else (above all
// ADDR_NO_RANDOMIZE, which turns off address space randomisation) fails.
var allowedPersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// seccompFilter is the filter's program. System calls of another
// architecture than the bot's own (32-bit compat calls, and the x32 ABI on
// amd64) kill the process: the rules below name native calls only. ptrace
// is not filtered: a command can only trace processes of its own sandbox
// (its PID namespace shows nothing else, and the init is not dumpable), so
// strace and gdb work on what the command starts.
func seccompFilter() []bpf.Instruction {
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: seccompNr, Size: 4},
	}
	if foreignNrBit != 0 {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: foreignNrBit, SkipFalse: 1},
			bpf.RetConstant{Val: retKill})
	}
	for _, r := range deniedSyscalls() {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.nr, SkipFalse: 1},
			bpf.RetConstant{Val: r.ret})
	}
	// clone with a namespace flag: EPERM.
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipFalse: 4},
		bpf.LoadAbsolute{Off: seccompArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNamespaceFlags, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	)
	// personality with anything but the allowed values: EPERM.
	n := len(allowedPersonalities)
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_PERSONALITY, SkipFalse: uint8(n + 3)},
		bpf.LoadAbsolute{Off: seccompArg0, Size: 4})
	for i, v := range allowedPersonalities {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - i)})
	}
	return append(p,
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
		bpf.RetConstant{Val: retAllow},
	)
}

// installSeccomp puts the calling thread under the filter; what it forks
// and executes inherits it, and nothing can remove it. The thread must
// have no_new_privs already.
func installSeccomp() error {
	raw, err := bpf.Assemble(seccompFilter())
	if err != nil {
		return fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// No SECCOMP_FILTER_FLAG_TSYNC: the filter is for this thread (the one
	// the command is forked from), not for the init's other threads.
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("installing the seccomp filter: %w", errno)
	}
	return nil
}
