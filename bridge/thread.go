package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// statusRefresh is how often the "working" indicator is re-sent during a run
// (Discord's typing indicator lasts 10 s).
const statusRefresh = 8 * time.Second

// loopGuard limits how many messages one thread takes per minute, so that two
// bots talking to each other cannot run up a bill.
const loopGuard = 30

// item is a unit of work for a thread's owner goroutine.
type item struct {
	input       *pendingInput
	runDone     *agent.Session // the session whose run ended
	slotGranted bool           // a run slot was handed to this thread (runSlots)
	fn          func()
}

// pendingInput is an accepted message waiting for its thread.
type pendingInput struct {
	id       int64 // storage inbound id
	in       chat.Inbound
	mode     storage.InboundMode
	replayed bool          // recovered from storage at start
	queue    storage.Queue // the queue it waited in before a restart, if any
	parked   bool          // waited for a run slot (it passed the guard already)
	granted  bool          // a run slot is held for it
}

// queuedAck is the reaction shown on a queued message until it is delivered.
type queuedAck struct {
	messageID string
	emoji     string
}

// activeRun is the run a thread is in.
type activeRun struct {
	id        int64
	inboundID int64
	request   string
	author    chat.Author
	timer     *time.Timer
	timedOut  bool
	stopped   bool
	slot      bool
}

// thread owns one chat thread: its session, workspace and run. Everything but
// the input queue and the acknowledgement map is touched only by its goroutine.
type thread struct {
	b   *Bridge
	p   *platform
	ref chat.ThreadRef
	log *slog.Logger

	qmu      sync.Mutex
	items    []item
	wake     chan struct{}
	stop     chan struct{} // closed by shutdown
	stopOnce sync.Once
	stopCtx  context.Context // the shutdown deadline, set before stop closes

	amu  sync.Mutex
	acks map[string]queuedAck // input id → reaction to swap on delivery

	requester atomic.Pointer[chat.Author] // who asked for the current prompt

	// Owner-goroutine state.
	rec           storage.Thread
	sess          *agent.Session
	unsubscribe   func()
	ws            *workspace.Workspace
	tws           *tools.Workspace
	mcp           *mcptool.Set // the session's MCP servers, or nil
	prNoted       bool         // the thread was told why it gets no pull request
	view          *view
	run           *activeRun
	unpushed      bool
	pushing       *pushJob      // the push in flight, if any (push.go)
	nextPush      *pushJob      // the push to start when it is done
	pushDone      chan *pushJob // its result, back to the owner
	pendingStatus *outbox.Message
	statusMsgText string
	statusTick    *time.Ticker
	recent        []time.Time
	held          []*pendingInput // input that arrived while a stopped run wound down
	waiting       []*pendingInput // input parked until a run slot frees (runSlots)
	current       *pendingInput   // the input being handled, for the commands it runs
	bg            bgGroup         // command goroutines (diff, compact, pr)
	saver         *statusSaver
}

