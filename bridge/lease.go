package bridge

// Replicas. Several bridges may share one Store (PostgreSQL), each with its
// own Lease.Owner. A bridge runs a thread only while it holds the thread's
// lease (storage.LeaseStore); every write its owner goroutine makes of the
// thread's session entries, runs, status messages and answers carries the
// lease (leasedStore), and the store refuses it once another replica took the
// thread over. Input reaches the owner whichever replica received it: the
// receiver stores it and claims the thread if nobody holds it; otherwise the
// owner hears of it (storage.InboundNotifier) or finds it when it polls. A
// replica also polls for threads with work and no live lease (a replica died,
// or gave them up) and takes them over, recovering each as a restart would:
// its cut-off run reported, its answers posted, its queued input replayed,
// its workspace rebuilt from the pushed branch.
//
// The lease keeper, the input watcher and the takeover reach a thread's
// owner only through its inbox (a lease lost, news of stored input) and its
// lease value, which the keeper renews in place: a message for each renewal
// would wake every idle owner every Renew and keep it from being evicted.
// What the other goroutines know of the lease is the thread's leaseGuard.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/storage"
)

// LeaseConfig makes a bridge one of several replicas sharing its Store.
type LeaseConfig struct {
	// Owner names this replica in the leases it takes; it must differ from
	// every other replica's, and from this replica's previous runs (NewOwner
	// makes one). Empty: the bridge is the only one on its store (SQLite),
	// takes no leases and recovers every thread at start.
	Owner string
	// TTL is how long a lease lasts without renewal (default 30s); Renew how
	// often this replica renews its leases (default TTL/3); Poll how often it
	// looks for unowned threads and input it was not told of (default 2s, or
	// Renew if shorter: two indexed queries).
	TTL, Renew, Poll time.Duration
}

// NewOwner returns a lease owner name unique to this process: host, pid and
// a random suffix.
func NewOwner() string {
	host, _ := os.Hostname()
	var r [4]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

func (c *LeaseConfig) setDefaults() {
	if c.TTL <= 0 {
		c.TTL = 30 * time.Second
	}
	if c.Renew <= 0 || c.Renew >= c.TTL {
		c.Renew = c.TTL / 3
	}
	if c.Poll <= 0 {
		c.Poll = min(c.Renew, 2*time.Second)
	}
}

func (b *Bridge) leasing() bool { return b.cfg.Lease.Owner != "" }

// leasedStore is the store as a thread's owner writes to it: its writes
// carry the thread's lease and are refused (storage.ErrFenced) once another
// replica holds the thread.
type leasedStore struct {
	storage.Store
	lease storage.Lease
	lost  func() // called when a write was fenced
}

// A session's store takes snapshots when its runs end (not fenced: a
// snapshot repeats only what the entries hold).
var _ agent.Snapshotter = leasedStore{}

func (s leasedStore) with(ctx context.Context) context.Context {
	return storage.WithLease(ctx, s.lease)
}

func (s leasedStore) check(err error) error {
	if errors.Is(err, storage.ErrFenced) {
		s.lost()
	}
	return err
}

func (s leasedStore) AppendEntries(ctx context.Context, sessionID string, es []transcript.Entry) error {
	return s.check(s.Store.AppendEntries(s.with(ctx), sessionID, es))
}

func (s leasedStore) StartRun(ctx context.Context, threadID int64, sessionID string, inboundID int64) (int64, error) {
	id, err := s.Store.StartRun(s.with(ctx), threadID, sessionID, inboundID)
	return id, s.check(err)
}

func (s leasedStore) FinishRun(ctx context.Context, runID int64, outcome storage.RunOutcome) error {
	return s.check(s.Store.FinishRun(s.with(ctx), runID, outcome))
}

func (s leasedStore) InterruptRuns(ctx context.Context) ([]storage.Run, error) {
	runs, err := s.Store.InterruptRuns(s.with(ctx))
	return runs, s.check(err)
}

func (s leasedStore) RecordOutbound(ctx context.Context, o storage.Outbound) (int64, error) {
	id, err := s.Store.RecordOutbound(s.with(ctx), o)
	return id, s.check(err)
}

func (s leasedStore) UpdateOutbound(ctx context.Context, id int64, text string) error {
	return s.check(s.Store.UpdateOutbound(s.with(ctx), id, text))
}

func (s leasedStore) RecordPendingPosts(ctx context.Context, posts []storage.PendingPost) ([]int64, error) {
	ids, err := s.Store.RecordPendingPosts(s.with(ctx), posts)
	return ids, s.check(err)
}

// claim takes the thread's lease for its new owner goroutine, and recovers
// what a previous owner left. It reports whether the thread is this
// replica's; if not, its holder gets the input (the receiver stored it).
func (t *thread) claim() bool {
	b := t.b
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.Lease.TTL)
	defer cancel()
	asked := b.cfg.Now()
	l, ok, err := b.cfg.Store.AcquireLease(ctx, t.rec.ID, b.cfg.Lease.Owner, b.cfg.Lease.TTL)
	if err != nil {
		t.log.Warn("taking the thread's lease", "err", err)
		return false
	}
	if !ok {
		t.log.Debug("thread is owned by another replica", "owner", l.Owner)
		return false
	}
	l = b.ownDeadline(l, asked)
	t.lease.Store(&l)
	// What this owner queued is not sent once another replica holds the
	// thread (it was paused past its lease, say): the new owner shows it.
	g := t.postGuard
	g.check.Store(nil) // the looks at the store were of another lease
	g.remove = t.p.Outbox.Guard(t.ref, g.ok)
	// A refused write is news of a takeover too: the thread ends.
	t.store = leasedStore{Store: b.cfg.Store, lease: l, lost: func() { g.lose(&l) }}
	t.saver.store = t.store
	b.cfg.Metrics.Lease("acquired")
	prev := b.releasedFence(t.rec.ID)
	t.log.Debug("took the thread's lease", "fence", l.Fence)
	if prev != l.Fence-1 {
		// Another replica held it last (or this one, before a restart):
		// recover as a start would.
		t.recoverOwned(ctx)
	}
	t.takePending(ctx)
	return true
}

