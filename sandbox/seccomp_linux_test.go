//go:build amd64 || arm64

package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter runs the seccomp program on one call in the bpf package's VM,
// which reads big-endian: the data is laid out for it, not for the kernel.
func runFilter(t *testing.T, vm *bpf.VM, arch, nr, arg0 uint32) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[seccompNr:], nr)
	binary.BigEndian.PutUint32(data[seccompArch:], arch)
	binary.BigEndian.PutUint32(data[seccompArg0:], arg0)
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

// TestSeccompFilterProgram checks every rule of the filter against the
// list of what must be denied, and that ordinary calls pass.
func TestSeccompFilterProgram(t *testing.T) {
	prog := seccompFilter()
	if len(prog) > 255 {
		t.Fatalf("the filter has %d instructions; its jumps assume fewer than 256", len(prog))
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	eperm := map[string]uint32{
		"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
		"bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN, "userfaultfd": unix.SYS_USERFAULTFD,
		"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
		"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT,
		"open_tree": unix.SYS_OPEN_TREE, "move_mount": unix.SYS_MOVE_MOUNT, "fsopen": unix.SYS_FSOPEN,
		"fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK,
		"mount_setattr": unix.SYS_MOUNT_SETATTR, "unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS,
		"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
		"swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT, "acct": unix.SYS_ACCT,
		"settimeofday": unix.SYS_SETTIMEOFDAY, "clock_settime": unix.SYS_CLOCK_SETTIME,
		"clock_adjtime": unix.SYS_CLOCK_ADJTIME, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
	}
	enosys := map[string]uint32{
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
		"io_uring_register": unix.SYS_IO_URING_REGISTER, "clone3": unix.SYS_CLONE3,
	}
	allowed := map[string]uint32{
		"read": unix.SYS_READ, "write": unix.SYS_WRITE, "openat": unix.SYS_OPENAT, "execve": unix.SYS_EXECVE,
		"ptrace": unix.SYS_PTRACE, "wait4": unix.SYS_WAIT4, "mmap": unix.SYS_MMAP, "getpid": unix.SYS_GETPID,
	}
	for want, calls := range map[uint32]map[string]uint32{retEPERM: eperm, retENOSYS: enosys, retAllow: allowed} {
		for name, nr := range calls {
			if got := runFilter(t, vm, auditArch, nr, 0); got != want {
				t.Errorf("%s: filter returns %#x, want %#x", name, got, want)
			}
		}
	}

	// Arguments: clone that makes namespaces, personality that turns off
	// address space randomisation.
	for _, c := range []struct {
		name     string
		nr, arg0 uint32
		want     uint32
	}{
		{"clone for a thread", unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD, retAllow},
		{"clone for fork", unix.SYS_CLONE, uint32(unix.SIGCHLD), retAllow},
		{"clone with CLONE_NEWUSER", unix.SYS_CLONE, unix.CLONE_NEWUSER | uint32(unix.SIGCHLD), retEPERM},
		{"clone with CLONE_NEWNS", unix.SYS_CLONE, unix.CLONE_NEWNS, retEPERM},
		{"clone with CLONE_NEWNET", unix.SYS_CLONE, unix.CLONE_NEWNET, retEPERM},
		{"personality query", unix.SYS_PERSONALITY, 0xffffffff, retAllow},
		{"personality linux", unix.SYS_PERSONALITY, 0, retAllow},
		{"personality linux32", unix.SYS_PERSONALITY, 8, retAllow},
		{"personality ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, 0x0040000, retEPERM},
		{"personality READ_IMPLIES_EXEC", unix.SYS_PERSONALITY, 0x0400000, retEPERM},
	} {
		if got := runFilter(t, vm, auditArch, c.nr, c.arg0); got != c.want {
			t.Errorf("%s: filter returns %#x, want %#x", c.name, got, c.want)
		}
	}

	// Calls of another architecture (a 32-bit program's) and of the x32
	// ABI are killed, whatever their number.
	for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64} {
		if arch == auditArch {
			continue
		}
		for _, nr := range []uint32{0, 3, 20, unix.SYS_GETPID} {
			if got := runFilter(t, vm, arch, nr, 0); got != retKill {
				t.Errorf("arch %#x call %d: filter returns %#x, want the process killed", arch, nr, got)
			}
		}
	}
	if auditArch == unix.AUDIT_ARCH_X86_64 {
		if got := runFilter(t, vm, auditArch, 0x40000000|unix.SYS_GETPID, 0); got != retKill {
			t.Errorf("an x32 call: filter returns %#x, want the process killed", got)
		}
	}
}
