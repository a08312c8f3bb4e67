package storage

import (
	"context"
	"time"
)

// OpeningStore remembers the threads the bot opened itself (a schedule's
// firing, an issue): each opening key's thread, so that an opening asked for
// again (a redelivered webhook, a firing retried after a crash) finds its
// thread instead of opening a second one. Openings of one key are not run
// concurrently: the caller keeps them apart (a lease, one process).
type OpeningStore interface {
	// BeginOpening returns the opening with key on platform, recording it
	// first (First: the store's now; no thread yet) unless it exists;
	// Created says it did not. Platform and key are required.
	BeginOpening(ctx context.Context, platform, key string) (Opening, error)
	// FinishOpening records thread as the opening's thread and returns the
	// thread recorded: an opening that has one keeps it, whatever thread is
	// given. An unknown opening is ErrNotFound; a thread key without
	// platform, channel or thread is refused.
	FinishOpening(ctx context.Context, platform, key string, thread ThreadKey) (ThreadKey, error)
}

// Opening is one thread the bot opened, or is opening.
type Opening struct {
	Platform string
	Key      string
	// Thread is the thread opened; its Thread is "" until FinishOpening.
	Thread ThreadKey
	// First is when the opening was first begun: a post made for it is
	// no older.
	First time.Time
	// Created says BeginOpening recorded it in this call.
	Created bool
}

// Opened says the opening's thread is recorded.
func (o Opening) Opened() bool { return o.Thread.Thread != "" }
