package storage

import (
	"context"
	"sync"
)

// InboundNotifier tells the replicas sharing a store, at once, that input was
// accepted for a thread, so that the thread's owner takes it without waiting
// for its next poll. PostgreSQL sends it with NOTIFY in the accepting
// transaction (delivered on commit, to every listening replica); SQLite, one
// process per database, calls the listeners of the same *DB after the commit.
// A notification can be lost (a listener reconnecting), so owners poll too.
type InboundNotifier interface {
	// ListenInbound calls fn with the thread of every message accepted from
	// now on (not duplicates) until ctx ends, then returns nil. fn runs on
	// the notifier's goroutine and must not block.
	ListenInbound(ctx context.Context, fn func(threadID int64)) error
}

// Listeners is the in-process InboundNotifier: a set of functions called
// after each commit of accepted input.
type Listeners struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(int64)
}

// Listen adds fn until ctx ends.
func (s *Listeners) Listen(ctx context.Context, fn func(threadID int64)) error {
	s.mu.Lock()
	if s.fns == nil {
		s.fns = map[int]func(int64){}
	}
	id := s.next
	s.next++
	s.fns[id] = fn
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	delete(s.fns, id)
	s.mu.Unlock()
	return nil
}

// Notify calls every listener with threadID.
func (s *Listeners) Notify(threadID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fn := range s.fns {
		fn(threadID)
	}
}

// ListenInbound implements InboundNotifier.
func (db *DB) ListenInbound(ctx context.Context, fn func(threadID int64)) error {
	return db.inbound.Listen(ctx, fn)
}

var _ InboundNotifier = (*DB)(nil)
