package bridge

// A thread's inbox: the one queue through which everything reaches the
// thread's owner goroutine — accepted input, a run's end or timeout, a run
// slot handed over, work of command goroutines. Producers on any goroutine
// enqueue; only the owner takes items off.

import (
	"sync"

	"github.com/threadsmith/threadsmith/storage"
)

// inbox is the owner's queue.
type inbox struct {
	qmu   sync.Mutex
	items []item
	wake  chan struct{} // signalled (without blocking) on each enqueue
}

// item is a message to a thread's owner goroutine; one field is set.
type item struct {
	input       *pendingInput // accepted input (thread_input.go)
	runDone     *activeRun    // the run whose session went idle (thread_run.go)
	runTimeout  *activeRun    // the run that reached the run timeout
	slotGranted bool          // a run slot was handed to this thread (runSlots)
	fn          func()        // anything else to do on the owner

	// From the replica layer (lease.go).
	leaseLost *storage.Lease // a lease of the thread was refused or ran out: the thread ends
	inputNews int64          // news that the thread has stored input: its number (Bridge.nudge)
}

func (q *inbox) enqueue(it item) {
	q.qmu.Lock()
	q.items = append(q.items, it)
	q.qmu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *inbox) next() (item, bool) {
	q.qmu.Lock()
	defer q.qmu.Unlock()
	if len(q.items) == 0 {
		return item{}, false
	}
	it := q.items[0]
	q.items[0] = item{}
	q.items = q.items[1:]
	return it, true
}

func (q *inbox) queued() int {
	q.qmu.Lock()
	defer q.qmu.Unlock()
	return len(q.items)
}

// requeueFront puts inputs back at the front of the queue, in order.
func (q *inbox) requeueFront(ins []*pendingInput) {
	if len(ins) == 0 {
		return
	}
	q.qmu.Lock()
	front := make([]item, 0, len(ins)+len(q.items))
	for _, pi := range ins {
		front = append(front, item{input: pi})
	}
	q.items = append(front, q.items...)
	q.qmu.Unlock()
	q.enqueue(item{}) // wake the loop; an empty item does nothing
}
