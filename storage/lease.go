package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Thread leases: which replica owns a thread, when several share one
// database. A replica owns a thread while its lease is live and renews it
// (every third of the TTL, say); once it lapses, another replica may acquire
// the thread. Every new acquisition gets a larger fencing number (Fence), and
// a write made under a lease (WithLease) — a session entry, a run's start or
// end, an outbound record, a pending post — is refused with ErrFenced once the thread was
// acquired anew: a replica that paused past its lease cannot overwrite the
// new owner's work, whatever the clocks say.
//
// Times are the store's clock (WithClock): replicas' clocks should agree to
// well within the TTL. Fencing keeps the writes safe even when they do not.

// Lease is a replica's hold on a thread.
type Lease struct {
	ThreadID int64
	Owner    string
	// Fence grows on every new acquisition of the thread (never on a
	// renewal, nor when the owner acquires a lease it still holds).
	Fence   int64
	Expires time.Time
}

// ErrFenced: the write carried a lease the thread no longer has (another
// owner acquired it since), or the lease to renew or release was lost.
var ErrFenced = errors.New("fenced: the thread's lease was acquired by a newer owner")

// FencedError says which lease was stale. errors.Is(err, ErrFenced) holds.
type FencedError struct {
	ThreadID int64
	Fence    int64 // the stale lease's
	Current  int64 // the thread's current fence (0: it has no lease)
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("fenced: thread %d's lease %d is stale (current %d)", e.ThreadID, e.Fence, e.Current)
}

// Is makes errors.Is(err, ErrFenced) hold.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// LeaseStore keeps thread leases.
type LeaseStore interface {
	// AcquireLease takes threadID for owner for ttl. ok is false, with the
	// holder's lease, when another owner's lease is live. Acquiring a lease
	// the owner still holds renews it and keeps its fence; any other
	// acquisition gets a larger fence.
	AcquireLease(ctx context.Context, threadID int64, owner string, ttl time.Duration) (l Lease, ok bool, err error)
	// RenewLease extends a lease to now+ttl. A lease the thread no longer
	// has (acquired anew since) is ErrFenced; an expired lease nobody took
	// is renewed.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives the thread up at once (its fence stays); a lease
	// already lost is ErrFenced.
	ReleaseLease(ctx context.Context, l Lease) error
	// UnownedThreads returns, by id, the threads that have work left — input
	// accepted and not delivered, a run not ended, a post not made — and no
	// live lease: the replica that owned them died, or gave them up, or
	// nobody claimed them yet. A replica claims them (AcquireLease) and
	// recovers each.
	UnownedThreads(ctx context.Context) ([]int64, error)
}

// UnownedThreadsQuery is UnownedThreads' SQL, for both backends ($1: now in
// Unix ms).
const UnownedThreadsQuery = `SELECT w.thread_id FROM (
		SELECT thread_id FROM inbound WHERE state IN ('received', 'queued')
		UNION SELECT thread_id FROM runs WHERE ended_at IS NULL
		UNION SELECT thread_id FROM pending_posts WHERE done_at IS NULL
	) w LEFT JOIN thread_leases l ON l.thread_id = w.thread_id
	WHERE l.thread_id IS NULL OR l.expires_at <= $1
	ORDER BY w.thread_id`

type leaseKey struct{}

// WithLease returns a context whose writes to l.ThreadID's session entries,
// runs (StartRun, FinishRun, InterruptRuns: that thread's only), outbound records (RecordOutbound,
// UpdateOutbound) and pending posts (RecordPendingPosts) are refused with ErrFenced unless l is still the thread's
// lease, checked in the write's own transaction. Such a write to another
// thread is refused too. Writes without a lease in their context are not
// checked.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseFrom returns the lease WithLease put in ctx.
func LeaseFrom(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok
}

func validLease(owner string, ttl time.Duration) error {
	if owner == "" {
		return errors.New("lease owner is required")
	}
	if ttl <= 0 {
		return fmt.Errorf("lease ttl must be positive (got %s)", ttl)
	}
	return nil
}

// ValidLease checks AcquireLease's and RenewLease's arguments (for backends).
func ValidLease(owner string, ttl time.Duration) error { return validLease(owner, ttl) }

// AcquireLease implements LeaseStore.
func (db *DB) AcquireLease(ctx context.Context, threadID int64, owner string, ttl time.Duration) (Lease, bool, error) {
	if err := validLease(owner, ttl); err != nil {
		return Lease{}, false, opError("acquire lease", err)
	}
	var l Lease
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
			return fmt.Errorf("thread %d: %w", threadID, ErrNotFound)
		}
		l.ThreadID, l.Expires = threadID, fromMS(expires)
		return err
	})
	if err != nil {
		return Lease{}, false, opError("acquire lease", err)
	}
	return l, ok, nil
}

// RenewLease implements LeaseStore.
func (db *DB) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := validLease(l.Owner, ttl); err != nil {
		return Lease{}, opError("renew lease", err)
	}
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		expires := db.nowMS() + ttl.Milliseconds()
		l.Expires = fromMS(expires)
		return setLeaseExpiry(ctx, tx, l, expires)
	})
	if err != nil {
		return Lease{}, opError("renew lease", err)
	}
	return l, nil
}

// ReleaseLease implements LeaseStore.
func (db *DB) ReleaseLease(ctx context.Context, l Lease) error {
	return opError("release lease", db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return setLeaseExpiry(ctx, tx, l, 0)
	}))
}

// setLeaseExpiry moves the expiry of l, if it is still the thread's lease;
// otherwise it is a *FencedError.
func setLeaseExpiry(ctx context.Context, tx *sql.Tx, l Lease, expires int64) error {
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
	return &FencedError{ThreadID: l.ThreadID, Fence: l.Fence, Current: cur}
}

// checkFence refuses, in the write's transaction, a write to threadID made
// under a lease the thread no longer has (see WithLease).
func checkFence(ctx context.Context, tx *sql.Tx, threadID int64) error {
	l, ok := LeaseFrom(ctx)
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
func stale(l Lease, threadID int64, owner string, cur int64) error {
	if l.ThreadID != threadID || owner != l.Owner || cur != l.Fence {
		return &FencedError{ThreadID: threadID, Fence: l.Fence, Current: cur}
	}
	return nil
}

// checkFenceOf is checkFence for a write known by a row of table (sessions,
// runs, outbound) whose thread_id says the thread. The row's thread and its
// lease are read together, one statement for every write under a lease;
// without a lease row the two are read apart to say which is missing.
func checkFenceOf(ctx context.Context, tx *sql.Tx, table string, id any) error {
	l, ok := LeaseFrom(ctx)
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

// UnownedThreads implements LeaseStore.
func (db *DB) UnownedThreads(ctx context.Context) ([]int64, error) {
	rows, err := db.r.QueryContext(ctx, UnownedThreadsQuery, db.nowMS())
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

var _ LeaseStore = (*DB)(nil)
