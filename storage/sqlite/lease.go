package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// AcquireLease implements storage.Store.
func (db *DB) AcquireLease(ctx context.Context, threadID int64, owner string, ttl time.Duration) (storage.Lease, bool, error) {
	if err := backend.CheckLease(owner, ttl); err != nil {
		return storage.Lease{}, false, opError("acquire lease", err)
	}
	var l storage.Lease
	var ok bool
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := db.nowMS()
		var expires int64
		err := tx.QueryRowContext(ctx, `INSERT INTO thread_leases (thread_id, owner, fence, expires_at) VALUES (?1, ?2, 1, ?3)
			ON CONFLICT (thread_id) DO UPDATE SET
				fence = CASE WHEN thread_leases.owner = excluded.owner AND thread_leases.expires_at > ?4
					THEN thread_leases.fence ELSE thread_leases.fence + 1 END,
				owner = excluded.owner, expires_at = excluded.expires_at
			WHERE thread_leases.expires_at <= ?4 OR thread_leases.owner = excluded.owner
			RETURNING owner, fence, expires_at`, threadID, owner, now+ttl.Milliseconds(), now).Scan(&l.Owner, &l.Fence, &expires)
		ok = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			err = tx.QueryRowContext(ctx, `SELECT owner, fence, expires_at FROM thread_leases WHERE thread_id = ?`, threadID).
				Scan(&l.Owner, &l.Fence, &expires)
		}
		if isExtCode(err, codeForeignKey) {
			return fmt.Errorf("thread %d: %w", threadID, storage.ErrNotFound)
		}
		l.ThreadID, l.Expires = threadID, fromMS(expires)
		return err
	})
	if err != nil {
		return storage.Lease{}, false, opError("acquire lease", err)
	}
	return l, ok, nil
}

// RenewLease implements storage.Store.
func (db *DB) RenewLease(ctx context.Context, l storage.Lease, ttl time.Duration) (storage.Lease, error) {
	if err := backend.CheckLease(l.Owner, ttl); err != nil {
		return storage.Lease{}, opError("renew lease", err)
	}
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		expires := db.nowMS() + ttl.Milliseconds()
		l.Expires = fromMS(expires)
		return setLeaseExpiry(ctx, tx, l, expires)
	})
	if err != nil {
		return storage.Lease{}, opError("renew lease", err)
	}
	return l, nil
}

// ReleaseLease implements storage.Store.
func (db *DB) ReleaseLease(ctx context.Context, l storage.Lease) error {
	return opError("release lease", db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return setLeaseExpiry(ctx, tx, l, 0)
	}))
}

// setLeaseExpiry moves the expiry of l, if it is still the thread's lease;
// otherwise it is a *FencedError.
func setLeaseExpiry(ctx context.Context, tx *sql.Tx, l storage.Lease, expires int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE thread_leases SET expires_at = ? WHERE thread_id = ? AND owner = ? AND fence = ?`,
		expires, l.ThreadID, l.Owner, l.Fence)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	var cur int64
	err = tx.QueryRowContext(ctx, `SELECT fence FROM thread_leases WHERE thread_id = ?`, l.ThreadID).Scan(&cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return &storage.FencedError{ThreadID: l.ThreadID, Fence: l.Fence, Current: cur}
}

// checkFence refuses, in the write's transaction, a write to threadID made
// under a lease the thread no longer has (see WithLease).
func checkFence(ctx context.Context, tx *sql.Tx, threadID int64) error {
	l, ok := storage.LeaseFrom(ctx)
	if !ok {
		return nil
	}
	var owner string
	var cur int64
	err := tx.QueryRowContext(ctx, `SELECT owner, fence FROM thread_leases WHERE thread_id = ?`, threadID).Scan(&owner, &cur)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return stale(l, threadID, owner, cur)
}

// stale is the *FencedError of a write under l to threadID, whose lease is
// owner's with fence cur, or nil if l is that lease.
func stale(l storage.Lease, threadID int64, owner string, cur int64) error {
	if l.ThreadID != threadID || owner != l.Owner || cur != l.Fence {
		return &storage.FencedError{ThreadID: threadID, Fence: l.Fence, Current: cur}
	}
	return nil
}

// checkFenceOf is checkFence for a write known by a row of table (sessions,
// runs, outbound) whose thread_id says the thread. The row's thread and its
// lease are read together, one statement for every write under a lease;
// without a lease row the two are read apart to say which is missing.
func checkFenceOf(ctx context.Context, tx *sql.Tx, table string, id any) error {
	l, ok := storage.LeaseFrom(ctx)
	if !ok {
		return nil
	}
	var threadID, cur int64
	var owner string
	err := tx.QueryRowContext(ctx, `SELECT x.thread_id, l.owner, l.fence FROM `+table+` x
		JOIN thread_leases l ON l.thread_id = x.thread_id WHERE x.id = ?`, id).Scan(&threadID, &owner, &cur)
	if err == nil {
		return stale(l, threadID, owner, cur)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	err = tx.QueryRowContext(ctx, `SELECT thread_id FROM `+table+` WHERE id = ?`, id).Scan(&threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the write itself reports the missing row
	}
	if err != nil {
		return err
	}
	return checkFence(ctx, tx, threadID)
}

// UnownedThreads implements storage.Store.
func (db *DB) UnownedThreads(ctx context.Context) ([]int64, error) {
	rows, err := db.r.QueryContext(ctx, backend.UnownedThreadsQuery("$1"), db.nowMS())
	if err != nil {
		return nil, opError("unowned threads", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, opError("unowned threads", err)
		}
		ids = append(ids, id)
	}
	return ids, opError("unowned threads", rows.Err())
}
