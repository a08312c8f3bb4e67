// Package sandbox runs the commands of an untrusted agent so that they see
// only what they are given: the thread's worktree (read-write), the system's
// programs and libraries (read-only), a private /tmp, and nothing else of the
// machine.
//
// # How
//
// Start re-executes the bot's own binary (/proc/self/exe) as a small init in
// new user, mount, PID, IPC, UTS and network namespaces (with
// Config.Network, the bot gives the last a user-mode network stack: see
// net_linux.go). Those and the init's own start are most of a command's
// start, so the bot keeps one such init started ahead (without the network),
// waiting for its next command, and starts the following one when a command ends: the command's
// spec, standard files and mounts reach the init only with the command.
// The init (pid 1 of its namespace) then builds a new root on a tmpfs from
// read-only binds of /usr, /bin, /lib…, a curated part of /etc, /dev nodes,
// a fresh /proc for the new PID namespace (with /proc/sys and friends
// read-only or masked), a tmpfs /tmp and the caller's Mounts at their host
// paths, then pivots into it, so nothing of the host's tree stays reachable.
// Then, on its main thread (locked to the main goroutine during package
// initialisation, which is where the init runs), it takes on
// PR_SET_NO_NEW_PRIVS, a Landlock domain (reads everywhere in the new root,
// writes only below writable mounts; signals and abstract unix sockets scoped
// to the sandbox), an empty capability set, a new empty session keyring and,
// last, a seccomp filter; it marks every descriptor above 2 close-on-exec and
// forks the command from that thread, which inherits all of it. Resource
// limits belong to a whole process and the init's Go runtime must stay free
// to allocate, so the command starts traced, stops right after execve, gets
// its limits and is let go before it runs one instruction. The init reaps everything and exits
// with the command; the kernel then kills every process left in the PID
// namespace, so a setsid, nohup or & child never outlives the call. The init
// dies with the bot (PR_SET_PDEATHSIG) and Kill kills it, and so the whole
// sandbox.
//
// A root bot's sandboxes run as an unprivileged uid (nobody): the bot clones
// the caller's mounts and idmaps them through the sandbox's user namespace,
// so the root-owned worktree is the sandbox root's own, while the kernel
// counts its processes against RLIMIT_NPROC (never enforced for uid 0) and
// nothing root-only of the system paths is readable. Where idmapped mounts
// are not available the sandbox's root is the bot's uid, without
// capabilities.
//
// # Contract
//
//   - The command's environment is exactly Spec.Env; the init gets nothing of
//     the bot's environment, so no secret reaches the sandbox.
//   - The sandbox cannot see the bot's process (a different PID namespace, and
//     the bot is not dumpable), nor signal or ptrace it, nor anything of the
//     host's file tree outside the mounts listed above.
//   - Inside, the command runs as uid 0 of its user namespace, with no
//     capabilities at all and no way to gain any (no new privileges, an empty
//     bounding set, SECBIT_NOROOT), and cannot make user namespaces.
//   - The command's only open files are its standard three: nothing the init
//     or the bot holds, even a descriptor the bot inherited without
//     close-on-exec. Its session keyring is new and empty; the bot's keys
//     are not possessed inside.
//   - A root bot's sandbox has no supplementary groups (host gid 0 would
//     open files only root's group may read). A bot that is not root keeps
//     its own: the kernel forbids setgroups in a user namespace whose
//     gid_map an unprivileged process wrote, so run such a bot as a user
//     without supplementary groups.
//   - A seccomp filter (amd64 and arm64) in the spirit of Docker's default
//     profile denies the key store (keyctl, add_key, request_key), io_uring
//     and clone3 (ENOSYS, so programs fall back), bpf, perf_event_open,
//     userfaultfd, kexec, mounts old and new (mount, umount2, pivot_root,
//     open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
//     mount_setattr), unshare, setns and clone with namespace flags, kernel
//     modules, swap, reboot, acct, setting the clock, open_by_handle_at and
//     personality changes other than Docker's few (ADDR_NO_RANDOMIZE
//     fails). Calls of another ABI (32-bit compat, x32) kill the process.
//     ptrace is left alone: the PID namespace shows nothing but the
//     sandbox's processes and the init is not dumpable, so strace and gdb
//     work on what the command starts and on nothing else.
//   - Memory (RLIMIT_AS, per process) and processes (RLIMIT_NPROC, counted in
//     the sandbox's own user namespace) are limited; a fork bomb or a memory
//     hog fails inside and the bot is not affected. There is no limit on the
//     sum of a sandbox's processes (no cgroup): should many of them fill the
//     machine, the kernel's out-of-memory killer takes them first (their
//     oom_score_adj is 1000; nothing inside can lower it under a root bot,
//     which makes 1000 the floor, or under Landlock, which keeps /proc
//     read-only: a bot that is neither leaves it to the command).
//   - ModeNone runs the command directly in its own process group, with the
//     same environment and kill semantics as far as a process group allows
//     (a child that calls setsid escapes); it exists for machines without
//     namespaces and must be chosen explicitly.
//
// Any binary that imports this package can be the sandbox's init: the package
// initialiser recognises the role by argv[0] and pid 1 and never returns in
// it. Tests of packages that import it therefore sandbox for real.
package sandbox