// ownDeadline returns l as this replica keeps it: Expires is when the lease
// runs out by this replica's clock, asked (b.cfg.Now before asking the store;
// time.Now carries the monotonic clock, which a step of the system clock
// does not move) plus the TTL. The store's Expires is the store's clock (the
// database server's, with replicas), which this one's may be minutes off;
// the deadline comes no later than the store's expiry, so the replica stops
// posting for the thread before another replica may take it.
func (b *Bridge) ownDeadline(l storage.Lease, asked time.Time) storage.Lease {
	l.Expires = asked.Add(b.cfg.Lease.TTL)
	return l
}

// recoverOwned reports the run the previous owner left cut off (and pushes
// its work from the pushed branch), and posts the answers it stored and
// never saw accepted.
func (t *thread) recoverOwned(ctx context.Context) {
	b := t.b
	since := b.storedBefore(ctx)
	// The notices are stored before the runs are marked: a replica that
	// dies in between leaves both to the next owner.
	if all, err := b.cfg.Store.ThreadRuns(ctx, t.rec.ID); err == nil {
		for _, r := range all {
			if r.Outcome == "" {
				recordInterrupted(ctx, t.store, r, t.log)
			}
		}
		if n := len(all); n > 0 && all[n-1].Outcome == storage.RunWaiting && all[n-1].SessionID == t.rec.SessionID {
			// Its input is answered once the model is back, before what
			// the thread queued behind it (takePending, after this).
			defer t.awaitStored(all[n-1])
		}
	}
	runs, err := t.store.InterruptRuns(ctx)
	if err != nil {
		t.log.Error("marking the previous owner's runs interrupted", "err", err)
	}
	b.recoverAnswers(ctx, since, t.rec.ID)
	for _, r := range runs {
		r.Thread = t.rec.Key
		b.reportInterrupted(t.p, r)
		if t.rec.Repo != "" {
			t.resumeInterrupted(r)
		}
	}
}

// takePending hands the owner the thread's stored input it has not taken
// yet, in order, ahead of what its inbox holds (which it takes once). The
// news of input told so far is of input stored before it: this look covers
// it (onInputNews).
func (t *thread) takePending(ctx context.Context) {
	t.newsSeen = t.b.newsTold()
	ins, err := t.b.cfg.Store.PendingInbound(ctx, t.rec.ID)
	if err != nil {
		t.log.Warn("loading the thread's queued input", "err", err)
		return
	}
	var fresh []*pendingInput
	for _, in := range ins {
		if t.taken[in.ID] == nil {
			fresh = append(fresh, &pendingInput{id: in.ID, in: inboundFromStore(t.rec, in), queue: in.Queue})
		}
	}
	t.requeueFront(fresh)
}

