package bridge

// A thread's inbox: the one queue through which everything reaches the
// thread's owner — accepted input, the session's events, a run's end or
// timeout, a run slot handed over, a push or background command done,
// shutdown, timers. Producers on any goroutine post typed messages; the
// owner handles them one at a time, in order, on the queue's goroutine
// (internal/execqueue), which exists only while there is work. thread.go's
// handle is the one dispatch.

import (
	"context"
	"fmt"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/storage"
)

// message is anything posted to a thread's owner: one of the types below.
type message any

// The messages, each handled by a method of the file that owns its state.
type (
	// msgStart is an owner's first message: it takes the thread (thread.go).
	msgStart struct{}
	// msgInput is accepted input (thread_input.go).
	msgInput struct{ pi *pendingInput }
	// msgEvent is an event of session sess, in the order the session
	// emitted it (session.go).
	msgEvent struct {
		sess *agent.Session
		ev   agent.Event
	}
	// msgRunEnded: run r's session went idle, its events posted before
	// (thread_run.go); or a shutdown stopped r and it did not end within
	// runWindDown.
	msgRunEnded struct{ r *activeRun }
	// msgRunTimeout: run r reached the run timeout (thread_run.go).
	msgRunTimeout struct{ r *activeRun }
	// msgStatusTick: re-send the working indicator of run r (thread_run.go).
	msgStatusTick struct{ r *activeRun }
	// msgSlotGranted: a run slot was handed to the thread (thread_slots.go).
	msgSlotGranted struct{}
	// msgPushDone: a push finished (push.go).
	msgPushDone struct{ job *pushJob }
	// msgPushRetry: time to push kept commits the remote did not take (push.go).
	msgPushRetry struct{}
	// msgCommandDone: a command's work off the owner finished (thread.go);
	// say is what the thread is told ("" for nothing), pr the result of
	// !pr's sync, diff !diff's, if it was one of those.
	msgCommandDone struct {
		say  string
		pr   *prResult
		diff *diffResult
	}
	// msgReset: start a new conversation, after the !reset that asked for
	// it returned from the session (commands.go).
	msgReset struct{ ctx context.Context }
	// msgResume: push the work of run r the previous process left (push.go).
	msgResume struct{ r storage.Run }
	// msgToolsChanged: an MCP server's tools changed (mcp.go).
	msgToolsChanged struct{}
	// msgMCPDown: an MCP server was given up (mcp.go).
	msgMCPDown struct {
		server string
		err    error
	}
	// msgLeaseLost: lease l of the thread was refused or ran out: another
	// replica has the thread, and it ends (lease.go).
	msgLeaseLost struct{ l *storage.Lease }
	// msgInputNews: news number n that the thread has stored input the
	// owner may not have taken (Bridge.nudge, lease.go).
	msgInputNews struct{ n int64 }
	// msgHook: a session hook, off the owner, asks for what it needs of
	// the thread (session.go).
	msgHook struct{ reply chan<- hookState }
	// msgMenuPosted: the platform took the repository menu as message id
	// (repopick.go).
	msgMenuPosted struct{ id, text string }
	// msgModelBack: the model answers again (thread_modelwait.go).
	msgModelBack struct{}
	// msgAwaitStored: run r recorded that its input waits for the model,
	// before a restart or on another replica (thread_modelwait.go).
	msgAwaitStored struct{ r storage.Run }
	// msgSay: a notice for the thread from off the owner (thread_render.go).
	msgSay struct{ text string }
	// msgRerender: the render view asked to come back for (thread_render.go).
	msgRerender struct{ n uint64 }
	// msgIdleTick: time to look whether the thread may be evicted (thread.go).
	msgIdleTick struct{}
	// msgStop: shut down; the active run may go on until ctx ends (thread.go).
	msgStop struct{ ctx context.Context }
	// msgStopDeadline: the shutdown's deadline passed (thread.go).
	msgStopDeadline struct{}
)

// post hands m to the owner. It reports whether m was taken: an owner that
// ended takes nothing.
func (t *thread) post(m message) bool { return t.inbox.Add(m) }

// requeueFront puts inputs back at the front of the inbox, in order. Only the
// owner calls it.
func (t *thread) requeueFront(ins []*pendingInput) {
	if len(ins) == 0 {
		return
	}
	ms := make([]message, len(ins))
	for i, pi := range ins {
		ms[i] = msgInput{pi}
	}
	t.inbox.AddFront(ms...)
}

// messageName names a message in the inbox's panic log line.
func messageName(m message) string { return fmt.Sprintf("%T", m) }