func newThread(b *Bridge, p *platform, ref chat.ThreadRef, rec storage.Thread) *thread {
	t := &thread{
		b:    b,
		p:    p,
		ref:  ref,
		log:  b.log.With("platform", ref.Platform, "thread", ref.Key()),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		acks: map[string]queuedAck{},
		rec:  rec,

		pushDone: make(chan *pushJob, 1),
	}
	t.saver = newStatusSaver(b.cfg.Store, t.log)
	return t
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
	idle := time.NewTimer(t.b.cfg.IdleEvict)
	defer idle.Stop()
	for {
		var tick <-chan time.Time
		if t.statusTick != nil {
			tick = t.statusTick.C
		}
		select {
		case <-t.wake:
			for {
				it, ok := t.next()
				if !ok {
					break
				}
				t.handle(it)
			}
		case <-tick:
			t.p.Outbox.SetStatus(t.ref, "is working…")
		case job := <-t.pushDone:
			t.pushFinished(job)
		case <-idle.C:
			if t.idle() && t.b.evict(t) {
				t.log.Debug("evicted idle thread")
				evicted = true
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

// bgGroup is a WaitGroup that can also say whether anything is running.
type bgGroup struct {
	wg sync.WaitGroup
	n  atomic.Int32
}

func (g *bgGroup) Add(d int)  { g.n.Add(int32(d)); g.wg.Add(d) }
func (g *bgGroup) Done()      { g.n.Add(-1); g.wg.Done() }
func (g *bgGroup) Wait()      { g.wg.Wait() }
func (g *bgGroup) busy() bool { return g.n.Load() > 0 }

func (t *thread) handle(it item) {
	switch {
	case it.input != nil:
		t.handleInput(it.input)
	case it.runDone != nil:
		if it.runDone == t.sess && t.run != nil {
			t.finishRun(t.b.ctx)
		}
	case it.slotGranted:
		t.slotGranted()
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
		t.view.note("⚠️ This run was interrupted: the bot is restarting. Send a message to continue once it is back.")
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
}

// handleInput takes one accepted message to the session.
func (t *thread) handleInput(pi *pendingInput) {
	ctx := t.b.ctx
	in := pi.in
	name, _ := commandWord(in.Text)
	_, isCommand := commandHelp[name]
	startsRun := !isCommand || name == "steer" || name == "followup"

	if !pi.parked && !t.guard() {
		t.markInbound(pi.id, storage.InboundDropped, "too many messages in a minute")
		return
	}
	if reply, ok := unknownCommand(in.Text); ok {
		t.say(reply)
		t.markInbound(pi.id, storage.InboundDelivered, "")
		return
	}
	if startsRun && len(t.waiting) > 0 && !pi.granted {
		// Behind input that waits for a run slot: keep the order.
		pi.parked = true
		t.waiting = append(t.waiting, pi)
		return
	}
	if !startsRun && t.answerWhileWaiting(name, pi) {
		return
	}
	if startsRun && t.run != nil && t.run.stopped {
		// The run is winding down after !stop: this input must not join it
		// (it would sit in the stopped run's queue); it starts the next run.
		t.held = append(t.held, pi)
		return
	}
	slot := false
	if t.sess == nil {
		if isCommand && !startsRun && t.rec.SessionID == "" {
			t.say(noSessionReply(name))
			t.markInbound(pi.id, storage.InboundDelivered, "")
			return
		}
		if startsRun && t.rec.SessionID == "" && t.pendingStatus == nil {
			// The first answer a person sees comes before the workspace exists.
			t.statusMsgText = t.header()
			t.pendingStatus = t.p.Outbox.Post(t.ref, t.statusMsgText, outbox.High, nil)
		}
		if startsRun {
			// Take the run slot before setting up the workspace, so that a
			// burst of new threads does not check out every workspace at once.
			if !t.takeSlot(pi) {
				return // parked until a slot frees
			}
			slot = true
		}
		if err := t.open(ctx, in); err != nil {
			if slot {
				t.releaseSlot()
			}
			t.fail(pi, "I couldn't set up this thread's workspace: "+userError(err), err)
			return
		}
	}
	if pi.queue != "" && in.MessageID != "" {
		// Queued before a restart: its reaction still says so; swap it when
		// the model gets it.
		emoji := reactFollowUp
		if pi.queue == storage.QueueSteer {
			emoji = reactSteer
		}
		t.amu.Lock()
		t.acks[inputID(pi.id)] = queuedAck{messageID: in.MessageID, emoji: emoji}
		t.amu.Unlock()
	}
	if startsRun && !slot && !t.sess.IsRunning() {
		if !t.takeSlot(pi) {
			return // parked until a slot frees
		}
		slot = true
	}
	text, images := t.prepareInput(ctx, in)
	author := in.Author
	t.requester.Store(&author)
	if slot {
		// The transcript must be ready before the run's first event.
		status, text := t.pendingStatus, t.statusMsgText
		t.pendingStatus = nil
		if status == nil {
			text = t.header()
			status = t.p.Outbox.Post(t.ref, text, outbox.High, nil)
		}
		t.view.arm(t.repoLine(), status, text)
		t.pendingStatus, t.statusMsgText = status, text
		t.syncBranch(ctx)
	}
	status := t.pendingStatus
	opts := agent.PromptOptions{Behavior: t.b.cfg.Agent.BusyMode, Images: images, InputID: inputID(pi.id)}
	var out agent.Outcome
	var err error
	if name == "steer" || name == "followup" {
		// Classified here, once: the words after the command go to the model
		// as that kind of input (or start a run when nothing runs), and the
		// outcome comes straight back from Start.
		_, text = commandWord(text)
		opts.Behavior = agent.BehaviorSteer
		if name == "followup" {
			opts.Behavior = agent.BehaviorFollowUp
		}
	}
	if (name == "steer" || name == "followup") && strings.TrimSpace(text) == "" {
		err = plainError{"say what: `!steer <text>` or `!followup <text>`"}
	} else {
		t.current = pi // for commands, which run inside Start on this goroutine
		out, err = t.sess.Start(ctx, text, opts)
		t.current = nil
	}
	behavior := opts.Behavior
	if out != agent.Started && slot {
		t.releaseSlot()
	}
	// A status posted for input that did not start a run (armed but unused).
	var unused *outbox.Message
	if out != agent.Started {
		unused = t.view.disarm()
	}
	t.pendingStatus = nil
	switch {
	case err != nil:
		t.pendingStatus = unused
		t.fail(pi, userError(err), err)
		unused = nil
	case out == agent.Started:
		t.beginRun(pi, text, in.Author, slot, status)
	case out == agent.Queued:
		emoji := reactFollowUp
		queue := storage.QueueFollowUp
		if behavior == agent.BehaviorSteer {
			emoji, queue = reactSteer, storage.QueueSteer
		}
		t.amu.Lock()
		t.acks[inputID(pi.id)] = queuedAck{messageID: in.MessageID, emoji: emoji}
		t.amu.Unlock()
		// Persisted as queued before the reaction says so.
		t.markInbound(pi.id, storage.InboundQueued, string(queue))
		if in.MessageID != "" {
			t.p.Outbox.React(t.ref, in.MessageID, emoji, true)
		}
	case out == agent.Handled:
		t.markInbound(pi.id, storage.InboundDelivered, "")
	}
	if unused != nil {
		t.p.Outbox.Edit(unused, "…", outbox.Normal)
	}
}

// syncBranch brings in commits others pushed to the thread's branch before a
// run starts, so the agent works on them and the next push can succeed.
func (t *thread) syncBranch(ctx context.Context) {
	if t.ws == nil {
		return
	}
	res, err := t.ws.Sync(ctx)
	switch {
	case err != nil:
		t.log.Warn("syncing the branch with the remote", "err", err)
	case res.Diverged:
		t.say(fmt.Sprintf("⚠️ `%s` has commits on the remote that conflict with mine; I keep working here, but pushing will fail until someone reconciles the branch.", t.ws.Branch()))
	case res.Pulled > 0:
		t.log.Info("brought in commits pushed by others", "commits", res.Pulled, "rebased", res.Rebased)
	}
}

// fail tells the thread why input could not be taken and records it as dropped.
func (t *thread) fail(pi *pendingInput, msg string, err error) {
	t.log.Warn("input not delivered", "inbound", pi.id, "err", err)
	text := "❌ " + msg
	if t.pendingStatus != nil {
		t.p.Outbox.EditFinal(t.pendingStatus, text, outbox.High)
		t.pendingStatus = nil
	} else {
		t.say(text)
	}
	t.markInbound(pi.id, storage.InboundDropped, oneLine(msg, 200))
}

// say posts a notice into the thread, below any running transcript.
func (t *thread) say(text string) {
	if t.view != nil {
		t.view.post(text)
		return
	}
	for _, c := range Split(text, t.p.limit, t.p.measure) {
		t.p.Outbox.Post(t.ref, c, outbox.High, nil)
	}
}

func (t *thread) markInbound(id int64, state storage.InboundState, detail string) {
	if err := t.b.cfg.Store.MarkInbound(t.b.ctx, id, state, detail); err != nil && !errors.Is(err, storage.ErrInvalidTransition) {
		t.log.Warn("recording input state", "inbound", id, "state", state, "err", err)
	}
}

// guard enforces loopGuard; it says so once when it starts refusing.
func (t *thread) guard() bool {
	now := t.b.cfg.Now()
	cut := 0
	for cut < len(t.recent) && now.Sub(t.recent[cut]) > time.Minute {
		cut++
	}
	t.recent = append(t.recent[cut:], now)
	if len(t.recent) <= loopGuard {
		return true
	}
	if len(t.recent) == loopGuard+1 {
		t.say(fmt.Sprintf("⚠️ More than %d messages in a minute: I'm ignoring messages in this thread for a moment (this protects against bots replying to each other).", loopGuard))
	}
	return false
}

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

// answerWhileWaiting answers !stop and !status at once for a thread whose
// request waits for a run slot (PRODUCT.md §3: a run still waiting for a
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
		if t.pendingStatus != nil {
			t.p.Outbox.EditFinal(t.pendingStatus, "⏹ stopped before it started.", outbox.High)
			t.pendingStatus = nil
		}
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

func inputID(id int64) string { return strconv.FormatInt(id, 10) }

// delivered runs on the session's event queue when input reaches the model.
// It only swaps the reaction: the input is recorded as delivered by the
// store, in the commit that appends the user message (storage.AppendEntries),
// so that no crash can separate the two.
func (t *thread) delivered(id string) {
	t.amu.Lock()
	ack, queued := t.acks[id]
	delete(t.acks, id)
	t.amu.Unlock()
	if queued && ack.messageID != "" {
		t.p.Outbox.React(t.ref, ack.messageID, ack.emoji, false)
		t.p.Outbox.React(t.ref, ack.messageID, reactDelivered, true)
	}
}

// header is the first text of a run's status message.
func (t *thread) header() string {
	h := workingHeaderPrefix + " · " + t.repoLine()
	if !t.b.cfg.Sandbox.Confined() {
		// The operator chose sandbox.mode: none; everyone in the thread
		// should know that what the agent runs is not isolated.
		h += " · ⚠️ unsandboxed"
	}
	return h
}

// repoLine names the thread's repository and branch.
func (t *thread) repoLine() string { return fmt.Sprintf("`%s` · `%s`", t.rec.Repo, t.rec.Branch) }

// workingHeaderPrefix starts a run's status message while it works.
const workingHeaderPrefix = "⏳ working…"

// beginRun tracks a run that Start just started (its transcript began at
// agent_start, from the armed view).
func (t *thread) beginRun(pi *pendingInput, request string, author chat.Author, slot bool, status *outbox.Message) {
	t.trackRun(&activeRun{inboundID: pi.id, request: request, author: author, slot: slot}, status, t.statusMsgText)
}

// adoptRun tracks a run the session started by itself (input queued during a
// compaction and delivered after it).
func (t *thread) adoptRun() {
	if t.run != nil || t.sess == nil || !t.sess.IsRunning() {
		return
	}
	req := "(queued input)"
	var author chat.Author
	if a := t.requester.Load(); a != nil {
		author = *a
	}
	t.trackRun(&activeRun{request: req, author: author}, nil, "")
}

func (t *thread) trackRun(r *activeRun, status *outbox.Message, text string) {
	ctx := t.b.ctx
	id, err := t.b.cfg.Store.StartRun(ctx, t.rec.ID, t.sess.ID(), r.inboundID)
	if err != nil {
		t.log.Error("recording run start", "err", err)
	}
	r.id = id
	t.run = r
	if status != nil {
		t.saver.track(status, t.rec.ID, r.id, t.ref.Channel, text)
	}
	t.p.Outbox.SetStatus(t.ref, "is working…")
	t.statusTick = time.NewTicker(statusRefresh)
	sess := t.sess
	r.timer = time.AfterFunc(t.b.cfg.RunTimeout, func() {
		t.enqueue(item{fn: func() {
			if t.run == r {
				r.timedOut = true
				sess.Abort()
			}
		}})
	})
	go func() {
		_ = sess.Wait(context.Background())
		t.enqueue(item{runDone: sess})
	}()
}

// finishRun runs when the session went idle: it closes the transcript with
// the footer, then commits the run's work and starts pushing it.
func (t *thread) finishRun(ctx context.Context) {
	outcome := storage.RunDone
	if t.run.stopped {
		outcome = storage.RunStopped
	}
	t.finishRunWith(ctx, outcome, true)
}

func (t *thread) finishRunWith(ctx context.Context, outcome storage.RunOutcome, push bool) {
	r := t.run
	t.run = nil
	r.timer.Stop()
	if r.slot {
		t.releaseSlot()
	}
	if t.statusTick != nil {
		t.statusTick.Stop()
		t.statusTick = nil
	}
	t.p.Outbox.SetStatus(t.ref, "")
	if r.timedOut {
		t.view.note(fmt.Sprintf("⏹ stopped: the run took longer than the %s limit.", t.b.cfg.RunTimeout))
	}
	stats := t.view.stats()
	if stats.failed && outcome == storage.RunDone {
		outcome = storage.RunFailed
	}
	// The answer is posted the moment the model is done, before any git work:
	// a slow remote must not keep it from the people waiting for it, and a
	// crash while pushing must not lose it.
	info := t.b.modelInfo(t.sess.ModelName())
	foot := withPageLink(footer(stats, t.b.cfg.Now(), t.sess.ContextTokens(), t.sess.Status().ContextWindow, !info.Price.zero()), t.pageLink())
	t.view.setFinal(func(chunks []string) { t.postAnswer(r.id, chunks) })
	t.view.endRun(foot, "")
	t.saver.flush()
	// The run stays open in storage until its work is on the remote: a crash
	// before that leaves it interrupted, and the next start pushes it.
	if !push || !t.commitRun(ctx, r, outcome) {
		t.endRunRecord(ctx, r.id, outcome)
	}
	if len(t.held) > 0 {
		held := t.held
		t.held = nil
		t.qmu.Lock()
		front := make([]item, 0, len(held)+len(t.items))
		for _, pi := range held {
			front = append(front, item{input: pi})
		}
		t.items = append(front, t.items...)
		t.qmu.Unlock()
		t.enqueue(item{}) // wake the loop; an empty item does nothing
	}
}

// endRunRecord records the end of a run (id 0: none was recorded).
func (t *thread) endRunRecord(ctx context.Context, id int64, outcome storage.RunOutcome) {
	if id == 0 {
		return
	}
	if err := t.b.cfg.Store.FinishRun(ctx, id, outcome); err != nil {
		t.log.Warn("recording run end", "err", err)
	}
}

// pushNoticeFor records the outcome of a push and returns its notice for the
// thread ("" when there is nothing to say: nothing new reached the remote).
func (t *thread) pushNoticeFor(ctx context.Context, job *pushJob, res workspace.PushResult, err error) string {
	if err != nil {
		t.unpushed = true
		result := storage.PushError
		if errors.Is(err, workspace.ErrPushRejected) {
			result = storage.PushRejected
		}
		// The thread gets the sentence written for it; the log gets git's
		// own words (redacted by the workspace).
		t.log.Warn("push failed", "branch", t.ws.Branch(), "sha", res.SHA, "err", err)
		t.recordPush(ctx, res.SHA, result, userError(err))
		return fmt.Sprintf("⚠️ Pushing `%s` failed: %s\nThe commit is kept here and will be pushed after the next run.", t.ws.Branch(), userError(err))
	}
	t.unpushed = false
	t.recordPush(ctx, res.SHA, storage.PushOK, "")
	if res.UpToDate && !job.committed {
		return ""
	}
	notice := pushNotice(res)
	if line := t.syncPullRequest(ctx, job.request); line != "" {
		notice += "\n" + line
	}
	return notice
}

func (t *thread) recordPush(ctx context.Context, sha string, result storage.PushResult, detail string) {
	if _, err := t.b.cfg.Store.RecordPush(ctx, storage.Push{ThreadID: t.rec.ID, Branch: t.ws.Branch(), SHA: sha, Result: result, Detail: detail}); err != nil {
		t.log.Warn("recording push", "err", err)
	}
}

// link is the thread's permalink for commit messages, when the platform gives one.
func (t *thread) link(ctx context.Context) string {
	if l, ok := t.p.Adapter.(chat.Linker); ok {
		if url, err := l.Permalink(ctx, t.ref); err == nil && url != "" {
			return "Thread: " + url
		}
	}
	return fmt.Sprintf("Thread: %s %s", t.ref.Platform, t.ref.Key())
}

// userError turns an error into text safe for a channel: known errors keep
// their message (written for people); anything else is generic, with the
// details in the log.
func userError(err error) string {
	var we *workspace.Error
	var um *agent.UnknownModelError
	switch {
	case errors.As(err, &we):
		return workspace.ErrorMessage(err)
	case errors.As(err, &um):
		return um.Error()
	case errors.Is(err, agent.ErrRunActive), errors.Is(err, agent.ErrBusy):
		return err.Error()
	case isPlain(err):
		return err.Error()
	}
	return "something went wrong on my side (details are in the bot's log)"
}

// plainError is an error whose text was written for the thread.
type plainError struct{ msg string }

func (e plainError) Error() string { return e.msg }

func isPlain(err error) bool {
	var p plainError
	return errors.As(err, &p)
}