// take reports whether the owner may handle pi: one copy of each stored
// input (the receiver's, or one read from storage), as often as routing
// hands that copy back (parked, held).
func (t *thread) take(pi *pendingInput) bool {
	if !t.b.leasing() || pi.id == 0 {
		return true
	}
	if first := t.taken[pi.id]; first != nil && first != pi {
		return false
	}
	t.taken[pi.id] = pi
	return true
}

// onLeaseLost ends a thread whose lease is lost (a write or a renewal was
// refused, or it ran out unrenewed; the guard refuses its posts already):
// its run is stopped without a word (the new owner reports it), and it
// writes nothing more (its writes would be refused anyway).
func (t *thread) onLeaseLost(l *storage.Lease) {
	if t.gone {
		return
	}
	t.gone = true
	t.lease.Store(nil)
	t.log.Warn("lost the thread to another replica; stopping here", "fence", l.Fence)
	t.b.cfg.Metrics.Lease("lost")
	t.stopRendering()
	t.cancelWaiting()
	t.abandonRun()
	t.abandonPushes()
}

// owned reports, on the owner, whether the thread is still this replica's,
// with at least margin left on its lease: always without leases; not once
// the lease was lost. A lease that ran out by the local clock is checked
// with the store first (leaseGuard.holds).
func (t *thread) owned(ctx context.Context, margin time.Duration) bool {
	if !t.b.leasing() {
		return true
	}
	return !t.gone && t.postGuard.holds(ctx, margin)
}

// leaseGuard is a thread's lease as the goroutines other than its owner see
// it: the outbox asks it before each call for the thread (claim registers
// it), and whoever learns that the lease is lost tells it (lose). Once the
// lease is lost it refuses everything, and no longer keeps the owner (its
// session, its view) in memory: the outbox may keep the guard past the
// owner.
type leaseGuard struct {
	owner  atomic.Pointer[thread]     // nil once the lease is lost
	check  atomic.Pointer[leaseCheck] // the last look at the store (holds)
	remove func()                     // drops the guard from the outbox (owner; nil: not there)
}

func newLeaseGuard(t *thread) *leaseGuard {
	g := &leaseGuard{}
	g.owner.Store(t)
	return g
}

// leaseCheck is one look at the store for a lease that ran out by the
// local clock: the callers that need one meanwhile wait for its answer, and
// take it while it stands.
type leaseCheck struct {
	done  chan struct{}  // closed once the fields below are set
	lease *storage.Lease // the lease renewed; nil: refused, or the store could not say
	retry time.Time      // the store could not say: no other look before this
}

// stands reports whether c answers a caller at now that needs margin left
// on the lease: while it is under way, and after that while the lease it
// renewed has margin left or until its retry time.
func (c *leaseCheck) stands(now time.Time, margin time.Duration) bool {
	select {
	case <-c.done:
	default:
		return true
	}
	if c.lease != nil {
		return now.Add(margin).Before(c.lease.Expires)
	}
	return now.Before(c.retry)
}

// ok is the outbox's question: may the call for the thread be made.
func (g *leaseGuard) ok(ctx context.Context) bool { return g.holds(ctx, 0) }

// lost reports whether the thread's lease is known lost (false without
// leases).
func (g *leaseGuard) lost() bool { return g != nil && g.owner.Load() == nil }

// lose records, from any goroutine, that lease l of the thread was refused
// or ran out: the guard refuses everything from now on, and the owner hears
// of it, once.
func (g *leaseGuard) lose(l *storage.Lease) {
	if t := g.owner.Swap(nil); t != nil {
		t.post(msgLeaseLost{l})
	}
}

