package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/chat"
)

// ErrClosed is the error of operations refused or abandoned because the
// Outbox was closed.
var ErrClosed = errors.New("outbox: closed")

// ErrWithdrawn is the error of an operation its thread's guard refused (see
// Guard): the call was not made.
var ErrWithdrawn = errors.New("outbox: withdrawn: the thread's guard refused it")

// Config configures an Outbox. The zero value is usable: no budgets, defaults
// below.
type Config struct {
	// Limits are the platform's budgets: SlackLimits, DiscordLimits, or
	// those built from the configuration.
	Limits Limits
	// Workers bounds the adapter calls in flight at once (default 8).
	Workers int
	// CallTimeout bounds one adapter call (default 30 s); a call that runs
	// out of it counts as a transient failure.
	CallTimeout time.Duration
	// Retries is how often a transient failure (timeout, 5xx, network) is
	// retried before the operation is given up (0 = default 3, negative =
	// never). Rate limits are waited out without counting against it.
	Retries int
	// Backoff is the wait before the first retry, doubling after each
	// (default 1 s).
	Backoff time.Duration
	// Logger receives failures and rate limits (default slog.Default()). No
	// message text is ever logged.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 30 * time.Second
	}
	if c.Retries < 0 {
		c.Retries = 0
	} else if c.Retries == 0 {
		c.Retries = 3
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Stats counts what the Outbox did since New.
type Stats struct {
	Posts          int64 // messages posted
	EditsRequested int64 // Edit calls
	EditsSent      int64 // edits that reached the platform
	EditsDropped   int64 // edits of messages whose post failed, withdrawn (Guard), or after Close
	Reactions      int64 // reactions added or removed
	Uploads        int64 // files uploaded
	Statuses       int64 // status updates sent
	StatusDropped  int64 // status updates dropped: rate limited, failed, or replaced while retried
	RateLimited    int64 // calls the platform refused with a rate limit (429)
	Retries        int64 // transient failures retried
	Failures       int64 // operations given up
}

// Outbox queues and sends one platform's outgoing messages. Create it with
// New; its methods are safe for concurrent use and, except Flush and Close,
// never block.
type Outbox struct {
	a        chat.Adapter
	once     chat.OncePoster
	editor   chat.Editor
	reactor  chat.Reactor
	uploader chat.Uploader
	onceUp   chat.OnceUploader
	statuser chat.StatusSetter
	titled   chat.TitledStatusSetter
	streamer chat.Streamer
	actioner chat.Actioner
	cfg      Config
	log      *slog.Logger

	wake        chan struct{} // a queue changed: schedule again
	quit        chan struct{} // closed by Close: the dispatcher stops
	stopped     chan struct{} // closed when Close has finished
	callCtx     context.Context
	cancelCalls context.CancelFunc
	wg          sync.WaitGroup // the dispatcher and every worker

	mu          sync.Mutex
	threads     map[string]*thread
	chanPost    map[string]*bucket
	chanEdit    map[string]*bucket
	workspace   bucket
	streams     bucket // Limits.StreamPerWorkspace
	requests    bucket
	statusRate  bucket    // Limits.Status
	statusCalls int       // status calls in flight
	globalPause time.Time // a Global rate limit: nothing goes before it
	seq         uint64
	outstanding int // ops queued or in flight
	flushes     []*flushWaiter
	inflight    int
	closed      bool // no new work
	aborted     bool // Close ran out of time: fail what is left
	stats       Stats
	cands       []cand // scratch for scheduleLocked
	lastSweep   time.Time
	guards      map[string]*guard // by thread key (Guard)
}

type guard struct{ ok func(context.Context) bool }

type flushWaiter struct {
	target    uint64 // ops with seq <= target were queued before the Flush
	remaining int
	done      chan struct{}
}

// New returns an Outbox sending through a, and starts its dispatcher; Close
// stops it. The optional capabilities (chat.Editor, chat.Reactor,
// chat.Uploader, chat.StatusSetter) are used when a implements them.
func New(a chat.Adapter, cfg Config) *Outbox {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	o := &Outbox{
		a:           a,
		cfg:         cfg,
		log:         cfg.Logger.With("component", "outbox", "platform", a.Platform()),
		wake:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		stopped:     make(chan struct{}),
		callCtx:     ctx,
		cancelCalls: cancel,
		threads:     make(map[string]*thread),
		chanPost:    make(map[string]*bucket),
		chanEdit:    make(map[string]*bucket),
		workspace:   newBucket(cfg.Limits.EditPerWorkspace),
		streams:     newBucket(cfg.Limits.StreamPerWorkspace),
		requests:    newBucket(cfg.Limits.Requests),
		statusRate:  newBucket(cfg.Limits.Status),
	}
	o.once, _ = a.(chat.OncePoster)
	o.editor, _ = a.(chat.Editor)
	o.reactor, _ = a.(chat.Reactor)
	o.uploader, _ = a.(chat.Uploader)
	o.onceUp, _ = a.(chat.OnceUploader)
	o.statuser, _ = a.(chat.StatusSetter)
	o.titled, _ = a.(chat.TitledStatusSetter)
	o.actioner, _ = a.(chat.Actioner)
	o.streamer, _ = a.(chat.Streamer)
	o.wg.Add(1)
	go o.run()
	return o
}

// Post queues a new message in thread and returns it at once. onPosted, if
// not nil, is called once with the message's id or the reason it could not be
// posted; it runs on an Outbox goroutine and must not block (it may call the
// Outbox's non-blocking methods). After Close, Post fails at once: onPosted
// gets ErrClosed before Post returns.
func (o *Outbox) Post(thread chat.ThreadRef, text string, p Priority, onPosted func(id string, err error)) *Message {
	return o.PostKeyed(thread, text, p, chat.PostKey{}, onPosted)
}

// PostKeyed is Post with the caller's idempotency key, for a post the caller
// stored before queuing it (a run's answer) and may queue again after a
// restart: key.ID is used on every attempt (at most 25 characters), and
// key.Retry with key.First says an earlier process may have posted it then,
// so that a chat.OncePoster looks for it before posting. An empty key.ID
// gets a fresh key, as with Post.
func (o *Outbox) PostKeyed(thread chat.ThreadRef, text string, p Priority, key chat.PostKey, onPosted func(id string, err error)) *Message {
	m := o.newMessage(thread)
	m.onPosted = onPosted
	o.mu.Lock()
	if o.closed {
		m.state, m.err = msgFailed, ErrClosed
		close(m.done)
		o.mu.Unlock()
		if onPosted != nil {
			onPosted("", ErrClosed)
		}
		return m
	}
	op := o.postLocked(m, text, p)
	if key.ID != "" {
		op.key, op.uncertain, op.first = key.ID, key.Retry, key.First
	}
	op.notify, op.stream = key.Notify, key.Stream
	o.mu.Unlock()
	o.poke()
	return m
}

// newKey is an operation's idempotency key: 24 hex characters, the same on
// every attempt (Discord's nonce takes 25 at most).
func newKey() string { return fmt.Sprintf("%016x%08x", rand.Uint64(), rand.Uint32()) }

// postLocked queues the post of m with text.
func (o *Outbox) postLocked(m *Message, text string, p Priority) *op {
	th := o.threadLocked(m.ref, m.key)
	op := o.newOpLocked(opPost, p, th)
	op.msg, op.text = m, text
	m.want = text
	// The same key on every attempt lets the platform (or the adapter) tell a
	// repeated post from a new one.
	op.key = newKey()
	m.post = op
	th.lane = append(th.lane, op)
	return op
}

// inheritLocked makes op take the place of an op with sequence number seq
// that it carries on (the post of a final edit the platform refused): it
// goes out in that one's turn, and a Flush waiting for that one waits for
// it too.
func (o *Outbox) inheritLocked(op *op, seq uint64) {
	op.seq = seq
	for _, w := range o.flushes {
		if seq <= w.target {
			w.remaining++
		}
	}
}

// Adopt returns a message posted earlier, before a restart (storage's
// outbound table has its id), so it can be edited. Its text is unknown, so
// its first edit is always sent.
func (o *Outbox) Adopt(thread chat.ThreadRef, id string) *Message {
	m := o.newMessage(thread)
	m.id, m.state = id, msgPosted
	close(m.done)
	return m
}

// Edit replaces m's text. Edits of one message merge while they wait: only
// the latest text is sent, with the highest priority requested. An edit of a
// message not posted yet changes the text its post will carry; edits of a
// message whose post failed are dropped.
func (o *Outbox) Edit(m *Message, text string, p Priority) {
	o.edit(m, text, p, false)
}

// EditFinal is Edit for a message's last text (a status message that stops
// saying "working…"): if the platform refuses the edit for good (the message
// was deleted, the workspace's edit window closed), or the message was never
// posted, the text is posted as a new message instead, so that the thread
// does not keep showing a stale state.
func (o *Outbox) EditFinal(m *Message, text string, p Priority) {
	o.edit(m, text, p, true)
}

func (o *Outbox) edit(m *Message, text string, p Priority, final bool) {
	if m == nil || m.o != o {
		return
	}
	p = p.norm()
	wake := false
	o.mu.Lock()
	o.stats.EditsRequested++
	if !(m.state == msgFailed || o.closed) {
		m.want = text
	}
	switch {
	case m.post != nil:
		wake = merge(m.post, text, p, final)
	case m.edit != nil:
		wake = merge(m.edit, text, p, final)
		m.edit.withActions, m.edit.actions = m.withActions, m.actions
	case !o.closed && final && (m.state == msgFailed || o.editor == nil):
		o.stats.EditsDropped++
		o.postLocked(o.newMessage(m.ref), text, p)
		wake = true
	case o.closed || m.state == msgFailed || o.editor == nil:
		o.stats.EditsDropped++
	default:
		o.queueEditLocked(m, text, p, final)
		wake = true
	}
	o.mu.Unlock()
	if wake {
		o.poke()
	}
}

// SetActions replaces m's buttons (none removes them), in an edit that
// carries m's latest text: it merges into a pending edit like any other, and
// every later edit of m carries the buttons too, since platforms replace a
// message's text and buttons together. Buttons set before the post went out
// follow in an edit right after it. It is a no-op without a chat.Actioner,
// for a message whose post failed, and for an adopted message (its text is
// unknown).
func (o *Outbox) SetActions(m *Message, actions []chat.Action, p Priority) {
	if m == nil || m.o != o || o.actioner == nil {
		return
	}
	p = p.norm()
	actions = slices.Clone(actions)
	wake := false
	o.mu.Lock()
	if o.closed || m.state == msgFailed {
		o.mu.Unlock()
		return
	}
	m.actions, m.withActions = actions, true
	switch {
	case m.post != nil:
		// succeededLocked follows the post with an edit carrying them.
	case m.edit != nil:
		m.edit.withActions, m.edit.actions = true, actions
		wake = merge(m.edit, m.edit.text, p, m.edit.final)
	case m.state == msgPosted && m.want != "":
		o.stats.EditsRequested++
		o.queueEditLocked(m, m.want, p, false)
		wake = true
	}
	o.mu.Unlock()
	if wake {
		o.poke()
	}
}

// queueEditLocked queues an edit of m to text, carrying m's buttons.
func (o *Outbox) queueEditLocked(m *Message, text string, p Priority, final bool) {
	th := o.threadLocked(m.ref, m.key)
	op := o.newOpLocked(opEdit, p, th)
	op.msg, op.text, op.final = m, text, final
	op.withActions, op.actions = m.withActions, m.actions
	m.edit = op
	th.edits = append(th.edits, op)
}

// merge folds a later request into a waiting op and says whether its
// priority rose (which can make it ready sooner).
func merge(op *op, text string, p Priority, final bool) bool {
	op.text = text
	op.final = op.final || final
	if p > op.prio {
		op.prio = p
		return true
	}
	return false
}

// React adds (or removes) the bot's reaction on a message. Reactions on one
// message keep call order. It is a no-op if the adapter cannot react.
func (o *Outbox) React(thread chat.ThreadRef, messageID, emoji string, add bool) {
	if o.reactor == nil {
		return
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	th := o.threadLocked(thread, thread.Key())
	op := o.newOpLocked(opReact, High, th)
	op.target, op.emoji, op.add = messageID, emoji, add
	th.reacts = append(th.reacts, op)
	o.mu.Unlock()
	o.poke()
}

// Upload attaches a file to thread, in order with the thread's posts. The
// Outbox keeps content until it is sent: do not modify it. Without a
// chat.Uploader it is counted as a failure and logged.
func (o *Outbox) Upload(thread chat.ThreadRef, name string, content []byte, comment string) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	if o.uploader == nil {
		o.stats.Failures++
		o.mu.Unlock()
		o.log.Warn("outbox: the adapter cannot upload files", "thread", thread.Key())
		return
	}
	th := o.threadLocked(thread, thread.Key())
	op := o.newOpLocked(opUpload, Normal, th)
	op.name, op.content, op.text = name, content, comment
	// As a post's: the same key on every attempt of the upload.
	op.key = newKey()
	th.lane = append(th.lane, op)
	o.mu.Unlock()
	o.poke()
}

// SetStatus shows (or, with "", clears) the thread's working status. Status
// updates have a lane of their own beside the thread's posts: one call per
// thread at a time, a status not sent yet replaced by the next one, a budget
// of their own (Limits.Status), at most statusWorkers calls in flight beside
// the Workers. A status the platform refuses with a rate limit is dropped,
// not retried (the next one waits out the Retry-After), so a status never
// delays a post. Flush and Close do not wait for status updates: a stale
// status is worth nothing, and platforms expire them. It is a no-op if the
// adapter has no chat.StatusSetter.
func (o *Outbox) SetStatus(thread chat.ThreadRef, status string) {
	o.SetStatusTitled(thread, status, "")
}

// SetStatusTitled is SetStatus naming the work (the request), for a
// chat.TitledStatusSetter; a later status without a title keeps it.
func (o *Outbox) SetStatusTitled(thread chat.ThreadRef, status, title string) {
	if o.statuser == nil {
		return
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	th := o.threadLocked(thread, thread.Key())
	if op := th.status; op != nil {
		op.text = status
		if title != "" {
			op.title = title
		}
		o.mu.Unlock()
		return
	}
	o.seq++
	th.status = &op{kind: opStatus, prio: Low, seq: o.seq, th: th, text: status, title: title}
	o.mu.Unlock()
	o.poke()
}

// Flush returns when everything queued before the call was sent or has
// failed, or with ctx's error.
func (o *Outbox) Flush(ctx context.Context) error {
	o.mu.Lock()
	if o.outstanding == 0 {
		o.mu.Unlock()
		return nil
	}
	w := &flushWaiter{target: o.seq, remaining: o.outstanding, done: make(chan struct{})}
	o.flushes = append(o.flushes, w)
	o.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		o.mu.Lock()
		for i, x := range o.flushes {
			if x == w {
				o.flushes = append(o.flushes[:i], o.flushes[i+1:]...)
				break
			}
		}
		o.mu.Unlock()
		return ctx.Err()
	}
}

// Close stops accepting work, waits for what is queued to be sent, and stops
// the dispatcher. If ctx ends first, calls in flight are cancelled and what is
// left fails with ErrClosed; Close then returns ctx's error. Either way no
// Outbox goroutine is left when it returns.
func (o *Outbox) Close(ctx context.Context) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		select {
		case <-o.stopped:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	o.closed = true
	o.mu.Unlock()

	err := o.Flush(ctx)
	if err != nil {
		o.abort()
	}
	close(o.quit)
	o.wg.Wait()
	o.cancelCalls()
	close(o.stopped)
	return err
}

// abort fails every queued op with ErrClosed and cancels the calls in flight,
// whose ops then fail as they return.
func (o *Outbox) abort() {
	var after []func()
	o.mu.Lock()
	o.aborted = true
	o.cancelCalls()
	var queued []*op
	for _, th := range o.threads {
		queued = append(queued, th.lane...)
		queued = append(queued, th.edits...)
		queued = append(queued, th.reacts...)
		if th.status != nil {
			th.status.retired = true
			th.status = nil
			o.releaseLocked(th)
		}
	}
	for _, op := range queued {
		// Failing a post also retires its pending edit.
		if !op.inFlight && !op.retired {
			if f := o.failedLocked(op, ErrClosed); f != nil {
				after = append(after, f)
			}
		}
	}
	o.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// Stats returns the counters so far.
func (o *Outbox) Stats() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stats
}

func (o *Outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *Outbox) newMessage(ref chat.ThreadRef) *Message {
	return &Message{
		o:     o,
		ref:   ref,
		key:   ref.Key(),
		done:  make(chan struct{}),
		edits: newBucket(o.cfg.Limits.EditPerMessage),
	}
}

func (o *Outbox) newOpLocked(kind opKind, p Priority, th *thread) *op {
	o.seq++
	o.outstanding++
	return &op{kind: kind, prio: p.norm(), seq: o.seq, th: th}
}

// threadLocked returns the thread's queue, creating it (and taking a
// reference on its channel's buckets) if it has none.
func (o *Outbox) threadLocked(ref chat.ThreadRef, key string) *thread {
	if th := o.threads[key]; th != nil {
		return th
	}
	th := &thread{ref: ref, key: key}
	chanKey := ref.Team + "/" + ref.Channel
	th.post = sharedBucket(o.chanPost, chanKey, o.cfg.Limits.PostPerChannel)
	th.edit = sharedBucket(o.chanEdit, chanKey, o.cfg.Limits.EditPerChannel)
	o.threads[key] = th
	return th
}

func sharedBucket(m map[string]*bucket, key string, r Rate) *bucket {
	if !r.limited() {
		return nil
	}
	b := m[key]
	if b == nil {
		nb := newBucket(r)
		b = &nb
		m[key] = b
	}
	b.refs++
	return b
}

// releaseLocked forgets a thread that has nothing left to do.
func (o *Outbox) releaseLocked(th *thread) {
	if !th.empty() || o.threads[th.key] != th {
		return
	}
	delete(o.threads, th.key)
	if th.post != nil {
		th.post.refs--
	}
	if th.edit != nil {
		th.edit.refs--
	}
}

// doneLocked retires an op that was sent, given up, or merged into an older
// one, and releases the Flush calls waiting for it.
func (o *Outbox) doneLocked(op *op) {
	op.retired = true
	o.outstanding--
	for i := 0; i < len(o.flushes); {
		w := o.flushes[i]
		if op.seq <= w.target {
			w.remaining--
			if w.remaining == 0 {
				close(w.done)
				o.flushes = append(o.flushes[:i], o.flushes[i+1:]...)
				continue
			}
		}
		i++
	}
}

// Guard makes every call for thread ask ok first; when it says no, the call
// is not made and its operation fails with ErrWithdrawn. A replica guards
// the threads it owns: what it queued before it lost one (paused past its
// lease while another replica took the thread over) is then not sent over
// the new owner's messages. ok runs on the outbox's worker goroutines. A
// later Guard of the thread replaces this one; remove drops it if it is
// still in place.
func (o *Outbox) Guard(thread chat.ThreadRef, ok func(context.Context) bool) (remove func()) {
	g := &guard{ok: ok}
	key := thread.Key()
	o.mu.Lock()
	if o.guards == nil {
		o.guards = map[string]*guard{}
	}
	o.guards[key] = g
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.guards[key] == g {
			delete(o.guards, key)
		}
	}
}
