package sqlite

import (
	"context"
	"sync"
)

// listeners is the in-process InboundNotifier: a set of functions called
// after each commit of accepted input.
type listeners struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(int64)
}

// Listen adds fn until ctx ends.
func (s *listeners) Listen(ctx context.Context, fn func(threadID int64)) error {
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
func (s *listeners) Notify(threadID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fn := range s.fns {
		fn(threadID)
	}
}

// ListenInbound implements storage.Store.
func (db *DB) ListenInbound(ctx context.Context, fn func(threadID int64)) error {
	return db.inbound.Listen(ctx, fn)
}
