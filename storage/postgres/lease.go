package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// Thread leases (storage.LeaseStore). Lease times are the server's clock
// (serverMS), never a replica's: every replica judges every lease by the
// same clock, so a replica whose clock is minutes off, or steps, neither
// takes a live lease nor holds its own past its TTL. A write under a lease
// (storage.WithLease) checks the fence in its own transaction with the lease
// row locked FOR SHARE, so a new acquisition waits for it: the write lands
// before the takeover, or is refused after it.

// AcquireLease implements storage.LeaseStore.
func (db *DB) AcquireLease(ctx context.Context, threadID int64, owner string, ttl time.Duration) (storage.Lease, bool, error) {
	if err := backend.CheckLease(owner, ttl); err != nil {
		return storage.Lease{}, false, opError("acquire lease", err)
	}
	var l storage.Lease
	var ok bool
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// A lease row locked by a stuck session (see Open) is not worth
		// waiting for: the claim fails, and the next poll tries again.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
			return err
		}
		var expires int64
		now := serverMS("$4")
		err := tx.QueryRow(ctx, `INSERT INTO thread_leases AS l (thread_id, owner, fence, expires_at) VALUES ($1, $2, 1, `+now+` + $3::bigint)
			ON CONFLICT (thread_id) DO UPDATE SET
				fence = CASE WHEN l.owner = excluded.owner AND l.expires_at > `+now+` THEN l.fence ELSE l.fence + 1 END,
				owner = excluded.owner, expires_at = excluded.expires_at
			WHERE l.expires_at <= `+now+` OR l.owner = excluded.owner
			RETURNING owner, fence, expires_at`, threadID, owner, ttl.Milliseconds(), db.shiftMS()).Scan(&l.Owner, &l.Fence, &expires)
		ok = err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT owner, fence, expires_at FROM thread_leases WHERE thread_id = $1`, threadID).
				Scan(&l.Owner, &l.Fence, &expires)
		}
		if isCode(err, codeForeignKey) {
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

// RenewLease implements storage.LeaseStore.
func (db *DB) RenewLease(ctx context.Context, l storage.Lease, ttl time.Duration) (storage.Lease, error) {
	if err := backend.CheckLease(l.Owner, ttl); err != nil {
		return storage.Lease{}, opError("renew lease", err)
	}
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		expires, err := setLeaseExpiry(ctx, tx, l, serverMS("$4")+" + $5::bigint", db.shiftMS(), ttl.Milliseconds())
		l.Expires = fromMS(expires)
		return err
	})
	if err != nil {
		return storage.Lease{}, opError("renew lease", err)
	}
	return l, nil
}

// ReleaseLease implements storage.LeaseStore.
func (db *DB) ReleaseLease(ctx context.Context, l storage.Lease) error {
	return opError("release lease", db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := setLeaseExpiry(ctx, tx, l, "0")
		return err
	}))
}

// setLeaseExpiry sets the expiry of l to the SQL expression expires (its
// parameters from $4 on: args), if l is still the thread's lease, and
// returns it; otherwise it is a *storage.FencedError.
func setLeaseExpiry(ctx context.Context, tx pgx.Tx, l storage.Lease, expires string, args ...any) (int64, error) {
	var at int64
	err := tx.QueryRow(ctx, `UPDATE thread_leases SET expires_at = `+expires+` WHERE thread_id = $1 AND owner = $2 AND fence = $3
		RETURNING expires_at`, append([]any{l.ThreadID, l.Owner, l.Fence}, args...)...).Scan(&at)
	if !errors.Is(err, pgx.ErrNoRows) {
		return at, err
	}
	var cur int64
	err = tx.QueryRow(ctx, `SELECT fence FROM thread_leases WHERE thread_id = $1`, l.ThreadID).Scan(&cur)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	return 0, &storage.FencedError{ThreadID: l.ThreadID, Fence: l.Fence, Current: cur}
}

// checkFence refuses, in the write's transaction, a write to threadID made
// under a lease the thread no longer has; it holds the lease row FOR SHARE
// until the write commits.
func checkFence(ctx context.Context, tx pgx.Tx, threadID int64) error {
	l, ok := storage.LeaseFrom(ctx)
	if !ok {
		return nil
	}
	var owner string
	var cur int64
	err := tx.QueryRow(ctx, `SELECT owner, fence FROM thread_leases WHERE thread_id = $1 FOR SHARE`, threadID).Scan(&owner, &cur)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return stale(l, threadID, owner, cur)
}

// stale is the *storage.FencedError of a write under l to threadID, whose
// lease is owner's with fence cur, or nil if l is that lease.
func stale(l storage.Lease, threadID int64, owner string, cur int64) error {
	if l.ThreadID != threadID || owner != l.Owner || cur != l.Fence {
		return &storage.FencedError{ThreadID: threadID, Fence: l.Fence, Current: cur}
	}
	return nil
}

// checkFenceOf is checkFence for a write known by a row of table (sessions,
// runs, outbound) whose thread_id says the thread. The row's thread and its
// lease are read together, one round trip for every write under a lease;
// without a lease row the two are read apart to say which is missing.
func checkFenceOf(ctx context.Context, tx pgx.Tx, table string, id int64) error {
	l, ok := storage.LeaseFrom(ctx)
	if !ok {
		return nil
	}
	var threadID, cur int64
	var owner string
	err := tx.QueryRow(ctx, `SELECT x.thread_id, l.owner, l.fence FROM `+table+` x
		JOIN thread_leases l ON l.thread_id = x.thread_id WHERE x.id = $1 FOR SHARE OF l`, id).Scan(&threadID, &owner, &cur)
	if err == nil {
		return stale(l, threadID, owner, cur)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	err = tx.QueryRow(ctx, `SELECT thread_id FROM `+table+` WHERE id = $1`, id).Scan(&threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // the write itself reports the missing row
	}
	if err != nil {
		return err
	}
	return checkFence(ctx, tx, threadID)
}

// UnownedThreads implements storage.LeaseStore.
func (db *DB) UnownedThreads(ctx context.Context) ([]int64, error) {
	return queryAll(ctx, db, "unowned threads", func(r pgx.Row) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	}, backend.UnownedThreadsQuery(serverMS("$1")), db.shiftMS())
}
