package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

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
	Detail   string // the short reason of a failure, free of credentials
	At       time.Time
}

// RecordPush stores a push attempt and returns its id.
func (db *DB) RecordPush(ctx context.Context, p Push) (int64, error) {
	switch p.Result {
	case PushOK, PushRejected, PushError:
	default:
		return 0, opError("record push", fmt.Errorf("unknown result %q", p.Result))
	}
	if p.Branch == "" {
		return 0, opError("record push", fmt.Errorf("empty branch"))
	}
	var id int64
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO pushes (thread_id, branch, sha, result, detail, pushed_at)
			VALUES (?, ?, ?, ?, ?, ?) RETURNING id`, p.ThreadID, p.Branch, p.SHA, p.Result, p.Detail, db.nowMS()).Scan(&id)
	})
	if isExtCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d: %w", p.ThreadID, ErrNotFound)
	}
	if err != nil {
		return 0, opError("record push", err)
	}
	if db.hooks.PushRecorded != nil {
		db.hooks.PushRecorded(p.Result)
	}
	return id, nil
}

// LastPush returns the thread's most recent push attempt, or ErrNotFound.
func (db *DB) LastPush(ctx context.Context, threadID int64) (Push, error) {
	var p Push
	var at int64
	err := db.r.QueryRowContext(ctx, `SELECT id, thread_id, branch, sha, result, detail, pushed_at FROM pushes
		WHERE thread_id = ? ORDER BY id DESC LIMIT 1`, threadID).
		Scan(&p.ID, &p.ThreadID, &p.Branch, &p.SHA, &p.Result, &p.Detail, &at)
	if err != nil {
		return Push{}, lookupError("last push", err)
	}
	p.At = fromMS(at)
	return p, nil
}
