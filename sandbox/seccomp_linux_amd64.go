package sandbox

import "golang.org/x/sys/unix"

// auditArch is the architecture of the bot's own system calls, as seccomp
// reports it.
const auditArch = unix.AUDIT_ARCH_X86_64

// foreignNrBit marks the calls of the x32 ABI, which share the arch of
// native calls.
const foreignNrBit = 0x40000000
