package outbox

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/threadsmith/threadsmith/chat"
)

// execute makes op's adapter call on its own goroutine, unless g (its
// thread's guard, if any) refuses it, and hands the result back to the
// queues.
func (o *Outbox) execute(op *op, g *guard) {
	defer o.wg.Done()
	ctx, cancel := context.WithTimeout(o.callCtx, o.cfg.CallTimeout)
	var id string
	var err error
	if g != nil && !g.ok(ctx) {
		err = ErrWithdrawn
	} else {
		id, err = o.call(ctx, op)
	}
	cancel()
	o.mu.Lock()
	after := o.finishLocked(op, id, err, time.Now())
	o.mu.Unlock()
	o.poke()
	if after != nil {
		after()
	}
}

func (o *Outbox) call(ctx context.Context, op *op) (string, error) {
	ref := op.th.ref
	switch op.kind {
	case opPost:
		if o.once != nil {
			return o.once.PostOnce(ctx, ref, op.text, chat.PostKey{ID: op.key, Retry: op.uncertain, First: op.first, Notify: op.notify, Stream: op.stream})
		}
		return o.a.Post(ctx, ref, op.text)
	case opEdit:
		if op.withActions && o.actioner != nil {
			return "", o.actioner.SetActions(ctx, ref, op.target, op.text, op.actions)
		}
		return "", o.editor.Edit(ctx, ref, op.target, op.text)
	case opReact:
		return "", o.reactor.React(ctx, ref, op.target, op.emoji, op.add)
	case opUpload:
		if o.onceUp != nil {
			return "", o.onceUp.UploadOnce(ctx, ref, op.name, op.content, op.text, chat.PostKey{ID: op.key, Retry: op.uncertain, First: op.first})
		}
		return "", o.uploader.Upload(ctx, ref, op.name, op.content, op.text)
	case opStatus:
		if o.titled != nil {
			return "", o.titled.SetTitledStatus(ctx, ref, op.text, op.title)
		}
		return "", o.statuser.SetStatus(ctx, ref, op.text)
	}
	return "", nil
}

// finishLocked records the result of op's call: done, waiting out a rate
// limit, retrying after backoff, or given up. It returns the onPosted
// callback to run once the lock is released, if any.
func (o *Outbox) finishLocked(op *op, id string, err error, now time.Time) func() {
	op.inFlight = false
	if op.kind == opStatus {
		o.finishStatusLocked(op, err, now)
		return nil
	}
	op.th.busy = false
	o.inflight--
	if err == nil {
		return o.succeededLocked(op, id)
	}
	rl, limited := chat.IsRateLimit(err)
	if o.aborted {
		// Close gave up waiting: what would have been retried is abandoned.
		if limited || transient(err) || errors.Is(err, context.Canceled) {
			err = ErrClosed
		}
		return o.failedLocked(op, err)
	}
	if limited {
		o.stats.RateLimited++
		o.rateLimitedLocked(op, rl, now)
		o.requeueLocked(op)
		return nil
	}
	if transient(err) && op.failures < o.cfg.Retries {
		op.uncertain = true
		op.failures++
		o.stats.Retries++
		op.notBefore = now.Add(o.backoff(op.failures))
		o.log.Debug("outbox: retrying", "op", op.kind, "thread", op.th.key, "attempt", op.attempts, "err", err)
		o.requeueLocked(op)
		return nil
	}
	return o.failedLocked(op, err)
}

func (o *Outbox) succeededLocked(op *op, id string) func() {
	th := op.th
	var after func()
	switch op.kind {
	case opPost:
		th.lane = removeOp(th.lane, op)
		m := op.msg
		m.state, m.id = msgPosted, id
		m.shown, m.shownKnown = op.text, true
		close(m.done)
		o.stats.Posts++
		if len(m.actions) > 0 && m.edit == nil {
			// Buttons asked for before the post went out: Post carries
			// text only, so they follow in an edit.
			e := o.newOpLocked(opEdit, op.prio, th)
			e.msg, e.text, e.withActions, e.actions = m, m.want, true, m.actions
			m.edit = e
			th.edits = append(th.edits, e)
			// Part of the post: a Flush waiting for it waits for this too.
			o.inheritLocked(e, op.seq)
		}
		if cb := m.onPosted; cb != nil {
			after = func() { cb(id, nil) }
		}
	case opEdit:
		op.msg.shown, op.msg.shownKnown = op.text, true
		if op.withActions {
			op.msg.shownActs = op.actions
		}
		o.stats.EditsSent++
	case opReact:
		th.reacts = removeOp(th.reacts, op)
		o.stats.Reactions++
	case opUpload:
		th.lane = removeOp(th.lane, op)
		o.stats.Uploads++
	}
	o.doneLocked(op)
	o.releaseLocked(th)
	return after
}

