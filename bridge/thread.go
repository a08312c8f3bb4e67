package bridge

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/execqueue"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// thread owns one chat thread: its session, workspace and run. Its state
// is confined to its owner: the inbox's goroutine, which handles one message
// at a time (handle); other goroutines reach it only by posting messages. It
// is made of parts, each written in its own file:
//
//   - inbox (thread_inbox.go): the messages and the queue they wait in;
//     any goroutine may post.
//   - owner (thread.go): the dispatch of messages, the owner's start, idle
//     eviction, shutdown and end.
//   - routing (thread_input.go, thread_slots.go): what becomes of each
//     accepted message.
//   - lifecycle (thread_run.go, push.go): the run in progress and the pushes
//     after it, its end, timeout and push results reaching the owner as
//     messages.
//   - rendering (thread_render.go, view.go, saver.go): what the thread shows.
//   - planning (plan.go): a plan being made or waiting for a decision.
//   - repoPick (repopick.go): requests held while the thread's repository
//     is being chosen.
//   - modelWait (thread_modelwait.go): input waiting for the model to
//     answer again.
//
// The rest is the session and its workspace, set up by open (session.go),
// and the thread's lease when the bridge is a replica (lease.go).
type thread struct {
	b   *Bridge
	p   *platform
	ref chat.ThreadRef
	log *slog.Logger

	inbox *execqueue.Queue[message]
	owner

	routing
	lifecycle
	rendering
	planning
	repoPick
	modelWait

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
	// The session and its resources (owner goroutine).
	rec         storage.Thread
	sess        *agent.Session
	unsubscribe func()
	ws          *workspace.Workspace
	tws         *tools.Workspace
	mcp         *mcptool.Set // the session's MCP servers, or nil
	prNoted     bool         // the thread was told why it gets no pull request (pullrequest.go)
}

// owner is the state of the owner itself (thread.go).
type owner struct {
	lastActive time.Time   // when the owner last handled a message (idle eviction)
	idleTimer  *time.Timer // posts msgIdleTick
	// stopping is the shutdown's deadline once msgStop came: no new run
	// starts; the active run may go on until it ends (stopDue).
	stopping  context.Context
	stopDue   bool
	stopWatch func() bool // stops the deadline's msgStopDeadline
	// working counts commands' work off the owner not done yet
	// (background): the session and workspace stay open for it.
	working int
	forgot  bool // the bridge forgot the thread (gone): it ends once working is 0
	ended   bool // the owner ended: what the inbox still holds is dropped
}

func newThread(b *Bridge, p *platform, ref chat.ThreadRef, rec storage.Thread) *thread {
	log := b.log.With("platform", ref.Platform, "thread", ref.Key())
	t := &thread{
		b:         b,
		p:         p,
		ref:       ref,
		log:       log,
		routing:   routing{acks: map[string]queuedAck{}},
		rendering: rendering{saver: newStatusSaver(b.cfg.Store, log)},
		rec:       rec,
		taken:     map[int64]*pendingInput{},
		store:     b.cfg.Store,
	}
	t.inbox = &execqueue.Queue[message]{Run: t.handle, Log: log, Name: messageName}
	if b.leasing() {
		t.postGuard = newLeaseGuard(t)
	}
	return t
}

// shutdown asks the owner to finish, before anything it has not started: the
// active run may go on until ctx ends.
func (t *thread) shutdown(ctx context.Context) { t.inbox.AddFront(msgStop{ctx}) }

