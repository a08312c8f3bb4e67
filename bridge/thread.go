package bridge

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// thread owns one chat thread: its session, workspace and run. It is made of
// parts with single owners, each in its own file:
//
//   - inbox (thread_inbox.go): the queue through which everything reaches the
//     owner goroutine; any goroutine may enqueue.
//   - routing (thread_input.go, thread_slots.go): what becomes of each
//     accepted message; the owner's, but for the acknowledgements, which the
//     session's event queue swaps on delivery.
//   - lifecycle (thread_run.go, push.go): the run in progress and the pushes
//     after it; the owner's, with a run's end, timeout and push result
//     reaching it as messages.
//   - rendering (thread_render.go, view.go, saver.go): what the thread shows.
//
// The rest is the session and its workspace, set up by open (session.go).
type thread struct {
	b   *Bridge
	p   *platform
	ref chat.ThreadRef
	log *slog.Logger

	inbox
	stop     chan struct{} // closed by shutdown
	stopOnce sync.Once
	stopCtx  context.Context // the shutdown deadline, set before stop closes

	routing
	lifecycle
	rendering

	// Replicas (lease.go). lease is the thread's lease while this replica
	// holds it: the one replica state read off the owner (the outbox's
	// guard reads it on the outbox's goroutines), hence atomic; the owner
	// sets and clears it, and the lease keeper stores each renewal in it.
	// postGuard (nil without leases, set once) is the lease as the other
	// goroutines see it. The rest is the owner's: whether the thread was
	// lost, the input ids it took, and the last news of input its look at
	// the store covers.
	lease     atomic.Pointer[storage.Lease]
	postGuard *leaseGuard
	gone      bool
	taken     map[int64]*pendingInput
	newsSeen  int64

	// store is the store as this thread writes to it: under its lease when
	// the bridge is a replica (leasedStore).
	store storage.Store
	// runRecorded is set while deliver hands input to the session: closed
	// once the run it may start is recorded (StartRun). The session's
	// before_agent_start hook waits for it, so that the run's prompt — whose
	// append marks the input delivered — is never stored before its run: a
	// crash between the two left input delivered with no run to report as
	// interrupted, and the person was never told.
	runRecorded atomic.Pointer[chan struct{}]

	// The session and its resources (owner goroutine).
	rec         storage.Thread
	sess        *agent.Session
	unsubscribe func()
	ws          *workspace.Workspace
	tws         *tools.Workspace
	mcp         *mcptool.Set // the session's MCP servers, or nil
	prNoted     atomic.Bool  // the thread was told why it gets no pull request (owner and !pr's goroutine)
	bg          bgGroup      // command goroutines (diff, compact, pr)
}

func newThread(b *Bridge, p *platform, ref chat.ThreadRef, rec storage.Thread) *thread {
	log := b.log.With("platform", ref.Platform, "thread", ref.Key())
	t := &thread{
		b:         b,
		p:         p,
		ref:       ref,
		log:       log,
		inbox:     inbox{wake: make(chan struct{}, 1)},
		stop:      make(chan struct{}),
		routing:   routing{acks: map[string]queuedAck{}},
		lifecycle: lifecycle{pushDone: make(chan *pushJob, 1)},
		rendering: rendering{saver: newStatusSaver(b.cfg.Store, log)},
		rec:       rec,
		taken:     map[int64]*pendingInput{},
		store:     b.cfg.Store,
	}
	if b.leasing() {
		t.postGuard = newLeaseGuard(t)
	}
	return t
}

// shutdown asks the owner to finish: the active run may go on until ctx ends.
func (t *thread) shutdown(ctx context.Context) {
	t.stopOnce.Do(func() {
		t.stopCtx = ctx
		close(t.stop)
	})
}

// loop is the owner goroutine.
func (t *thread) loop() {
	defer t.b.wg.Done()
	defer t.close()
	t.b.cfg.Metrics.ThreadLoaded()
	evicted := false
	defer func() { t.b.cfg.Metrics.ThreadUnloaded(evicted) }()
	if t.b.leasing() && !t.claim() {
		t.b.forget(t)
		t.dropItems()
		return
	}
	idle := time.NewTimer(t.b.cfg.IdleEvict)
	defer idle.Stop()
	for {
		var tick <-chan time.Time
		if t.statusTick != nil {
			tick = t.statusTick.C
		}
		// Shutting down: no new run, whatever else is ready (an owner
		// that waited at the intake gate finds its input and stop at once).
		select {
		case <-t.stop:
			t.drain()
			return
		default:
		}
		select {
		case <-t.wake:
			for {
				it, ok := t.next()
				if !ok {
					break
				}
				t.handle(it)
				if t.gone {
					t.b.forget(t)
					t.dropItems()
					return
				}
			}
		case <-tick:
			t.p.Outbox.SetStatus(t.ref, "is working…")
		case job := <-t.pushDone:
			t.pushFinished(job)
		case <-idle.C:
			if t.idle() && t.tryEvict() {
				t.log.Debug("evicted idle thread")
				evicted = true
				return
			}
			if t.gone {
				return
			}
		case <-t.stop:
			t.drain()
			return
		}
		idle.Reset(t.b.cfg.IdleEvict)
	}
}

