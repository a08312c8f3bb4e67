package execqueue

import (
	"context"
	"log/slog"
	"sync"
)

// Keyed runs items per key: the items of one key run in the order they were
// added, one at a time, as in a Queue; different keys run concurrently. A key
// holds a Queue (and a goroutine) only while it has work, so a program may key
// by thread and keep no state for idle threads. Set Run (and optionally Log,
// Name) before the first Add; the zero value with Run set is ready to use.
type Keyed[K comparable, T any] struct {
	// Run processes one item. It runs on its key's goroutine.
	Run func(T)
	// Log receives panics of Run; slog.Default() when nil.
	Log *slog.Logger
	// Name describes an item in the panic log line; optional.
	Name func(T) string

	mu     sync.Mutex
	queues map[K]*Queue[T] // the keys with work
	idle   chan struct{}   // closed when no key has work; nil while none has
}

// Add appends v to key's items. It never blocks on the work itself.
func (k *Keyed[K, T]) Add(key K, v T) {
	k.mu.Lock()
	defer k.mu.Unlock()
	q := k.queues[key]
	if q == nil {
		if k.queues == nil {
			k.queues = map[K]*Queue[T]{}
		}
		if len(k.queues) == 0 {
			k.idle = make(chan struct{})
		}
		q = &Queue[T]{Run: k.Run, Log: k.Log, Name: k.Name}
		q.onIdle = func() { k.release(key, q) }
		k.queues[key] = q
	}
	q.Add(v)
}

// release forgets key once its queue is drained. An Add that came between the
// drain and this call restarted the queue, which then stays.
func (k *Keyed[K, T]) release(key K, q *Queue[T]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.queues[key] != q || !q.isIdle() {
		return
	}
	delete(k.queues, key)
	if len(k.queues) == 0 {
		close(k.idle)
		k.idle = nil
	}
}

// Keys is the number of keys with work (added and not yet finished).
func (k *Keyed[K, T]) Keys() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.queues)
}

// Wait blocks until no key has work (everything added before the call, and
// anything added meanwhile, has run), or ctx ends.
func (k *Keyed[K, T]) Wait(ctx context.Context) error {
	k.mu.Lock()
	ch := k.idle
	k.mu.Unlock()
	return waitClosed(ctx, ch)
}