// handle is the owner: it passes each message to the part that owns it.
func (t *thread) handle(m message) {
	if t.ended || (t.gone && !whileGone(m)) || (t.stopping != nil && !whileStopping(m)) {
		t.drop(m)
		return
	}
	switch m := m.(type) {
	case msgStart:
		t.start()
	case msgInput:
		t.handleInput(m.pi)
	case msgEvent:
		t.sessionEvent(m.sess, m.ev)
	case msgHook:
		m.reply <- t.hookState()
	case msgCommandDone:
		t.commandDone(m)
	case msgRunEnded:
		t.runEnded(m.r)
	case msgRunTimeout:
		t.runTimedOut(m.r)
	case msgStatusTick:
		t.statusTick(m.r)
	case msgSlotGranted:
		t.slotGranted()
	case msgPushDone:
		t.pushFinished(m.job)
	case msgPushRetry:
		t.pushRetryDue()
	case msgReset:
		t.reset(m.ctx)
	case msgResume:
		t.resumeInterrupted(m.r)
	case msgToolsChanged:
		t.refreshTools()
	case msgMCPDown:
		t.mcpDown(m.server, m.err)
	case msgLeaseLost:
		t.onLeaseLost(m.l)
	case msgInputNews:
		t.onInputNews(m.n)
	case msgRerender:
		t.rerender(m.n)
	case msgSay:
		t.say(m.text)
	case msgMenuPosted:
		t.menuPosted(m)
	case msgModelBack:
		t.modelBack()
	case msgAwaitStored:
		t.awaitStored(m.r)
	case msgIdleTick:
		t.idleTick()
		return
	case msgStop:
		t.stop(m.ctx)
	case msgStopDeadline:
		t.stopDeadline()
	default:
		if p, ok := m.(interface{ runOnOwner() }); ok {
			p.runOnOwner() // tests: code run as the owner
			break
		}
		t.log.Error("unknown message to a thread's owner", "type", messageName(m))
	}
	t.lastActive = time.Now()
	t.afterMessage()
}

// whileStopping says whether the owner of a thread shutting down handles m:
// what finishes the run and its pushes. Input and other work wait in storage
// for the next start.
func whileStopping(m message) bool {
	switch m.(type) {
	case msgEvent, msgHook, msgCommandDone, msgRunEnded, msgRunTimeout, msgStatusTick, msgPushDone, msgLeaseLost, msgStopDeadline, msgRerender, msgSay, msgMenuPosted:
		return true
	}
	return false
}

// whileGone says whether the owner of a thread another replica has handles
// m: the end of its commands' work, which it waits for.
func whileGone(m message) bool {
	switch m.(type) {
	case msgHook, msgCommandDone:
		return true
	}
	return false
}

// drop disposes of a message the owner does not handle: input is in storage
// for the next start or the thread's holder; a run slot handed over is given
// back.
func (t *thread) drop(m message) {
	switch m := m.(type) {
	case msgSlotGranted:
		t.releaseSlot()
	case msgHook:
		m.reply <- hookState{}
	}
}

// afterMessage ends the owner when the thread is gone (another replica has
// it) or a shutdown has nothing left to wait for; either waits for the work
// of commands off the owner.
func (t *thread) afterMessage() {
	switch {
	case t.ended:
	case t.gone:
		if !t.forgot {
			t.forgot = true
			t.b.forget(t)
		}
		if t.working == 0 {
			t.end(false)
		}
	case t.stopping != nil && !t.running() && (t.pushing == nil || t.stopDue) && t.working == 0:
		t.end(false)
	}
}

// background runs a command's slow work off the owner; what it returns
// comes back as msgCommandDone. The thread is not idle meanwhile.
func (t *thread) background(work func() msgCommandDone) {
	t.working++
	go func() {
		var done msgCommandDone
		defer func() { t.post(done) }()
		done = work()
	}()
}

// commandDone takes the result of a command's work off the owner.
func (t *thread) commandDone(m msgCommandDone) {
	t.working--
	if m.pr != nil {
		line := t.prDone(*m.pr)
		if line == "" {
			line = "🔀 No pull request."
		}
		t.say(line)
	}
	if m.diff != nil {
		t.showDiff(*m.diff)
	}
	if m.say != "" {
		t.say(m.say)
	}
}

// start is the owner's first message: new owners wait at the intake gate,
// then a replica takes the thread's lease.
func (t *thread) start() {
	t.b.intake.wait(t.b.shut)
	t.b.cfg.Metrics.ThreadLoaded()
	if t.b.leasing() && !t.claim() {
		t.b.forget(t) // the lease's holder takes the input
		t.end(false)
		return
	}
	t.idleTimer = time.AfterFunc(t.b.cfg.IdleEvict, func() { t.post(msgIdleTick{}) })
}

