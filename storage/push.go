package storage

import "time"

// PushResult is how a push attempt went.
type PushResult string

const (
	PushOK       PushResult = "ok"
	PushRejected PushResult = "rejected" // the remote refused (non-fast-forward, protected branch, …)
	PushError    PushResult = "error"    // it could not be attempted or failed otherwise (auth, network)
)

// Push is one attempt to push a thread's branch.
type Push struct {
	ID       int64
	ThreadID int64
	Branch   string
	SHA      string
	Result   PushResult
	Detail   string // the short reason of a failure, free of credentials; who approved a push that waited for approval
	At       time.Time
}