// idle reports whether the thread may be evicted: nothing of it works on. A
// !compact or !diff in the background, or a push in flight, still use the
// session and workspace; an owner started after an eviction would be a
// second writer on them (sequence numbers collided and entries were lost).
func (t *thread) idle() bool {
	return t.run == nil && t.pushing == nil && len(t.waiting) == 0 && !t.bg.busy() && (t.sess == nil || !t.sess.IsRunning())
}

// tryEvict evicts an idle thread, and reports whether it did. A replica
// gives up the thread's lease first, so that another may take it at once;
// if input came meanwhile, the thread stays and takes the lease again.
func (t *thread) tryEvict() bool {
	leased := t.lease.Load() != nil
	if leased {
		t.releaseLease()
	}
	if t.b.evict(t) {
		return true
	}
	if leased && !t.claim() {
		t.gone = true
		t.b.forget(t)
		t.dropItems()
	}
	return false
}

// dropItems empties the inbox of an owner that ends without its thread:
// input is in storage for the thread's holder; a run slot handed over is
// given back.
func (t *thread) dropItems() {
	for {
		it, ok := t.next()
		if !ok {
			return
		}
		if it.slotGranted {
			t.releaseSlot()
		}
	}
}

// bgGroup is a WaitGroup that can also say whether anything is running.
type bgGroup struct {
	wg sync.WaitGroup
	n  atomic.Int32
}

func (g *bgGroup) Add(d int)  { g.n.Add(int32(d)); g.wg.Add(d) }
func (g *bgGroup) Done()      { g.n.Add(-1); g.wg.Done() }
func (g *bgGroup) Wait()      { g.wg.Wait() }
func (g *bgGroup) busy() bool { return g.n.Load() > 0 }

// handle passes a message to the part that owns it.
func (t *thread) handle(it item) {
	switch {
	case it.input != nil:
		t.handleInput(it.input)
	case it.runDone != nil:
		// That run, not whichever is current: a late end must not finish
		// the next one.
		if it.runDone == t.run && it.runDone.sess == t.sess {
			t.finishRun(t.b.ctx)
		}
	case it.runTimeout != nil:
		t.runTimedOut(it.runTimeout)
	case it.slotGranted:
		t.slotGranted()
	case it.leaseLost != nil:
		t.onLeaseLost(it.leaseLost)
	case it.inputNews != 0:
		t.onInputNews(it.inputNews)
	case it.fn != nil:
		it.fn()
	}
}

// drain finishes the thread for shutdown: the active run gets until the
// shutdown deadline, then is stopped and reported. Input still queued here is
// in storage and is replayed at the next start.
func (t *thread) drain() {
	ctx := t.stopCtx
	defer t.waitPushes(ctx)
	if t.run == nil {
		return
	}
	done := make(chan struct{})
	sess := t.sess
	go func() {
		_ = sess.Wait(ctx)
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.run.stopped = true
		sess.Abort()
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = sess.Wait(wctx)
		cancel()
		t.note("⚠️ This run was interrupted: the bot is restarting. Send a message to continue once it is back.")
		t.finishRunWith(context.Background(), storage.RunInterrupted, false)
		return
	}
	t.finishRun(context.Background())
}

// close releases the thread's session and workspace.
func (t *thread) close() {
	t.bg.Wait()
	if t.sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := t.sess.Close(ctx); err != nil {
			t.log.Warn("closing session", "err", err)
		}
		cancel()
		t.unsubscribe()
	}
	t.saver.close()
	if t.mcp != nil {
		_ = t.mcp.Close()
	}
	if t.tws != nil {
		_ = t.tws.Close()
	}
	if t.ws != nil {
		_ = t.ws.Close()
	}
	if t.statusTick != nil {
		t.statusTick.Stop()
	}
	// Last: the session wrote what it had under the lease.
	t.releaseLease()
	t.endGuard()
}