// holds reports, from any goroutine, whether the thread's lease is still
// this replica's with at least margin left: always without leases (g nil);
// not once it is lost. A lease that ran out by the local clock (the process
// was paused, the store out of reach) is renewed with the store on the
// caller's goroutine: a refusal is the news that the thread was taken over.
// It is asked before every call the outbox makes for the thread, so the
// common case is two atomic loads and a clock read. One look at a time: the
// others wait for its answer. After a store that could not answer, none for
// a Renew: the thread's calls (one per streamed edit) must not each wait on
// an unreachable store; the fenced writes still catch a loss.
func (g *leaseGuard) holds(ctx context.Context, margin time.Duration) bool {
	if g == nil {
		return true
	}
	t := g.owner.Load()
	if t == nil {
		return false
	}
	l := t.lease.Load()
	now := t.b.cfg.Now()
	if l == nil || now.Add(margin).Before(l.Expires) {
		return true // nil: released as the owner ends
	}
	c := g.check.Load()
	if c == nil || !c.stands(now, margin) {
		nc := &leaseCheck{done: make(chan struct{})}
		if g.check.CompareAndSwap(c, nc) {
			g.look(ctx, t, l, nc)
		}
		if c = g.check.Load(); c == nil {
			return g.owner.Load() != nil // a new lease was taken meanwhile
		}
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return false
	}
	return g.owner.Load() != nil
}

// look renews l with the store for c's callers. The renewed lease stays in
// c: the lease keeper stores renewals in the thread's lease.
func (g *leaseGuard) look(ctx context.Context, t *thread, l *storage.Lease, c *leaseCheck) {
	defer close(c.done)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	asked := t.b.cfg.Now()
	nl, err := t.b.cfg.Store.RenewLease(rctx, *l, t.b.cfg.Lease.TTL)
	switch {
	case err == nil:
		nl = t.b.ownDeadline(nl, asked)
		c.lease = &nl
	case errors.Is(err, storage.ErrFenced):
		g.lose(l)
	default:
		// The store cannot say: its writes will be refused if the thread
		// was lost, and shown otherwise.
		c.retry = t.b.cfg.Now().Add(t.b.cfg.Lease.Renew)
		t.log.Warn("checking the thread's lease", "err", err)
	}
}

// endGuard drops the guard from the outbox as the owner ends (close). A
// thread that was lost stays refused; another owner of the thread here
// registers its own guard (claim).
func (t *thread) endGuard() {
	g := t.postGuard
	if g == nil || g.lost() || g.remove == nil {
		return
	}
	g.remove()
	g.remove = nil
}

// releaseLease gives the thread up (shutdown, eviction): another replica
// may take it at once.
func (t *thread) releaseLease() {
	l := t.lease.Swap(nil)
	if l == nil || t.gone || t.postGuard.lost() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.b.cfg.Store.ReleaseLease(ctx, *l); err != nil {
		t.log.Warn("giving up the thread's lease", "err", err)
		return
	}
	if g := t.postGuard; g.remove != nil {
		g.remove()
		g.remove = nil
	}
	t.b.noteReleased(l.ThreadID, l.Fence)
	t.b.cfg.Metrics.Lease("released")
}

// releasedFence is the fence of this replica's last release of the thread
// (0: none).
func (b *Bridge) releasedFence(threadID int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, _ := b.released.Get(threadID)
	return f
}

func (b *Bridge) noteReleased(threadID, fence int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.released.Put(threadID, fence)
}

// keepLeases renews this replica's leases every Renew, in place (the
// thread's lease value), and ends the threads whose lease is lost: taken
// over, or expired while the store could not be reached (another replica may
// hold it by now). The owner hears of a loss through its inbox; the guard
// refuses the thread's posts at once.
func (b *Bridge) keepLeases(ctx context.Context) {
	tick := time.NewTicker(b.cfg.Lease.Renew)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, t := range b.liveThreads() {
			l := t.lease.Load()
			if l == nil {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, b.cfg.Lease.Renew)
			asked := b.cfg.Now()
			nl, err := b.cfg.Store.RenewLease(rctx, *l, b.cfg.Lease.TTL)
			cancel()
			switch {
			case err == nil:
				nl = b.ownDeadline(nl, asked)
				t.lease.CompareAndSwap(l, &nl) // unless the owner released it meanwhile
			case errors.Is(err, storage.ErrFenced) || b.cfg.Now().After(l.Expires):
				t.postGuard.lose(l)
			case ctx.Err() == nil:
				t.log.Warn("renewing the thread's lease", "err", err, "expires", l.Expires)
			}
		}
	}
}

// liveThreads returns the thread owners of this replica.
func (b *Bridge) liveThreads() []*thread {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*thread, 0, len(b.threads))
	for _, t := range b.threads {
		out = append(out, t)
	}
	return out
}

