package bridge

// The thread's side of the run slots (slots.go): waiting for a slot is a
// state of the thread (its parked input), not a blocked goroutine, so
// !status and !stop are answered at once while it waits. Owner goroutine only.

import (
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
)

// takeSlot takes a run slot for pi: the one handed to it, or a free one.
// With none free, pi is parked (the thread says so once) and the owner goes
// on with its queue; slotGranted resumes pi when a slot is handed over.
func (t *thread) takeSlot(pi *pendingInput) bool {
	if pi.granted {
		pi.granted = false
		return true
	}
	if t.b.slots.tryAcquire(t) {
		return true
	}
	pi.parked = true
	t.waiting = append([]*pendingInput{pi}, t.waiting...)
	t.say(fmt.Sprintf("⏳ All %d run slots are busy; this request starts as soon as one frees up.", t.b.slots.size))
	return false
}

// waitingForSlot reports whether input of the thread waits for a run slot.
func (t *thread) waitingForSlot() bool { return len(t.waiting) > 0 }

// cancelWaiting gives up the wait for a run slot and returns the input that
// waited, in order.
func (t *thread) cancelWaiting() []*pendingInput {
	t.b.slots.cancel(t)
	w := t.waiting
	t.waiting = nil
	return w
}

// waitBehind parks pi behind the input that waits for a run slot.
func (t *thread) waitBehind(pi *pendingInput) {
	pi.parked = true
	t.waiting = append(t.waiting, pi)
}

// slotGranted resumes the parked input with the slot handed to the thread;
// what was parked behind it follows in order (joining the run it starts).
func (t *thread) slotGranted() {
	if len(t.waiting) == 0 {
		t.releaseSlot() // the wait was cancelled (!stop) after the hand-over
		return
	}
	pi, rest := t.waiting[0], t.waiting[1:]
	t.waiting = nil
	pi.granted = true
	t.handleInput(pi)
	if pi.granted { // it did not need the slot after all
		pi.granted = false
		t.releaseSlot()
	}
	t.requeueFront(rest)
}

// answerWhileWaiting answers a command that has an answer while the thread's
// request waits for a run slot or for the model (the table's whileWaiting:
// !stop, !status)
// at once. It reports whether it answered.
func (t *thread) answerWhileWaiting(name string, pi *pendingInput) bool {
	c := lookupCommand(name)
	if (len(t.waiting) == 0 && !t.awaiting) || c == nil || c.whileWaiting == nil || !c.whileWaiting(t) {
		return false
	}
	t.markInbound(pi.id, storage.InboundDelivered, "")
	return true
}

func (t *thread) releaseSlot() { t.b.slots.release() }