// idleTick evicts the thread when nothing happened in it for IdleEvict and
// it is idle, else looks again later.
func (t *thread) idleTick() {
	evict := t.b.cfg.IdleEvict
	if wait := evict - time.Since(t.lastActive); wait > 0 {
		t.idleTimer.Reset(wait)
		return
	}
	if t.idle() {
		switch evicted, lost := t.tryEvict(); {
		case evicted:
			t.log.Debug("evicted idle thread")
			t.end(true)
			return
		case lost:
			t.b.forget(t)
			t.end(false)
			return
		}
	}
	t.lastActive = time.Now()
	t.idleTimer.Reset(evict)
}

// idle reports whether the thread may be evicted: nothing of it works on. A
// thread holding requests until its repository is chosen, or waiting for
// the model, keeps them in memory. A !compact or !diff in the background, or a push in flight, still use the
// session and workspace (a run the session starts by itself after a
// compaction is news in the inbox, which keeps the thread from eviction); an
// owner started after an eviction would be a second writer on them, and
// entries with the same sequence numbers would be lost.
func (t *thread) idle() bool {
	return !t.running() && !t.awaiting && t.pushing == nil && t.retry.timer == nil && !t.waitingForSlot() && t.working == 0 && len(t.unchosen) == 0
}

// tryEvict evicts an idle thread, and reports whether it did. A replica
// gives up the thread's lease first, so that another may take it at once;
// if input came meanwhile, the thread stays and takes the lease again, or
// is lost when another replica took it.
func (t *thread) tryEvict() (evicted, lost bool) {
	leased := t.lease.Load() != nil
	if leased {
		t.releaseLease()
	}
	if t.b.evict(t) {
		return true, false
	}
	return false, leased && !t.claim()
}

// stop begins the shutdown: no new run; the owner ends once the active run
// and its pushes are done, or at ctx's end (stopDeadline).
func (t *thread) stop(ctx context.Context) {
	if t.stopping != nil {
		return
	}
	t.stopping = ctx
	t.stopWatch = context.AfterFunc(ctx, func() { t.post(msgStopDeadline{}) })
}

// stopDeadline runs when the shutdown's deadline passed: the active run is
// stopped and reported as interrupted (runEnded) once it ends, or after
// runWindDown if it does not; a push cut off leaves its runs open, and the
// next start pushes their work.
func (t *thread) stopDeadline() {
	t.stopDue = true
	if t.running() {
		t.interruptRun()
		return
	}
	if t.pushing != nil {
		t.log.Warn("shutting down with a push in flight; it is retried at the next start")
	}
}

// end ends the owner: later messages are dropped, and the thread's session
// and workspace are released.
func (t *thread) end(evicted bool) {
	t.ended = true
	t.inbox.Close()
	if t.idleTimer != nil {
		t.idleTimer.Stop()
	}
	if t.stopWatch != nil {
		t.stopWatch()
	}
	t.stopPushRetry()
	t.b.cfg.Metrics.ThreadUnloaded(evicted)
	t.close()
	t.b.wg.Done()
}

// close releases the thread's session and workspace.
func (t *thread) close() {
	t.closeWork(context.Background())
	t.saver.close()
	// Last: the session wrote what it had under the lease.
	t.releaseLease()
	t.endGuard()
}

// closeWork closes the thread's session, its tools and its workspace, and
// forgets them.
func (t *thread) closeWork(ctx context.Context) {
	if t.sess != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := t.sess.Close(cctx); err != nil {
			t.log.Warn("closing session", "err", err)
		}
		cancel()
		t.unsubscribe()
		t.sess, t.unsubscribe = nil, nil
	}
	if t.mcp != nil {
		_ = t.mcp.Close()
		t.mcp = nil
	}
	if t.tws != nil {
		_ = t.tws.Close()
		t.tws = nil
	}
	if t.ws != nil {
		_ = t.ws.Close()
		t.ws = nil
	}
}