// watchInput has the owner of a thread take input another replica received:
// at once when the store says so (InboundNotifier), and every Poll for what
// a lost notification missed; on the same poll it claims the threads with
// work that nobody owns.
func (b *Bridge) watchInput(ctx context.Context) {
	listening := make(chan struct{})
	defer func() { <-listening }() // Shutdown waits for the listener too
	go func() {
		defer close(listening)
		_ = b.cfg.Store.ListenInbound(ctx, func(threadID int64) {
			b.mu.Lock()
			if b.heard != nil {
				close(b.heard) // threadStored's waiters look again
				b.heard = nil
			}
			b.mu.Unlock()
			b.nudge(threadID)
		})
	}()
	b.takeOver(ctx)
	tick := time.NewTicker(b.cfg.Lease.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b.pollInput(ctx)
		b.takeOver(ctx)
	}
}

// replyWait is how long a reply in a thread the store does not know waits
// for the thread to appear: another replica may be storing the mention that
// starts it (Slack spreads a thread's events over the replicas). Well within
// Slack's 3 s to acknowledge.
const replyWait = 1500 * time.Millisecond

// threadStored reports whether the store has the thread, not closed (a
// closed thread takes a mention, not a reply); with wait, it
// waits up to replyWait for it to appear: it looks again when the store's
// notifier tells of accepted input (the mention that starts a thread is
// accepted just after the thread is stored), and once more at the end, for a
// notification that was lost. Most replies it sees are in threads the bot is
// not in: each costs two store queries, not one every few milliseconds.
func (b *Bridge) threadStored(ctx context.Context, ref chat.ThreadRef, wait bool) (bool, error) {
	deadline := time.NewTimer(replyWait)
	defer deadline.Stop()
	last := false
	for {
		b.mu.Lock()
		if b.heard == nil {
			b.heard = make(chan struct{})
		}
		heard := b.heard
		b.mu.Unlock()
		rec, err := b.cfg.Store.GetThread(ctx, storeKey(ref))
		if err == nil {
			return rec.State != storage.ThreadClosed, nil
		}
		if !errors.Is(err, storage.ErrNotFound) || !wait || last {
			return false, notFoundIsNil(err)
		}
		select {
		case <-heard:
		case <-deadline.C:
			last = true
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// pollInput hands each owned thread with stored input its input.
func (b *Bridge) pollInput(ctx context.Context) {
	pending, err := b.cfg.Store.AllPendingInbound(ctx)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("polling for queued input", "err", err)
		}
		return
	}
	seen := map[int64]bool{}
	for _, in := range pending {
		if !seen[in.ThreadID] {
			seen[in.ThreadID] = true
			b.nudge(in.ThreadID)
		}
	}
}

// nudge tells the thread's owner, if this replica runs it, that the thread
// has stored input it may not have taken yet. Each piece of news has a
// number; the owner skips the news its last look at the store covers
// (onInputNews), so that a burst of input (each accepted message is news, on
// every replica) costs a busy owner one store query, not one each.
func (b *Bridge) nudge(threadID int64) {
	b.mu.Lock()
	t := b.byID[threadID]
	b.news++
	n := b.news
	b.mu.Unlock()
	if t != nil {
		t.post(msgInputNews{n})
	}
}

// newsTold is the number of the last news of input told to an owner.
func (b *Bridge) newsTold() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.news
}

// onInputNews takes the thread's stored input on news n of it, unless the
// owner looked at the store after the news was told (the input was stored
// before it), or holds no lease (it gives the thread up).
func (t *thread) onInputNews(n int64) {
	if n <= t.newsSeen || t.lease.Load() == nil {
		return
	}
	t.takePending(t.b.ctx)
}

// takeOver claims the threads that have work and no live lease.
func (b *Bridge) takeOver(ctx context.Context) {
	ids, err := b.cfg.Store.UnownedThreads(ctx)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("looking for threads without an owner", "err", err)
		}
		return
	}
	for _, id := range ids {
		b.mu.Lock()
		live := b.byID[id] != nil || b.closing
		b.mu.Unlock()
		if live {
			continue
		}
		rec, err := b.cfg.Store.ThreadByID(ctx, id)
		if err != nil {
			b.log.Warn("loading a thread to take over", "thread_id", id, "err", err)
			continue
		}
		p := b.platforms[rec.Key.Platform]
		if p == nil {
			continue
		}
		b.log.Info("taking over a thread without an owner", "thread", refOf(rec.Key).Key())
		b.dispatchItem(p, rec, func(*thread) message { return nil })
	}
}

// notFoundIsNil is err, but nil for storage.ErrNotFound.
func notFoundIsNil(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}
