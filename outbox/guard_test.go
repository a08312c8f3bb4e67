package outbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/threadsmith/threadsmith/outbox"
)

// A thread's guard is asked before each call for the thread: once it says
// no, nothing queued for the thread is sent — not a post, not an edit, not
// a final edit's fallback post — and the posts fail with ErrWithdrawn. Other
// threads are not affected, and a removed guard asks nothing.
func TestGuardWithdrawsWhatAThreadQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{})
		th, other := ref("C1", "t"), ref("C1", "u")
		var owned atomic.Bool
		owned.Store(true)
		var asked atomic.Int32
		remove := o.Guard(th, func(context.Context) bool { asked.Add(1); return owned.Load() })
		status := o.Post(th, "⏳ working…", outbox.High, nil)
		if _, err := status.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		owned.Store(false) // the thread was taken over
		var postErr error
		done := make(chan struct{})
		o.Post(th, "stale answer", outbox.High, func(_ string, err error) { postErr = err; close(done) })
		o.Edit(status, "stale preview", outbox.Low)
		o.EditFinal(status, "stale final", outbox.High)
		o.Post(other, "another thread", outbox.High, nil)
		flush(t, o)
		<-done
		if !errors.Is(postErr, outbox.ErrWithdrawn) {
			t.Errorf("the withdrawn post's callback got %v, want ErrWithdrawn", postErr)
		}
		got := texts(r.accepted("", nil))
		for _, c := range got {
			if c == "post:stale answer" || c == "edit:stale preview" || c == "edit:stale final" || c == "post:stale final" {
				t.Errorf("sent after the guard said no: %q (all: %q)", c, got)
			}
		}
		if got[len(got)-1] != "post:another thread" {
			t.Errorf("calls %q: want another thread's post sent", got)
		}
		// A withdrawal is not a failure (nothing was tried), and the
		// withdrawn edits count as dropped: no fallback post replaces them.
		if st := o.Stats(); st.Failures != 0 || st.EditsDropped == 0 {
			t.Errorf("stats %+v: want no failures and the withdrawn edits dropped", st)
		}
		remove()
		n := asked.Load()
		o.Post(th, "after the guard", outbox.High, nil)
		flush(t, o)
		if asked.Load() != n {
			t.Error("a removed guard was asked")
		}
	})
}

// A later Guard of a thread replaces the earlier one, and the earlier one's
// remove (its owner ending after a new owner of the thread began) leaves
// the new guard in place.
func TestGuardReplacedIsNotRemovedByTheOldRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{})
		th := ref("C1", "t")
		var oldAsked, newAsked atomic.Int32
		removeOld := o.Guard(th, func(context.Context) bool { oldAsked.Add(1); return true })
		o.Guard(th, func(context.Context) bool { newAsked.Add(1); return false })
		removeOld()
		var postErr error
		done := make(chan struct{})
		o.Post(th, "refused by the new guard", outbox.High, func(_ string, err error) { postErr = err; close(done) })
		flush(t, o)
		<-done
		if !errors.Is(postErr, outbox.ErrWithdrawn) || oldAsked.Load() != 0 || newAsked.Load() != 1 {
			t.Errorf("post error %v, old guard asked %d times, new %d; want ErrWithdrawn by the new guard alone",
				postErr, oldAsked.Load(), newAsked.Load())
		}
		if got := r.accepted("", nil); len(got) != 0 {
			t.Errorf("calls %q, want none", texts(got))
		}
	})
}
