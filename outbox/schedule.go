package outbox

import (
	"cmp"
	"slices"
	"time"

	"github.com/threadsmith/threadsmith/chat"
)

// cand is an op that may go next, with the priority it competes at (a
// thread's lane head inherits the highest priority waiting behind it, so a
// final answer is not held up by a Low status update ahead of it).
type cand struct {
	op   *op
	prio Priority
}

// run is the dispatcher: it starts whatever may go now and sleeps until a
// queue changes, a call returns, or the next budget refills.
func (o *Outbox) run() {
	defer o.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		o.mu.Lock()
		next := o.scheduleLocked(time.Now())
		o.mu.Unlock()
		if next.IsZero() {
			timer.Stop()
		} else {
			timer.Reset(time.Until(next))
		}
		select {
		case <-o.wake:
		case <-timer.C:
		case <-o.quit:
			return
		}
	}
}

// scheduleLocked dispatches every op that may go at now, highest priority
// first, then oldest, and returns when the earliest op still waiting on a
// budget may go (zero if none is: a call returning or a new op wakes the
// dispatcher instead).
func (o *Outbox) scheduleLocked(now time.Time) (next time.Time) {
	if o.aborted {
		return time.Time{}
	}
	o.sweepLocked(now)
	wait := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	cands := o.cands[:0]
	consider := func(op *op, p Priority) {
		if at := o.readyAtLocked(op, p); at.After(now) {
			wait(at)
		} else {
			cands = append(cands, cand{op, p})
		}
	}
	for _, th := range o.threads {
		if st := th.status; st != nil && !th.statusBusy {
			consider(st, st.prio)
		}
		if th.busy {
			continue
		}
		if len(th.lane) > 0 {
			consider(th.lane[0], th.lanePrio())
		}
		for _, e := range th.edits {
			if e.msg.state == msgPosted {
				consider(e, e.prio)
			}
		}
		for i, r := range th.reacts {
			if !slices.ContainsFunc(th.reacts[:i], func(x *op) bool { return x.target == r.target }) {
				consider(r, r.prio)
			}
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.op.seq, b.op.seq)
	})
	for _, c := range cands {
		// A returning call wakes the dispatcher.
		if c.op.kind == opStatus {
			if o.statusCalls >= statusWorkers {
				continue
			}
		} else if o.inflight >= o.cfg.Workers || c.op.th.busy {
			continue // another op of the thread just went; its return wakes us
		}
		// An op dispatched just before may have taken the tokens this one
		// was counting on.
		if at := o.readyAtLocked(c.op, c.prio); at.After(now) {
			wait(at)
			continue
		}
		o.dispatchLocked(c.op, now)
	}
	clear(cands)
	o.cands = cands[:0]
	return next
}

// readyAtLocked is the earliest time op, competing at priority p, may go.
func (o *Outbox) readyAtLocked(op *op, p Priority) time.Time {
	at := op.notBefore
	if o.globalPause.After(at) {
		at = o.globalPause
	}
	bs, n := o.scopes(op)
	for _, b := range bs[:n] {
		bp := p
		if b == &o.statusRate {
			// Only status updates draw from it: there is no reserve to
			// leave to anyone.
			bp = High
		}
		if t := b.readyAt(bp); t.After(at) {
			at = t
		}
	}
	return at
}

// scopes are the limited buckets op draws from.
func (o *Outbox) scopes(op *op) (bs [4]*bucket, n int) {
	add := func(b *bucket) {
		if b != nil && b.every > 0 {
			bs[n] = b
			n++
		}
	}
	switch op.kind {
	case opPost, opUpload:
		add(op.th.post)
	case opEdit:
		add(&op.msg.edits)
		add(op.th.edit)
		if o.streamer != nil && op.msg != nil && o.streamer.Streaming(op.th.ref, op.msg.id) {
			add(&o.streams)
		} else {
			add(&o.workspace)
		}
	case opStatus:
		add(&o.statusRate)
	}
	add(&o.requests)
	return bs, n
}

// dispatchLocked takes op's tokens and starts its call.
func (o *Outbox) dispatchLocked(op *op, now time.Time) {
	th := op.th
	switch op.kind {
	case opPost:
		op.msg.post = nil // later edits become an edit op
	case opEdit:
		m := op.msg
		m.edit = nil
		th.edits = removeOp(th.edits, op)
		if m.shownKnown && m.shown == op.text && (!op.withActions || chat.SameActions(m.shownActs, op.actions)) {
			// The platform already shows this text (a final edit equal to
			// the last streamed one): spend no budget on it.
			o.doneLocked(op)
			o.releaseLocked(th)
			return
		}
		op.target = m.id
	}
	if op.kind == opStatus {
		th.status = nil // a later status waits behind this call
		o.dispatchStatusLocked(op, now)
		return
	}
	bs, n := o.scopes(op)
	for _, b := range bs[:n] {
		b.take(now)
	}
	op.attempts++
	if op.attempts == 1 && op.first.IsZero() { // PostKeyed may give an earlier one
		op.first = now
	}
	op.inFlight = true
	th.busy = true
	o.inflight++
	o.wg.Add(1)
	go o.execute(op, o.guards[th.key])
}

// statusWorkers bounds the status calls in flight, beside Config.Workers.
const statusWorkers = 2

// dispatchStatusLocked takes a status's tokens and starts its call, in the
// thread's status lane.
func (o *Outbox) dispatchStatusLocked(op *op, now time.Time) {
	bs, n := o.scopes(op)
	for _, b := range bs[:n] {
		b.take(now)
	}
	op.attempts++
	op.inFlight = true
	op.th.statusBusy = true
	o.statusCalls++
	o.wg.Add(1)
	go o.execute(op, o.guards[op.th.key])
}

// sweepLocked forgets channel buckets no thread uses and that are full again
// (a fresh bucket behaves the same), so long-running bots do not accumulate
// one per channel ever written to.
func (o *Outbox) sweepLocked(now time.Time) {
	if now.Sub(o.lastSweep) < time.Minute {
		return
	}
	o.lastSweep = now
	for _, m := range []map[string]*bucket{o.chanPost, o.chanEdit} {
		for k, b := range m {
			if b.refs == 0 && b.idle(now) {
				delete(m, k)
			}
		}
	}
}
