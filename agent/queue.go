package agent

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// serialQueue runs work items one at a time, in the order they were added, on a
// goroutine that exists only while there is work. The zero value is ready to use.
//
// It is the session's event queue (docs/agent.md §4): every event the agent emits is
// added here and processed in order by extensions, listeners and persistence. An
// item that panics is logged and the queue goes on with the next one.
type serialQueue struct {
	log *slog.Logger

	mu      sync.Mutex
	items   []queueItem
	spare   []queueItem // the last processed batch, reused to avoid allocation
	running bool
	idle    chan struct{} // closed when the queue drains; nil while idle
	closed  bool
}

type queueItem struct {
	ev Event
	fn func(Event)
}

// add appends an item. It never blocks on the work itself. Items added after close
// are dropped.
func (q *serialQueue) add(ev Event, fn func(Event)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.items = append(q.items, queueItem{ev: ev, fn: fn})
	if !q.running {
		q.running = true
		q.idle = make(chan struct{})
		go q.drain()
	}
}

// drain processes batches: it takes everything queued so far, runs it without
// the lock, and swaps buffers so that steady streaming allocates nothing here.
func (q *serialQueue) drain() {
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.running = false
			close(q.idle)
			q.idle = nil
			q.mu.Unlock()
			return
		}
		batch := q.items
		q.items = q.spare[:0]
		q.mu.Unlock()
		for i := range batch {
			q.call(batch[i])
			batch[i] = queueItem{}
		}
		q.mu.Lock()
		q.spare = batch[:0]
		q.mu.Unlock()
	}
}

func (q *serialQueue) call(it queueItem) {
	defer func() {
		if r := recover(); r != nil {
			log := q.log
			if log == nil {
				log = slog.Default()
			}
			name := "item"
			if it.ev != nil {
				name = it.ev.Type()
			}
			log.Error("event handler panicked", "event", name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	it.fn(it.ev)
}

// wait blocks until every item added before the call has been processed, or ctx ends.
func (q *serialQueue) wait(ctx context.Context) error {
	q.mu.Lock()
	ch := q.idle
	q.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops accepting items; items already added still run. Use wait to let them finish.
func (q *serialQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
