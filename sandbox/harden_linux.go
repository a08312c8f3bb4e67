package sandbox

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// hardenThread is the last step before the command is forked from the
// init's main thread, which by then has no_new_privs, its Landlock domain
// and no capabilities. It gives the thread a keyring of its own, keeps the
// init's descriptors from the command, and, when filter is set, installs the
// seccomp filter: last, since it denies the keyring call.
func hardenThread(filter bool) error {
	if err := joinSessionKeyring(); err != nil {
		return err
	}
	if err := closeOnExecAbove2(); err != nil {
		return err
	}
	if filter {
		return installSeccomp()
	}
	return nil
}

// joinSessionKeyring replaces the session keyring the init inherited from
// the bot (where the bot's keys, and its login's, are possessed) with a
// new, empty, anonymous one, for this thread and what it forks.
func joinSessionKeyring() error {
	_, _, errno := unix.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if errno != 0 {
		return fmt.Errorf("joining a new session keyring: %w", errno)
	}
	return nil
}

// closeOnExecAbove2 marks every descriptor above 2 close-on-exec, so the
// command gets its standard files and nothing else: not the init's own,
// nor any the bot inherited without close-on-exec and passed on.
func closeOnExecAbove2() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return err
	}
	// Kernels before 5.11: one by one, from this process's /proc.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// receiveStdio puts the standard files the bot hands over on fd 5 in place
// (which lists them); the init was started with /dev/null for all three.
func receiveStdio(which []int) error {
	if len(which) == 0 {
		return nil
	}
	buf, oob := make([]byte, 16), make([]byte, unix.CmsgSpace(4*len(which)))
	_, oobn, _, _, err := unix.Recvmsg(5, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return err
	}
	cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(cmsgs) != 1 {
		return fmt.Errorf("no files came")
	}
	fds, err := unix.ParseUnixRights(&cmsgs[0])
	if err != nil || len(fds) != len(which) {
		return fmt.Errorf("%d files came for %d", len(fds), len(which))
	}
	for i, to := range which {
		if to < 0 || to > 2 {
			return fmt.Errorf("%d is not a standard file", to)
		}
		if err := unix.Dup3(fds[i], to, 0); err != nil {
			return err
		}
		unix.Close(fds[i])
	}
	return nil
}
