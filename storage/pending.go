package storage

import "time"

// PendingPost is a message the bot must post exactly once and may not lose to
// a crash: a run's answer and its closing footer. It is stored before it goes
// to the outbox and marked when the platform answered; at start, what was
// never marked is posted again with the same Key (see chat.PostKey), so that
// a post the platform accepted just before the crash is not shown twice.
type PendingPost struct {
	ID        int64
	ThreadID  int64
	Thread    ThreadKey // set by UnpostedPosts
	RunID     int64     // 0 when it belongs to no run
	Key       string    // the idempotency key, the same on every attempt
	Text      string
	CreatedAt time.Time // set by RecordPendingPosts
}
