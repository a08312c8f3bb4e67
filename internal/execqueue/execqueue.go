// Package execqueue is the one FIFO queue type of the program: items added by
// any goroutine are handed, one at a time and in the order they were added, to
// a single function, on a goroutine that exists only while there is work (the
// model is tailscale's util/execqueue). An idle queue costs no goroutine, so a
// program may hold one per thread.
//
// The rules it keeps:
//   - Add never blocks on the work itself (producers may be network readers).
//   - Items run strictly one after another: what the run function touches is
//     owned by the queue while it runs, without a lock (an actor's mailbox).
//   - An item whose run panics is logged with its stack and the queue goes on
//     with the next one: one bad item does not take the process down.
//   - Items are taken in batches and the buffers are swapped, so a steady
//     stream allocates nothing here.
package execqueue

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// Queue runs each item added with Run, serially. Set Run (and optionally Log,
// Name) before the first Add; the zero value with Run set is ready to use.
type Queue[T any] struct {
	// Run processes one item. It runs on the queue's goroutine.
	Run func(T)
	// Log receives panics of Run; slog.Default() when nil.
	Log *slog.Logger
	// Name describes an item in the panic log line; optional.
	Name func(T) string

	mu      sync.Mutex
	items   []T
	spare   []T // the last processed batch, reused
	front   []T // items to run before items (AddFront)
	left    int // items of the batch being run that have not started
	running bool
	idle    chan struct{} // closed when the queue drains; nil while idle
	closed  bool
	// onIdle runs, without q.mu, each time the goroutine finds the queue
	// drained and exits (Keyed forgets the key then).
	onIdle func()
}

// Add appends v and reports whether it was taken: after Close it is dropped.
func (q *Queue[T]) Add(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, v)
	q.start()
	return true
}

// AddFront puts vs before every item not yet taken, in their order. Items of
// the batch being run go first: it is for the queue's own Run, which puts
// back what it cannot handle yet.
func (q *Queue[T]) AddFront(vs ...T) bool {
	if len(vs) == 0 {
		return true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.front = append(append(make([]T, 0, len(vs)+len(q.front)), vs...), q.front...)
	q.start()
	return true
}

// start starts the goroutine if none runs; q.mu is held.
func (q *Queue[T]) start() {
	if q.running {
		return
	}
	q.running = true
	q.idle = make(chan struct{})
	go q.drain()
}

// isIdle reports whether the queue has no goroutine and nothing to run.
func (q *Queue[T]) isIdle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.running && len(q.items) == 0 && len(q.front) == 0
}

// Len is the number of items added that have not started to run; called by
// Run, it does not count the item being run.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + len(q.front) + q.left
}

func (q *Queue[T]) drain() {
	for {
		q.mu.Lock()
		if len(q.front) > 0 {
			batch := q.front
			q.front = nil
			q.left = len(batch) - 1
			q.mu.Unlock()
			q.runBatch(batch, false)
			continue
		}
		if len(q.items) == 0 {
			q.running = false
			close(q.idle)
			q.idle = nil
			onIdle := q.onIdle
			q.mu.Unlock()
			if onIdle != nil {
				onIdle()
			}
			return
		}
		batch := q.items
		q.items = q.spare[:0]
		q.spare = nil
		q.left = len(batch) - 1
		q.mu.Unlock()
		rest := q.runBatch(batch, true)
		q.mu.Lock()
		if len(rest) > 0 {
			// AddFront during the batch: what the batch did not reach yet
			// runs after the items put in front.
			q.front = append(q.front, rest...)
			q.left = 0
		}
		q.spare = batch[:0]
		q.mu.Unlock()
	}
}

// runBatch runs the batch in order. When the queue's own Run puts items in
// front (AddFront) it stops and returns the part not run yet, copied.
// q.left counts the items of the batch not started yet (Len).
func (q *Queue[T]) runBatch(batch []T, items bool) []T {
	var zero T
	for i := range batch {
		q.call(batch[i])
		batch[i] = zero
		if i+1 == len(batch) {
			break
		}
		q.mu.Lock()
		if items && len(q.front) > 0 {
			rest := append([]T(nil), batch[i+1:]...)
			clear(batch[i+1:])
			q.mu.Unlock()
			return rest
		}
		q.left--
		q.mu.Unlock()
	}
	return nil
}

func (q *Queue[T]) call(v T) {
	defer func() {
		if r := recover(); r != nil {
			log := q.Log
			if log == nil {
				log = slog.Default()
			}
			name := "item"
			if q.Name != nil {
				name = q.Name(v)
			}
			log.Error("queued work panicked", "item", name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	q.Run(v)
}

// Wait blocks until the queue is idle (everything added before the call, and
// anything added meanwhile, has run), or ctx ends.
func (q *Queue[T]) Wait(ctx context.Context) error {
	q.mu.Lock()
	ch := q.idle
	q.mu.Unlock()
	return waitClosed(ctx, ch)
}

// waitClosed waits until ch is closed (at once when nil) or ctx ends.
func waitClosed(ctx context.Context, ch <-chan struct{}) error {
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

// Close stops taking items; items already added still run (Wait for them).
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// Func is a queue of functions, each its own work.
type Func = Queue[func()]

// NewFunc returns a queue that runs the functions added to it.
func NewFunc(log *slog.Logger) *Func {
	return &Func{Run: func(f func()) { f() }, Log: log}
}
