package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
)

// RecordPush implements storage.Store.
func (db *DB) RecordPush(ctx context.Context, p storage.Push) (int64, error) {
	switch p.Result {
	case storage.PushOK, storage.PushRejected, storage.PushError:
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
		err = fmt.Errorf("thread %d: %w", p.ThreadID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError("record push", err)
	}
	if db.hooks.PushRecorded != nil {
		db.hooks.PushRecorded(p.Result)
	}
	return id, nil
}

// LastPush implements storage.Store.
func (db *DB) LastPush(ctx context.Context, threadID int64) (storage.Push, error) {
	var p storage.Push
	var at int64
	err := db.r.QueryRowContext(ctx, `SELECT id, thread_id, branch, sha, result, detail, pushed_at FROM pushes
		WHERE thread_id = ? ORDER BY id DESC LIMIT 1`, threadID).
		Scan(&p.ID, &p.ThreadID, &p.Branch, &p.SHA, &p.Result, &p.Detail, &at)
	if err != nil {
		return storage.Push{}, lookupError("last push", err)
	}
	p.At = fromMS(at)
	return p, nil
}
