package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Thread leases: which replica owns a thread, when several share one
// database. A replica owns a thread while its lease is live and renews it
// (every third of the TTL, say); once it lapses, another replica may acquire
// the thread. Every new acquisition gets a larger fencing number (Fence), and
// a write made under a lease (WithLease) — a session entry, a run's start or
// end, an outbound record, a pending post — is refused with ErrFenced once
// the thread was acquired anew: a replica that paused past its lease cannot
// overwrite the new owner's work, whatever the clocks say.
//
// Times are the store's clock: SQLite's (WithClock; one process holds the
// file), PostgreSQL's server's, so that replicas whose clocks disagree or
// step judge every lease alike. Expires is that clock's and says nothing to
// a replica's own clock: a replica keeps its own deadline (the time it asked,
// by its monotonic clock, plus the TTL). Fencing keeps the writes safe
// whatever the clocks say.

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

type leaseKey struct{}

// WithLease returns a context whose writes to l.ThreadID's session entries,
// runs (StartRun, FinishRun, InterruptRuns: that thread's only), outbound
// records (RecordOutbound, UpdateOutbound) and pending posts
// (RecordPendingPosts) are refused with ErrFenced unless l is still the
// thread's lease, checked in the write's own transaction. Such a write to
// another thread is refused too. Writes without a lease in their context are
// not checked.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseFrom returns the lease WithLease put in ctx.
func LeaseFrom(ctx context.Context) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	return l, ok
}
