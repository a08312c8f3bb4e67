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

// answerWhileWaiting answers !stop and !status at once for a thread whose
// request waits for a run slot (docs/behaviour.md §3: a run still waiting for a
// slot is cancelled before it starts). It reports whether it answered.
func (t *thread) answerWhileWaiting(name string, pi *pendingInput) bool {
	if len(t.waiting) == 0 {
		return false
	}
	switch name {
	case "stop":
		t.b.slots.cancel(t)
		cancelled := t.waiting
		t.waiting = nil
		var texts []string
		for _, w := range cancelled {
			t.markInbound(w.id, storage.InboundDropped, "stopped before it started")
			texts = append(texts, w.in.Text)
		}
		t.endPendingStatus("⏹ stopped before it started.")
		t.say(fmt.Sprintf("⏹ stopped: the request waiting for a run slot was cancelled before it started (%d message%s):%s", len(texts), plural(len(texts)), quoteTexts(texts)))
	case "status":
		if t.sess != nil {
			return false // the full status, which says it waits
		}
		t.say(fmt.Sprintf("📊 *Status*: waiting for a run slot (%d of %d busy; %d thread%s ahead)", t.b.slots.size, t.b.slots.size, t.b.slots.ahead(t), plural(t.b.slots.ahead(t))))
	default:
		return false
	}
	t.markInbound(pi.id, storage.InboundDelivered, "")
	return true
}

func (t *thread) releaseSlot() { t.b.slots.release() }
