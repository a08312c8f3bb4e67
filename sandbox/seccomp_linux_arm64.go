package sandbox

import "golang.org/x/sys/unix"

// auditArch is the architecture of the bot's own system calls, as seccomp
// reports it.
const auditArch = unix.AUDIT_ARCH_AARCH64

// foreignNrBit: arm64 has no second ABI under the same arch.
const foreignNrBit = 0
