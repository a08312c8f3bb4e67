package storage

import (
	"context"
	"time"
)

// FiringStore keeps the firings of the configured schedules, so that each
// firing runs once: with several replicas on one database, on the replica
// that leases it; after a restart, not again.
//
// A firing is a schedule's name and the time it is due. Claiming it leases
// it to an owner for a while; finishing it records it as done, whoever
// holds it. A firing is never claimed once it, or a later firing of its
// schedule, is done: a replica that wakes up late cannot run an old one.
type FiringStore interface {
	// ClaimFiring leases schedule's firing at `at` to owner for ttl, and
	// reports whether it did: it does unless that firing or a later one of
	// the schedule is done, or another owner's lease on it is live. The
	// owner's own live lease is renewed; a lapsed lease is taken over.
	// Schedule and owner are required, and ttl must be positive.
	ClaimFiring(ctx context.Context, schedule string, at time.Time, owner string, ttl time.Duration) (bool, error)
	// FinishFiring records schedule's firing at `at` as done (claimed or
	// not), and forgets the schedule's earlier firings.
	FinishFiring(ctx context.Context, schedule string, at time.Time) error
	// LastFiring returns the time of schedule's latest firing claimed or
	// done, or ErrNotFound when it has none.
	LastFiring(ctx context.Context, schedule string) (time.Time, error)
}
