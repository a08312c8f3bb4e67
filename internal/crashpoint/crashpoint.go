// Package crashpoint lets the kill -9 tests cut the real binary at a named
// point between two durable steps of a run (accept, deliver, commit, push,
// …), deterministically instead of at a random moment.
//
// THREADSMITH_CRASH_AT names the point; the first time the process reaches
// it, it kills itself with SIGKILL: no deferred function, no flush, no
// shutdown runs, as with a power cut or the OOM killer. Without the variable
// (always, outside those tests) Hit costs one comparison.
package crashpoint

import (
	"os"
	"syscall"
)

// EnvVar names the point at which the process kills itself.
const EnvVar = "THREADSMITH_CRASH_AT"

var at = os.Getenv(EnvVar)

// The points, in the order a run reaches them.
const (
	Accepted  = "accepted"  // the inbound message is committed, nothing else happened
	Delivered = "delivered" // the user message is appended and its input delivered, before the model call
	Answered  = "answered"  // the run's answer is stored, not handed to the platform yet
	Posted    = "posted"    // the platform accepted the answer, not recorded yet
	Committed = "committed" // the run's changes are committed, not pushed
	Pushed    = "pushed"    // the push reached the remote, not recorded yet
	Compacted = "compacted" // a compaction entry is stored, the live context not rebuilt yet
	Opened    = "opened"    // a thread the bot opens itself is posted, its thread not recorded yet
)

// Hit kills the process if name is the configured point.
func Hit(name string) {
	if at == "" || at != name {
		return
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
