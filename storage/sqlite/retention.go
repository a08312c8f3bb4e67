package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// expiredWhere is backend.ExpiredWhere and one more condition: the thread
// with the largest id is never expired, since SQLite gives a new row the
// largest id plus one, and a deleted largest id would come back as another
// thread's.
var expiredWhere = backend.ExpiredWhere("$2") + `AND t.id < (SELECT max(id) FROM threads) `

// ExpiredThreads implements storage.RetentionStore.
func (db *DB) ExpiredThreads(ctx context.Context, cutoff time.Time, limit int) ([]storage.Thread, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+threadColumns+threadFrom+`WHERE`+expiredWhere+
		`ORDER BY t.active_at, t.id LIMIT ?3`, ms(cutoff), db.nowMS(), limit)
	if err != nil {
		return nil, opError("expired threads", err)
	}
	defer rows.Close()
	var out []storage.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, opError("expired threads", err)
		}
		out = append(out, t)
	}
	return out, opError("expired threads", rows.Err())
}

// DeleteThread implements storage.RetentionStore. The writer runs one
// transaction at a time, so the check and the deletion see the same thread.
func (db *DB) DeleteThread(ctx context.Context, threadID int64, cutoff time.Time) (bool, error) {
	var deleted bool
	var gone []string
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deleted, gone = false, nil
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM threads t WHERE t.id = ?3 AND`+expiredWhere,
			ms(cutoff), db.nowMS(), threadID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		uids, err := sessionUIDs(ctx, tx, threadID)
		if err != nil {
			return err
		}
		gone = uids
		for _, q := range backend.DeleteThreadStatements {
			if _, err := tx.ExecContext(ctx, q, threadID); err != nil {
				return err
			}
		}
		deleted = true
		return nil
	})
	if err == nil {
		// The deleted sessions' ids resolve no more.
		for _, uid := range gone {
			db.sessionIDs.Delete(uid)
		}
	}
	return deleted, opError("delete thread", err)
}

// sessionUIDs returns the public ids of the thread's sessions.
func sessionUIDs(ctx context.Context, tx *sql.Tx, threadID int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT uid FROM sessions WHERE thread_id = ?`, threadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		out = append(out, uid)
	}
	return out, rows.Err()
}

// TryRetentionLock implements storage.RetentionStore. One process opens a
// SQLite file (the data_dir lock), so the lock is this DB's own.
func (db *DB) TryRetentionLock(ctx context.Context) (func(), bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if !db.retentionMu.TryLock() {
		return nil, false, nil
	}
	var once sync.Once
	return func() { once.Do(db.retentionMu.Unlock) }, true, nil
}
