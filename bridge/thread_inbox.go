package bridge

// A thread's inbox: the one queue through which everything reaches the
// thread's owner goroutine — accepted input, a run's end or timeout, a run
// slot handed over, work of command goroutines. Producers on any goroutine
// enqueue; only the owner takes items off.

import (
	"github.com/threadsmith/threadsmith/agent"
)

// item is a unit of work for a thread's owner goroutine.
type item struct {
	input       *pendingInput
	runDone     *agent.Session // the session whose run ended
	slotGranted bool           // a run slot was handed to this thread (runSlots)
	fn          func()
}

func (t *thread) enqueue(it item) {
	t.qmu.Lock()
	t.items = append(t.items, it)
	t.qmu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *thread) next() (item, bool) {
	t.qmu.Lock()
	defer t.qmu.Unlock()
	if len(t.items) == 0 {
		return item{}, false
	}
	it := t.items[0]
	t.items[0] = item{}
	t.items = t.items[1:]
	return it, true
}

func (t *thread) queued() int {
	t.qmu.Lock()
	defer t.qmu.Unlock()
	return len(t.items)
}

// requeueFront puts inputs back at the front of the owner's queue, in order.
func (t *thread) requeueFront(ins []*pendingInput) {
	if len(ins) == 0 {
		return
	}
	t.qmu.Lock()
	front := make([]item, 0, len(ins)+len(t.items))
	for _, pi := range ins {
		front = append(front, item{input: pi})
	}
	t.items = append(front, t.items...)
	t.qmu.Unlock()
	t.enqueue(item{}) // wake the loop; an empty item does nothing
}
