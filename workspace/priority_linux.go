package workspace

import (
	"os/exec"
	"runtime"
	"syscall"
)

// gitNiceIncrement is how much lower than the bot's own CPU priority its git
// processes run (nice +10, at most 19). Checkouts, fetches and pushes are
// background work next to the bot's own goroutines: a burst of new threads
// starts many git processes, and at equal priority they take the CPU that
// acknowledging the burst's messages needs (Slack retries an event that is
// not acknowledged within 3 s).
const gitNiceIncrement = 10

// startLowPriority starts cmd at a lower CPU priority than the bot's. On
// Linux, priority belongs to the thread and a child inherits its parent
// thread's at fork: cmd is started from an OS thread locked to a goroutine
// of its own whose priority was lowered first, so git runs at the lower
// priority from its first instruction, and so does every helper it starts.
// The goroutine exits without unlocking, which ends the thread: no other
// goroutine of the bot ever runs on it. If the priority cannot be changed,
// cmd starts at the bot's.
func startLowPriority(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: see above.
		lowerThreadPriority(gitNiceIncrement)
		errc <- cmd.Start()
	}()
	return <-errc
}

// lowerThreadPriority raises the calling thread's nice value by inc (capped
// at 19). Lowering priority needs no privilege; errors are ignored, as the
// thread then keeps the bot's priority.
func lowerThreadPriority(inc int) {
	tid := syscall.Gettid()
	// The raw getpriority system call returns 20 - nice.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return
	}
	nice := min(20-raw+inc, 19)
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice)
}