// finishStatusLocked records the result of a status call. A rate limit
// pauses the status budget (every budget when global) and drops the status:
// the thread's next status waits out the pause, its posts do not. A
// transient failure is retried, unless a newer status is waiting, which
// replaces it.
func (o *Outbox) finishStatusLocked(op *op, err error, now time.Time) {
	th := op.th
	th.statusBusy = false
	o.statusCalls--
	op.retired = true
	rl, limited := chat.IsRateLimit(err)
	switch {
	case err == nil:
		o.stats.Statuses++
	case o.aborted || errors.Is(err, ErrWithdrawn):
		o.stats.StatusDropped++
	case limited:
		o.stats.RateLimited++
		o.stats.StatusDropped++
		o.rateLimitedLocked(op, rl, now)
	case transient(err) && op.failures < o.cfg.Retries && th.status == nil:
		op.retired = false
		op.failures++
		o.stats.Retries++
		op.notBefore = now.Add(o.backoff(op.failures))
		th.status = op
	default:
		o.stats.StatusDropped++
		if th.status == nil {
			o.log.Warn("outbox: status update failed", "thread", th.key, "attempts", op.attempts, "err", err)
		}
	}
	o.releaseLocked(th)
}

// failedLocked gives op up. A failed post fails its message: its pending
// edit is dropped and so are later ones.
func (o *Outbox) failedLocked(op *op, err error) func() {
	th := op.th
	var after func()
	withdrawn := err == ErrWithdrawn
	if err != ErrClosed && !withdrawn {
		o.stats.Failures++
		o.log.Warn("outbox: giving up", "op", op.kind, "thread", th.key, "attempts", op.attempts, "err", err)
	}
	switch op.kind {
	case opPost:
		th.lane = removeOp(th.lane, op)
		m := op.msg
		m.post = nil
		m.state, m.err = msgFailed, err
		close(m.done)
		if e := m.edit; e != nil {
			m.edit = nil
			th.edits = removeOp(th.edits, e)
			o.stats.EditsDropped++
			o.doneLocked(e)
		}
		if cb := m.onPosted; cb != nil {
			after = func() { cb("", err) }
		}
	case opEdit:
		if op.msg.edit == op {
			op.msg.edit = nil
		}
		th.edits = removeOp(th.edits, op)
		if err == ErrClosed || withdrawn {
			o.stats.EditsDropped++
		} else if op.final && op.msg.edit == nil {
			// The last word of a message the platform will not change: it
			// goes out as a new message rather than not at all.
			o.inheritLocked(o.postLocked(o.newMessage(op.msg.ref), op.text, High), op.seq)
		}
	case opReact:
		th.reacts = removeOp(th.reacts, op)
	case opUpload:
		th.lane = removeOp(th.lane, op)
	}
	o.doneLocked(op)
	o.releaseLocked(th)
	return after
}

// rateLimitedLocked pauses what the platform refused: every budget when the
// limit is global, else the op's own scopes (not the shared request budget,
// which only a global limit concerns) and the op itself.
func (o *Outbox) rateLimitedLocked(op *op, rl *chat.RateLimitError, now time.Time) {
	wait := rl.RetryAfter
	if wait <= 0 {
		wait = time.Second
	}
	until := now.Add(wait)
	if until.After(op.notBefore) {
		op.notBefore = until
	}
	o.log.Info("outbox: rate limited", "op", op.kind, "thread", op.th.key, "retry_after", wait, "global", rl.Global)
	if rl.Global {
		if until.After(o.globalPause) {
			o.globalPause = until
		}
		return
	}
	bs, n := o.scopes(op)
	for _, b := range bs[:n] {
		if b != &o.requests {
			b.pause(until)
		}
	}
}

// requeueLocked puts an op whose call must be made again back in its queue.
// Edits requested meanwhile merge into it: it keeps its place (its seq) and
// sends the latest text.
func (o *Outbox) requeueLocked(op *op) {
	th := op.th
	switch op.kind {
	case opPost:
		m := op.msg
		m.post = op
		if e := m.edit; e != nil {
			m.edit = nil
			th.edits = removeOp(th.edits, e)
			o.absorbLocked(op, e)
		}
	case opEdit:
		m := op.msg
		if e := m.edit; e != nil {
			th.edits = removeOp(th.edits, e)
			o.absorbLocked(op, e)
		}
		m.edit = op
		th.edits = append(th.edits, op)
	}
	// Lane ops and reactions never left their queues.
}

// absorbLocked merges a newer op into an older one of the same message.
// Every Flush counting the newer op also counts the older one, which still
// has to go out, so the newer one is retired.
func (o *Outbox) absorbLocked(into, from *op) {
	into.text = from.text
	into.prio = max(into.prio, from.prio)
	into.final = into.final || from.final
	o.doneLocked(from)
}

// backoff is the wait before retry n (1-based): Backoff doubling up to 30 s,
// plus up to a quarter of jitter so threads that failed together do not
// retry together.
func (o *Outbox) backoff(n int) time.Duration {
	d := o.cfg.Backoff << min(n-1, 10)
	d = min(d, 30*time.Second)
	return d + rand.N(d/4+1)
}

// transient says whether a failed call is worth retrying: timeouts, broken
// or closed connections, and errors that say so (slack-go's StatusCodeError has
// Retryable; net errors have Timeout). Adapters should return errors with a
// Retryable() bool method for 5xx responses.
func transient(err error) bool {
	// EOF: the connection closed before an answer, as a timeout would
	// leave it; the post may have been made (see chat.OncePoster).
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return ne.Timeout()
	}
	return false
}
