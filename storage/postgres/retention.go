package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// expiredWhere is backend.ExpiredWhere with its leases judged by the
// server's clock ($2: shiftMS), as every lease is (lease.go).
var expiredWhere = backend.ExpiredWhere(serverMS("$2"))

// ExpiredThreads implements storage.RetentionStore.
func (db *DB) ExpiredThreads(ctx context.Context, cutoff time.Time, limit int) ([]storage.Thread, error) {
	if limit <= 0 {
		return nil, nil
	}
	return queryAll(ctx, db, "expired threads", scanThread, `SELECT `+threadColumns+threadFrom+`WHERE`+expiredWhere+
		`ORDER BY t.active_at, t.id LIMIT $3`, cutoff.UnixMilli(), db.shiftMS(), limit)
}

// DeleteThread implements storage.RetentionStore. The thread's row is locked
// (FOR UPDATE) before the check: input accepted in it meanwhile (which
// updates the row, and whose foreign key locks it) waits for the deletion,
// and then finds no thread, instead of being deleted unseen.
func (db *DB) DeleteThread(ctx context.Context, threadID int64, cutoff time.Time) (bool, error) {
	var deleted bool
	var gone []string
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		deleted, gone = false, nil
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM threads WHERE id = $1 FOR UPDATE`, threadID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM threads t WHERE t.id = $3 AND`+expiredWhere,
			cutoff.UnixMilli(), db.shiftMS(), threadID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT uid FROM sessions WHERE thread_id = $1`, threadID)
		if err != nil {
			return err
		}
		uids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		gone = uids
		for _, q := range backend.DeleteThreadStatements {
			if _, err := tx.Exec(ctx, q, threadID); err != nil {
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

// retentionLockKey is the first half of the retention sweep's advisory lock
// key; the second is the hash of the schema, so that deployments sharing a
// database in different schemas do not wait for each other.
const retentionLockKey int32 = 0x74736d72

// TryRetentionLock implements storage.RetentionStore with a session advisory
// lock on a connection of its own, held until release (or until the
// connection dies, when PostgreSQL drops the lock).
func (db *DB) TryRetentionLock(ctx context.Context) (func(), bool, error) {
	if db.closed.Load() {
		return nil, false, opError("retention lock", storage.ErrClosed)
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, false, opError("retention lock", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, retentionLockKey).Scan(&ok); err != nil || !ok {
		conn.Release()
		return nil, false, opError("retention lock", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, retentionLockKey); err != nil {
				// The lock must not outlive its holder on a pooled connection.
				_ = conn.Conn().Close(ctx)
			}
			conn.Release()
		})
	}, true, nil
}
