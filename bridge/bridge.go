// Package bridge is the platform-neutral layer between chat and agent sessions:
// it maps each chat thread to one session and one workspace, routes what
// people write (prompt, steer, followUp, commands), renders session events into
// chat messages, and commits and pushes the agent's work after every run.
//
// Contract:
//   - Every accepted message is committed to storage before the adapter
//     acknowledges it, and is delivered to its session exactly once, in
//     arrival order per thread — across restarts too (queued input is replayed
//     at start; runs cut off by a crash are reported as interrupted).
//   - Each thread has one owner goroutine that alone changes its session,
//     workspace and run state; it exists while the thread is busy or recently
//     used and is evicted when idle (the session is reloaded from storage on the
//     next message). Nothing blocks the owner for long: waiting for a run slot
//     is a state (the slot arrives as a message), and a push runs on its own
//     goroutine and reports back, so commands are answered at once.
//   - A run's answer is posted as soon as the model is done; its work is then
//     committed and pushed, with a notice of its own. Pushing makes the remote
//     branch equal the local one: a commit a crash or a failed push left behind
//     goes out after the next run, or at start for a run a crash cut off.
//   - Nothing a person typed is silently dropped: input that cannot be
//     delivered is answered in the thread.
//   - Chat output goes through each platform's outbox, which keeps the
//     platform's rate limits across all threads.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/bounded"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/schedule"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// Config configures a Bridge. Store, Workspaces and Model are required.
type Config struct {
	Store      storage.Store
	Workspaces *workspace.Manager
	Model      llm.Model
	Agent      AgentConfig
	Platforms  []Platform
	// DefaultRepo is used when neither the message nor the channel names one.
	DefaultRepo string
	// MaxConcurrentRuns caps runs across all threads; more wait their turn (and
	// their thread is told). Default 8.
	MaxConcurrentRuns int
	// RunTimeout aborts a run that takes longer. Default 30m.
	RunTimeout time.Duration
	// IdleEvict drops an idle thread's session from memory after this long.
	// Default 10m.
	IdleEvict time.Duration
	// PushRetry is the first wait before kept commits the remote did not
	// answer for are pushed again (doubling each time). Default 30s.
	PushRetry time.Duration
	// threadMemory bounds the per-thread facts the Bridge caches (known,
	// released). Default threadMemory; tests make it small.
	threadMemory int
	// MaxDownloadBytes caps each file people share. Default 20 MiB.
	MaxDownloadBytes int64
	// CatchUpWindow is how recently a person must have written in a thread
	// for a reconnect to catch up on it (ActiveThreads). Default a day.
	CatchUpWindow time.Duration
	// Secrets are redacted from tool output (tokens, keys).
	Secrets []string
	// Sandbox runs everything the agent runs. Nil means unsandboxed
	// (sandbox.None), and every run's status says so.
	Sandbox *sandbox.Sandbox
	// Metrics counts live threads, retries and compactions for the
	// operator (package ops implements it). Nil counts nothing.
	Metrics Metrics
	// MCPServers are the configured MCP servers; MCPRepoServers lets a
	// repository's .threadsmith/mcp.json or .mcp.json add stdio servers.
	MCPServers     []MCPServer
	MCPRepoServers bool
	// PullRequests are the repositories' pull request settings, by repo
	// name; a repo without an entry gets none.
	PullRequests map[string]*PullRequests
	// Issues are the repositories whose issues open threads, by repo name
	// (issues.go).
	Issues map[string]*Issues
	// Approvals are what the repositories' threads wait for someone's
	// approval of, by repo name; a repo without an entry waits for nothing.
	Approvals map[string]Approval
	// PageLink returns a signed link to a thread's session page (by its
	// storage id), or "" when there is none; nil: no links. Run footers,
	// !status and !link carry it.
	PageLink func(threadID int64) string
	// PagesOff is !link's answer where there are no session pages; ""
	// says the operator turns them on with http.public_url and
	// http.session_key.
	PagesOff string
	// Budget caps what the models cost (budget.go); zero: no limit.
	Budget Budget
	// Schedules are the configured schedules: each firing opens a thread
	// (Open). ScheduleClock is their clock; nil: the real one.
	Schedules     []*schedule.Schedule
	ScheduleClock schedule.Clock
	// Lease makes the bridge one of several replicas sharing Store (see
	// lease.go); zero: the only one.
	Lease  LeaseConfig
	Logger *slog.Logger
	Now    func() time.Time
	// Sleep is the sessions' wait between a model request's retries
	// (default: a real timer); tests replace it to pass the waits at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// ProbeSleep is the wait between two asks of a model that could not be
	// reached (modelhealth.go; default: a real timer); ModelProbe asks the
	// model named once (default: the smallest request to Model). Tests
	// replace them.
	ProbeSleep func(ctx context.Context, d time.Duration) error
	ModelProbe func(ctx context.Context, model string) error
}

// AgentConfig is how sessions are set up.
type AgentConfig struct {
	Model  ModelInfo
	Models []ModelInfo // more models !model may switch to
	// Instructions are appended to the built-in system prompt.
	Instructions string
	// BusyMode is what a plain message does while a run is active (followUp by
	// default, or steer).
	BusyMode                agent.Behavior
	SteerMode, FollowUpMode agent.QueueMode
	Retry                   agent.RetrySettings
	Compaction              compaction.Settings
	BashTimeout             time.Duration
	BashEnv                 map[string]string
	SkillsDirs, PromptsDirs []string
	GitName, GitEmail       string
	// DiskQuota limits the disk each thread's files take (its Notify is the
	// bridge's: the thread is told); zero limits nothing.
	DiskQuota tools.Quota
	// NotifyAfter is how long a run takes before its answer mentions the
	// person who asked (chat.PostKey.Notify); 0 mentions nobody.
	NotifyAfter time.Duration
}

// ModelInfo is a model the bot may use.
type ModelInfo struct {
	Name            string
	Provider        string // recorded when a session switches to it
	ContextWindow   int
	MaxOutputTokens int
	Price           Price
}

// Platform is one connected chat platform.
type Platform struct {
	Adapter chat.Adapter
	Outbox  *outbox.Outbox
	// Channels maps a channel id to the repositories its threads may work
	// on: the first is the one they get, the others may be named with
	// repo=<name>, and AnyRepo allows every repository. A repository that
	// a binding mapping (one without AnyRepo, of any platform) lists is
	// opened only in the channels that list it: not in DMs nor in unmapped
	// channels.
	Channels map[string][]string
	// AllowedUsers, AllowedRoles and AllowedChannels restrict who may use the
	// bot; empty lists allow everyone.
	AllowedUsers, AllowedRoles, AllowedChannels []string
	// RefuseDMs keeps direct messages from using the bot (the channel
	// allowlist cannot name a direct conversation).
	RefuseDMs bool
	// SpreadsThreads says that, with replicas, one thread's events may
	// reach different replicas (Slack); a reply the store does not know
	// then waits a moment for its thread's mention, stored by another
	// replica. Discord's shards keep a guild's events on one replica.
	SpreadsThreads bool
}

// Bridge routes chat input to sessions. Create it with New, run it with Run.
type Bridge struct {
	cfg       Config
	log       *slog.Logger
	platforms map[string]*platform
	slots     *runSlots // max_concurrent_runs, shared by the threads

	ctx    context.Context // lives until Run's shutdown begins
	cancel context.CancelFunc

	mu      sync.Mutex
	threads map[string]*thread // live thread owners by thread key
	byID    map[int64]*thread  // the same, by storage id
	// released is the fence of this replica's last release of a thread's
	// lease (replicas only), for the threads released last: taking one back
	// after that needs no recovery (one it forgot is recovered).
	released bounded.Map[int64, int64]
	// known holds the keys of threads recently stored or read; a reply in
	// a thread it does not hold is looked up in the store (threadStored).
	known   bounded.Map[string, struct{}]
	seen    recentSet // recently accepted deliveries, to answer duplicates without storage
	closing bool
	shut    chan struct{}  // closed as closing is set
	wg      sync.WaitGroup // thread owners
	bg      sync.WaitGroup // the lease keeper and the input watcher (replicas)

	heard chan struct{} // closed and replaced when the store tells of accepted input (replicas)
	news  int64         // the news of stored input told to owners so far (nudge)
	// refusedAt is when input was last refused because it could not be
	// stored (zero: not since the start); Receive reads and writes it.
	refusedAt time.Time
	// toldFull holds the threads told that their input cannot be stored for
	// want of room, until input of theirs is stored again (fulldisk.go).
	toldFull bounded.Map[string, struct{}]

	intake *intakeGate  // new thread owners wait while input is being accepted
	health *modelHealth // whether the model answers, and the threads waiting for it

	opening chan struct{} // held by the Open in progress: openings run one at a time

	catchUpBucket int64           // the minute of catchUps
	catchUps      map[string]bool // catch-ups this replica claimed in it

	// redact replaces cfg.Secrets in text shown in the chat, as the tools'
	// redaction does in their results.
	redact func(string) string
}

type platform struct {
	Platform
	name    string
	limit   int
	measure func(string) int // the length of Markdown as the adapter sends it
}

// New checks cfg and returns a Bridge.
func New(cfg Config) (*Bridge, error) {
	if cfg.Store == nil || cfg.Workspaces == nil {
		return nil, errors.New("bridge: Store and Workspaces are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxConcurrentRuns <= 0 {
		cfg.MaxConcurrentRuns = 8
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 30 * time.Minute
	}
	if cfg.threadMemory <= 0 {
		cfg.threadMemory = threadMemory
	}
	if cfg.PushRetry <= 0 {
		cfg.PushRetry = pushRetryMin
	}
	if cfg.IdleEvict <= 0 {
		cfg.IdleEvict = 10 * time.Minute
	}
	if cfg.MaxDownloadBytes <= 0 {
		cfg.MaxDownloadBytes = 20 << 20
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.CatchUpWindow <= 0 {
		cfg.CatchUpWindow = 24 * time.Hour
	}
	if cfg.Agent.BusyMode == agent.BehaviorNone {
		cfg.Agent.BusyMode = agent.BehaviorFollowUp
	}
	b := &Bridge{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "bridge"),
		platforms: map[string]*platform{},
		slots:     newRunSlots(cfg.MaxConcurrentRuns),
		threads:   map[string]*thread{},
		byID:      map[int64]*thread{},
		released:  bounded.New[int64, int64](cfg.threadMemory),
		known:     bounded.New[string, struct{}](cfg.threadMemory),
		toldFull:  bounded.New[string, struct{}](cfg.threadMemory),
		intake:    newIntakeGate(intakeMaxHold, intakeLinger),
		opening:   make(chan struct{}, 1),
		shut:      make(chan struct{}),
		redact:    tools.Redactor(cfg.Secrets),
	}
	if b.leasing() {
		b.cfg.Lease.setDefaults()
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.health = &modelHealth{probe: cfg.ModelProbe, sleep: cfg.ProbeSleep, min: probeMin, max: probeMax, model: cfg.Agent.Model.Name,
		log: b.log.With("part", "model health"), ctx: b.ctx, wg: &b.bg}
	if b.health.probe == nil {
		b.health.probe = probeModel(cfg.Model)
	}
	if b.health.sleep == nil {
		b.health.sleep = sleepCtx
	}
	for _, p := range cfg.Platforms {
		name := p.Adapter.Platform()
		if _, dup := b.platforms[name]; dup {
			return nil, fmt.Errorf("bridge: platform %s configured twice", name)
		}
		if p.Outbox == nil {
			return nil, fmt.Errorf("bridge: platform %s has no outbox", name)
		}
		lim := p.Adapter.Limits()
		b.platforms[name] = &platform{Platform: p, name: name, limit: lim.MaxMessageChars, measure: lim.Measure}
	}
	return b, nil
}

// Handler returns the chat.Handler an adapter of the named platform delivers to.
func (b *Bridge) Handler(platformName string) chat.Handler {
	return &handler{b: b, p: b.platforms[platformName]}
}

// Run recovers state left by the previous process (interrupted runs, queued
// input), starts every adapter and routes their messages until ctx ends. Then
// it shuts down gracefully: no new input, active runs get until shutdownCtx to
// finish and are then stopped and reported, state is flushed.
func (b *Bridge) Run(ctx context.Context) error {
	b.checkReserve()
	if err := b.recover(ctx); err != nil {
		return err
	}
	if b.leasing() {
		// They live until Shutdown is done: runs finishing meanwhile keep
		// their threads.
		b.log.Info("sharing the store with other replicas: threads are owned by lease", "owner", b.cfg.Lease.Owner,
			"lease_ttl", b.cfg.Lease.TTL, "renew", b.cfg.Lease.Renew)
		b.bg.Add(2)
		go func() { defer b.bg.Done(); b.keepLeases(b.ctx) }()
		go func() { defer b.bg.Done(); b.watchInput(b.ctx) }()
	}
	if len(b.cfg.Schedules) > 0 {
		// It lives until Shutdown: a firing then is left to the next start
		// (or another replica), which runs it as missed.
		b.bg.Add(1)
		go func() { defer b.bg.Done(); b.runSchedules(b.ctx) }()
	}
	actx, stopAdapters := context.WithCancel(ctx)
	defer stopAdapters()
	errc := make(chan error, len(b.platforms))
	for _, p := range b.platforms {
		go func() {
			err := p.Adapter.Run(actx, b.Handler(p.name))
			switch {
			case err == nil || actx.Err() != nil:
				err = nil
			case !strings.HasPrefix(err.Error(), p.name+":"):
				err = fmt.Errorf("%s: %w", p.name, err)
			}
			errc <- err
		}()
	}
	var runErr error
	pending := len(b.platforms)
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		// An adapter stopped by itself; if it failed for good (bad token,
		// disallowed intents), the bot stops.
		pending--
	}
	stopAdapters()
	for ; pending > 0; pending-- {
		<-errc
	}
	return runErr
}

// Shutdown stops taking input, lets active runs finish, then stops them
// (telling their threads), waits for every thread owner and flushes the
// outboxes — all before ctx's deadline: runs get the time until shortly before
// it, and the rest is kept for stopping, reporting and flushing.
func (b *Bridge) Shutdown(ctx context.Context) error {
	runCtx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		reserve := min(5*time.Second, time.Until(deadline)/4)
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, deadline.Add(-reserve))
		defer cancel()
	}
	// Every owner is told before the intake gate lets any go (shut): one
	// waiting there finds its stop ahead of its input.
	b.mu.Lock()
	for _, t := range b.threads {
		t.shutdown(runCtx)
	}
	if !b.closing {
		b.closing = true
		close(b.shut)
	}
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("bridge: shutdown: %w", ctx.Err())
	}
	b.cancel()
	b.bg.Wait()
	for _, p := range b.platforms {
		if ferr := p.Outbox.Flush(ctx); ferr != nil {
			// The grace is over: what the platform's rate limits kept in
			// the outbox is dropped. docs/behaviour.md §6 wants SIGTERM to end with
			// 0 within the grace, so this is the operator's log line, not
			// the exit code; the runs themselves were checkpointed above.
			b.log.Warn("shutdown grace ended before all chat output was sent", "platform", p.name, "err", ferr)
		}
	}
	return err
}

// recover reports runs the previous process left running and replays input
// that was accepted but not delivered.
func (b *Bridge) recover(ctx context.Context) error {
	threads, err := b.cfg.Store.ActiveThreads(ctx)
	if err != nil {
		return fmt.Errorf("bridge: loading threads: %w", err)
	}
	b.mu.Lock()
	for _, t := range threads {
		if t.SessionID != "" || t.Repo == "" {
			// A thread without a repository holds requests until one is
			// chosen in it (repopick.go).
			b.known.Put(refOf(t.Key).Key(), struct{}{})
		}
	}
	b.mu.Unlock()
	if b.leasing() {
		// Other replicas share the store: only the threads this one takes
		// (watchInput's first takeOver, and every claim) are recovered.
		return nil
	}

	since := b.storedBefore(ctx)
	runs, err := b.cfg.Store.InterruptRuns(ctx)
	if err != nil {
		return fmt.Errorf("bridge: marking interrupted runs: %w", err)
	}
	for _, r := range runs {
		recordInterrupted(ctx, b.cfg.Store, r, b.log)
	}
	b.recoverAnswers(ctx, since, 0) // the answers, then the notices stored after them
	for _, r := range runs {
		p := b.platforms[r.Thread.Platform]
		if p == nil {
			continue
		}
		b.reportInterrupted(p, r)
		// Its work (a commit not pushed yet, changes not committed) goes to
		// the remote now, ahead of any input replayed below.
		if rec, err := b.cfg.Store.ThreadByID(ctx, r.ThreadID); err == nil && rec.Repo != "" {
			b.dispatchItem(p, rec, func(*thread) message { return msgResume{r} })
		}
	}

	// Input that waited for the model is answered first once it is back;
	// what was queued behind it follows.
	waiting, err := b.cfg.Store.WaitingRuns(ctx)
	if err != nil {
		return fmt.Errorf("bridge: loading input that waits for the model: %w", err)
	}
	if len(waiting) > 0 {
		// Until the first probe, the model is taken for down: input
		// replayed below waits with the input that waited before.
		b.health.suspect(reasonBeforeRestart)
	}
	for _, r := range waiting {
		p := b.platforms[r.Thread.Platform]
		if p == nil {
			continue
		}
		if rec, err := b.cfg.Store.ThreadByID(ctx, r.ThreadID); err == nil && rec.SessionID == r.SessionID {
			b.dispatchItem(p, rec, func(*thread) message { return msgAwaitStored{r} })
		}
	}

	pending, err := b.cfg.Store.AllPendingInbound(ctx)
	if err != nil {
		return fmt.Errorf("bridge: loading queued input: %w", err)
	}
	for _, in := range pending {
		rec, err := b.cfg.Store.ThreadByID(ctx, in.ThreadID)
		if err != nil {
			b.log.Error("queued input for an unknown thread", "inbound", in.ID, "err", err)
			continue
		}
		p := b.platforms[rec.Key.Platform]
		if p == nil {
			continue
		}
		b.dispatch(p, rec, pendingInput{id: in.ID, in: inboundFromStore(rec, in), queue: in.Queue})
	}
	if len(pending) > 0 {
		b.log.Info("replaying queued input", "count", len(pending))
	}
	return nil
}

// reportInterrupted tells a thread that its run r was cut off: its status
// message says so, and a notice follows.
func (b *Bridge) reportInterrupted(p *platform, r storage.Run) {
	ref := refOf(r.Thread)
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if msgs, err := b.cfg.Store.OutboundForRun(ctx, r.ID); err == nil {
		for _, m := range msgs {
			if m.Kind == storage.OutboundStatus && m.MessageID != "" {
				p.Outbox.EditFinal(p.Outbox.Adopt(ref, m.MessageID), interruptedStatus(m.Text), outbox.High)
			}
		}
	}
	b.log.Info("reported interrupted run", "thread", ref.Key(), "run", r.ID)
}

// interruptedNotice tells a thread that its run was cut off.
const interruptedNotice = "⚠️ The previous run in this thread was interrupted: the bot restarted while it was working. " +
	"The conversation is kept; send a message to continue."

// recordInterrupted stores the notice of a cut-off run as an answer is
// stored (PendingPostStore), under a key of its own, so that a process that
// dies before its outbox posted it leaves it to the next one. A notice stored
// already (by a process that died since) is kept as it is.
func recordInterrupted(ctx context.Context, store storage.Store, r storage.Run, log *slog.Logger) {
	_, err := store.RecordPendingPosts(ctx, []storage.PendingPost{{ThreadID: r.ThreadID, RunID: r.ID, Key: fmt.Sprintf("interrupted-%d", r.ID), Text: interruptedNotice}})
	if err != nil && !errors.Is(err, storage.ErrFenced) {
		log.Debug("storing the interrupted run's notice", "run", r.ID, "err", err)
	}
}

// interruptedStatus is a status message's last saved text with its working
// line replaced by the news that the run was cut off.
func interruptedStatus(saved string) string {
	first, rest, _ := strings.Cut(saved, "\n")
	if !strings.HasPrefix(first, workingHeaderPrefix) {
		rest = saved
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return "⚠️ _interrupted: the bot restarted_"
	}
	return rest + "\n\n⚠️ _interrupted: the bot restarted_"
}

// dispatch hands accepted input to its thread's owner, starting one if needed.
func (b *Bridge) dispatch(p *platform, rec storage.Thread, pi pendingInput) {
	b.dispatchItem(p, rec, func(*thread) message { return msgInput{&pi} })
}

// dispatchItem hands the thread's owner (started if needed) the message mk
// makes, if any.
func (b *Bridge) dispatchItem(p *platform, rec storage.Thread, mk func(*thread) message) {
	ref := refOf(rec.Key)
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.threads[ref.Key()]
	if t == nil && b.closing {
		// Shutdown stops the owners it found; a new one would keep it
		// waiting. The input is stored: the next start (or another
		// replica) takes it.
		return
	}
	if t == nil {
		t = newThread(b, p, ref, rec)
		b.threads[ref.Key()] = t
		b.byID[rec.ID] = t
		b.wg.Add(1)
		t.post(msgStart{})
	}
	if m := mk(t); m != nil {
		t.post(m)
	}
}

// evict removes an idle thread owner if nothing arrived for it meanwhile.
func (b *Bridge) evict(t *thread) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.inbox.Len() > 0 {
		return false
	}
	b.forgetLocked(t)
	return true
}

// forget removes a thread owner that ends whatever its inbox holds (it lost
// or could not take the thread's lease: the holder takes that input).
func (b *Bridge) forget(t *thread) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forgetLocked(t)
}

func (b *Bridge) forgetLocked(t *thread) {
	if b.threads[t.ref.Key()] == t {
		delete(b.threads, t.ref.Key())
	}
	if b.byID[t.rec.ID] == t {
		delete(b.byID, t.rec.ID)
	}
}

// handler is the chat.Handler of one platform.
type handler struct {
	b *Bridge
	p *platform
}

var (
	_ chat.Handler      = (*handler)(nil)
	_ chat.ThreadCloser = (*handler)(nil)
)

// Receive implements chat.Handler.
func (h *handler) Receive(ctx context.Context, in chat.Inbound) (chat.Receipt, error) {
	b := h.b
	b.intake.enter()
	defer b.intake.leave()
	if strings.TrimSpace(in.Text) == "" && len(in.Attachments) == 0 {
		return chat.Ignored, nil
	}
	key := in.Thread.Key()
	b.mu.Lock()
	known := b.known.Has(key)
	b.mu.Unlock()
	if !known && !in.Mention && in.MessageID != in.Thread.Thread {
		// A reply in a thread this process forgot, or that another replica
		// started, maybe this very moment: its mention may be on its way
		// into the store.
		var err error
		if known, err = b.threadStored(ctx, in.Thread, b.leasing() && h.p.SpreadsThreads); err != nil {
			b.noteRefused(err)
			return 0, err
		}
		if known {
			b.mu.Lock()
			b.known.Put(key, struct{}{})
			b.mu.Unlock()
		} else if b.refusedLately() {
			// Input was refused lately because it could not be stored: the
			// mention that starts this thread may be among it, on its way
			// back from the platform. While the store does not know the
			// thread, the reply is refused too (not acknowledged: delivered
			// again) rather than dropped.
			return 0, errReplyBeforeItsThread
		}
	}
	if !known && sessionless(in.Text) {
		return h.answerUnknownThread(ctx, in)
	}
	if !known && !in.Mention {
		return chat.Ignored, nil
	}
	rc, err := h.admit(ctx, in, false, "")
	b.noteRefused(err)
	return rc, err
}

// errReplyBeforeItsThread refuses a reply in a thread the store does not
// know while input was refused lately (Receive).
var errReplyBeforeItsThread = errors.New("bridge: a reply in a thread not stored yet, while input was refused lately; not acknowledged")

// refusedWindow is how long after input was refused a reply in a thread the
// store does not know is refused too: Slack delivers an event it saw no
// acknowledgement of again three times, the last about five minutes after
// the first.
const refusedWindow = 6 * time.Minute

// noteRefused records that input was refused because it could not be
// stored (err, from storing it); a cancelled context is no refusal.
func (b *Bridge) noteRefused(err error) {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return
	}
	now := b.cfg.Now()
	b.mu.Lock()
	b.refusedAt = now
	b.mu.Unlock()
}

// refusedLately reports whether input was refused within refusedWindow.
func (b *Bridge) refusedLately() bool {
	b.mu.Lock()
	at := b.refusedAt
	b.mu.Unlock()
	return !at.IsZero() && b.cfg.Now().Sub(at) < refusedWindow
}

// admit takes a message for a known thread (or a mention): not while
// shutting down, once per delivery, from an allowed author unless trusted
// (a verified forge webhook, a configured schedule), then stored and handed
// to the thread. A thread it creates keeps origin (storage.ThreadInit).
func (h *handler) admit(ctx context.Context, in chat.Inbound, trusted bool, origin string) (chat.Receipt, error) {
	b, p := h.b, h.p
	key := in.Thread.Key()
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	if closing {
		// Not acknowledged: the platform redelivers after the restart.
		return 0, errors.New("bridge: shutting down")
	}
	// Platforms deliver one message more than once (Slack: as app_mention
	// and as message, and again on timeouts). Storage de-duplicates for sure;
	// the recent set answers the common case without a write.
	deliveryKeys := deliveryKeys(p.name, in)
	b.mu.Lock()
	dup := b.seen.hasAny(deliveryKeys)
	b.mu.Unlock()
	if dup {
		return chat.Duplicate, nil
	}
	if !trusted && !h.allowed(in) {
		note := "Sorry, you're not allowed to use this bot here. Ask an admin to add you."
		if in.DM && p.RefuseDMs {
			note = "Sorry, this bot doesn't take direct messages here. Mention it in a channel it works in."
		}
		b.log.Info("refused input from a user who is not allowed", "thread", key, "user", in.Author.ID, "dm", in.DM)
		return h.refuse(ctx, in, note)
	}
	return h.accept(ctx, in, deliveryKeys, origin)
}

// refuse tells the author privately why their message was refused: one note
// per message, though platforms deliver a mention twice. Nothing is stored
// but that the note was sent.
func (h *handler) refuse(ctx context.Context, in chat.Inbound, note string) (chat.Receipt, error) {
	b, p := h.b, h.p
	if first, err := b.cfg.Store.MarkEventProcessed(ctx, p.name, "refused/"+in.Thread.Channel+"/"+refusalID(in)); err != nil || !first {
		return chat.Refused, err
	}
	if w, ok := p.Adapter.(chat.Whisperer); ok {
		if err := w.Whisper(ctx, in, note); err != nil {
			b.log.Warn("refusal note failed", "thread", in.Thread.Key(), "err", err)
		}
	}
	return chat.Refused, nil
}

// accept stores an allowed message and hands it to its thread's owner.
func (h *handler) accept(ctx context.Context, in chat.Inbound, deliveryKeys []string, origin string) (chat.Receipt, error) {
	b, p := h.b, h.p
	key := in.Thread.Key()
	skey := storeKey(in.Thread)
	sin := storage.Inbound{
		Platform: p.name, EventID: in.EventID, Channel: in.Thread.Channel, MessageID: in.MessageID,
		AuthorID: in.Author.ID, AuthorName: in.Author.Name, AuthorEmail: in.Author.Email,
		Text: in.Text, Mode: classify(in.Text).mode(),
	}
	// Files whose links expire are kept before the message is stored (and
	// acknowledged).
	keptIn := ""
	keep := func(repo string) {
		keptIn = repo
		if len(in.Attachments) > 0 {
			in.Attachments = slices.Clone(in.Attachments)
			h.keepFiles(ctx, &in, repo)
		}
		sin.Attachments, _ = marshalAttachments(in.Attachments)
	}
	var id int64
	var dup bool
	// A mention in a thread this process has not stored input for is most
	// often a new thread: no look-up before the write, which creates the
	// thread or finds it. (Without a repository for it, the look-up says
	// whether it needs one.)
	b.mu.Lock()
	known := b.known.Has(key)
	b.mu.Unlock()
	var repo string
	var rerr error
	resolved := !known && in.Mention
	if resolved {
		repo, rerr = b.resolveRepo(p, in)
	}
	var rec storage.Thread
	err := storage.ErrNotFound
	if !resolved || rerr != nil {
		rec, err = b.cfg.Store.GetThread(ctx, skey)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		// A new thread: created with its first message in one transaction,
		// one commit for the acknowledgement to wait for.
		if !resolved {
			repo, rerr = b.resolveRepo(p, in)
		}
		if na := (*chat.NotAllowedError)(nil); errors.As(rerr, &na) {
			b.log.Info("refused a repository the channel may not open", "thread", key, "user", in.Author.ID)
			return h.refuse(ctx, in, na.Note)
		}
		if errors.Is(rerr, errChooseRepo) {
			repo, rerr = "", nil // stored without one: the thread chooses
		}
		if rerr != nil {
			p.Outbox.Post(in.Thread, "❌ "+rerr.Error(), outbox.High, nil)
			return chat.Ignored, nil
		}
		keep(repo)
		var a storage.Accepted
		err = b.withReserve(func() (err error) {
			a, err = b.cfg.Store.AcceptInboundInThread(ctx, skey, storage.ThreadInit{Repo: repo, Branch: b.cfg.Workspaces.BranchFor(wsKey(in.Thread)), Origin: origin}, sin)
			return err
		})
		rec, id, dup = a.Thread, a.ID, a.Duplicate
	case err == nil:
		sin.ThreadID = rec.ID
		keep(rec.Repo)
		err = b.withReserve(func() (err error) {
			id, dup, err = b.cfg.Store.AcceptInbound(ctx, sin)
			return err
		})
	}
	if err != nil || dup {
		h.dropKept(in, keptIn)
	}
	if errors.Is(err, storage.ErrFull) {
		h.tellFull(in.Thread)
	}
	if err != nil {
		return 0, err
	}
	b.storedAgain(key)
	crashpoint.Hit(crashpoint.Accepted)
	b.mu.Lock()
	b.seen.add(deliveryKeys)
	b.known.Put(key, struct{}{})
	b.mu.Unlock()
	if dup {
		return chat.Duplicate, nil
	}
	b.dispatch(p, rec, pendingInput{id: id, in: in})
	return chat.Accepted, nil
}

// forgeAuthorID is the author id of input a forge's webhook gave a thread.
const forgeAuthorID = "forge"

// ForgeReview hands the thread working on repo's branch a `!review`, as if a
// person had asked for it: a forge's webhook said the branch's pull request
// got review comments. The webhook was verified by its secret, so the
// chat's allowlists do not apply; delivery is durable and de-duplicated by
// delivery like any message. It reports whether a thread was found.
func (b *Bridge) ForgeReview(ctx context.Context, repo, branch, delivery string) (bool, error) {
	rec, found, err := b.branchThread(ctx, repo, branch)
	if err != nil || !found {
		return false, err
	}
	p := b.platforms[rec.Key.Platform]
	if p == nil {
		return false, nil
	}
	in := chat.Inbound{
		Thread:  refOf(rec.Key),
		EventID: "forge-review/" + delivery,
		Author:  chat.Author{ID: forgeAuthorID, Name: "code review"},
		Text:    "!review",
		Time:    b.cfg.Now(),
	}
	_, err = (&handler{b: b, p: p}).admit(ctx, in, true, "")
	return true, err
}

// deliveryKeys are the ids that identify a message's deliveries.
func deliveryKeys(platform string, in chat.Inbound) []string {
	var keys []string
	if in.EventID != "" {
		keys = append(keys, platform+"/e/"+in.EventID)
	}
	if in.MessageID != "" {
		keys = append(keys, platform+"/m/"+in.Thread.Channel+"/"+in.MessageID)
	}
	return keys
}

// threadMemory is how many threads' facts the Bridge caches by default.
const threadMemory = 10000

// recentSet remembers the last recentSetSize keys added.
type recentSet struct {
	keys map[string]struct{}
	ring []string
	next int
}

const recentSetSize = 4096

func (r *recentSet) hasAny(keys []string) bool {
	for _, k := range keys {
		if _, ok := r.keys[k]; ok {
			return true
		}
	}
	return false
}

func (r *recentSet) add(keys []string) {
	if r.keys == nil {
		r.keys = make(map[string]struct{}, recentSetSize)
		r.ring = make([]string, recentSetSize)
	}
	for _, k := range keys {
		if _, ok := r.keys[k]; ok {
			continue
		}
		if old := r.ring[r.next]; old != "" {
			delete(r.keys, old)
		}
		r.ring[r.next] = k
		r.keys[k] = struct{}{}
		r.next = (r.next + 1) % recentSetSize
	}
}

// refusalID identifies a refused message across its deliveries.
func refusalID(in chat.Inbound) string {
	if in.MessageID != "" {
		return in.MessageID
	}
	return in.EventID
}

// AnyRepo among a channel's repositories lets its threads name any one.
const AnyRepo = "*"

func (h *handler) allowed(in chat.Inbound) bool {
	p := h.p
	if in.DM && p.RefuseDMs {
		return false
	}
	if len(p.AllowedChannels) > 0 && !in.DM && !slices.Contains(p.AllowedChannels, mappedChannel(in)) {
		return false
	}
	if len(p.AllowedUsers) == 0 && len(p.AllowedRoles) == 0 {
		return true
	}
	if slices.Contains(p.AllowedUsers, in.Author.ID) {
		return true
	}
	for _, r := range in.Author.Roles {
		if slices.Contains(p.AllowedRoles, r) {
			return true
		}
	}
	return false
}

// Describe implements chat.Handler.
func (h *handler) Describe(in chat.Inbound) (string, string, error) {
	name, err := h.b.resolveRepo(h.p, in)
	if errors.Is(err, errChooseRepo) {
		name, err = "", nil // chosen in the thread
	}
	if err != nil {
		return "", "", err
	}
	return name, h.b.cfg.Workspaces.BranchFor(wsKey(in.Thread)), nil
}

// ActiveThreads implements chat.Handler: the platform's threads with a
// session that someone wrote in within the catch-up window. The others are
// idle; catching up on them would cost a rate-limited call each on every
// reconnect (Slack allows conversations.replies 50 times a minute, or once
// for apps outside the Marketplace), for messages that are very unlikely.
func (h *handler) ActiveThreads(ctx context.Context) ([]chat.ThreadCursor, error) {
	b := h.b
	threads, err := b.cfg.Store.RecentThreads(ctx, h.p.name, b.cfg.Now().Add(-b.cfg.CatchUpWindow))
	if err != nil {
		return nil, err
	}
	var out []chat.ThreadCursor
	// Replicas each reconnect and would each read every thread; the first
	// to ask in a minute reads it, and the others leave it (what reaches the
	// platform after that is delivered to a connection that is up). The
	// first one reads it again at its own next reconnect.
	bucket := b.cfg.Now().Truncate(time.Minute).Unix()
	for _, t := range threads {
		if t.SessionID == "" {
			continue
		}
		if b.leasing() {
			key := fmt.Sprintf("catch-up/%d/%d", t.ID, bucket)
			first, err := b.cfg.Store.MarkEventProcessed(ctx, h.p.name, key)
			if err != nil {
				return nil, err
			}
			if !first && !b.caughtUp(key, bucket, false) {
				continue
			}
			b.caughtUp(key, bucket, true)
		}
		out = append(out, chat.ThreadCursor{Thread: refOf(t.Key), LastSeen: t.LastSeenMessage})
	}
	return out, nil
}

// CloseThread implements chat.ThreadCloser: a thread the platform no longer
// has is closed, so it is neither caught up on nor resumed again.
func (h *handler) CloseThread(ctx context.Context, thread chat.ThreadRef) error {
	b := h.b
	rec, err := b.cfg.Store.GetThread(ctx, storeKey(thread))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := b.cfg.Store.SetThreadState(ctx, rec.ID, storage.ThreadClosed); err != nil {
		return err
	}
	b.mu.Lock()
	b.known.Delete(thread.Key())
	b.mu.Unlock()
	b.log.Info("closed a thread the platform no longer has", "thread", thread.Key())
	return nil
}

// caughtUp reports whether this replica claimed the catch-up key (of the
// minute bucket), and records it with add. Only the current minute is kept.
func (b *Bridge) caughtUp(key string, bucket int64, add bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.catchUpBucket != bucket {
		b.catchUpBucket, b.catchUps = bucket, map[string]bool{}
	}
	if add {
		b.catchUps[key] = true
	}
	return b.catchUps[key]
}

var repoWord = regexp.MustCompile(`(?:^|\s)repo=([A-Za-z0-9_][A-Za-z0-9._-]*)`)

// resolveRepo picks the repository of a new thread: the platform's explicit
// argument, else a repo=<name> word in the text, else the channel's
// repository, else the default; then holds it to the channel mapping (see
// Platform.Channels). A name the place may not open, known or not, is
// refused with a *chat.NotAllowedError naming the ones it may. Without a
// name, the one repository open in the place is the thread's; of several,
// the thread chooses (errChooseRepo).
func (b *Bridge) resolveRepo(p *platform, in chat.Inbound) (string, error) {
	name := in.Repo
	if name == "" {
		if m := repoWord.FindStringSubmatch(in.Text); m != nil {
			name = m[1]
		}
	}
	var mapped []string
	if !in.DM {
		mapped = p.Channels[mappedChannel(in)]
	}
	if name == "" && len(mapped) > 0 {
		name = mapped[0]
	}
	if name == "" {
		name = b.cfg.DefaultRepo
	}
	open := b.openRepos(mapped)
	switch {
	case name == "" && len(open) == 1:
		return open[0], nil
	case name == "" && len(open) > 1:
		return "", errChooseRepo // a menu in the thread (repopick.go)
	case name == "":
		return "", fmt.Errorf("no repository is configured for this channel; known repositories: %s", strings.Join(open, ", "))
	case slices.Contains(open, name):
		return name, nil
	}
	// An unknown name and a repository kept from this place get the same
	// private note, so that the refusal does not tell whether it exists.
	note := fmt.Sprintf("Sorry, `%s` can't be opened in this channel.", name)
	switch {
	case in.DM:
		note = fmt.Sprintf("Sorry, `%s` can't be opened from a direct message: a repository is kept to the channels mapped to it.", name)
	case len(mapped) == 0:
		note = fmt.Sprintf("Sorry, `%s` can't be opened in this channel: a repository is kept to the channels mapped to it.", name)
	}
	if len(open) > 0 {
		note += " Here you may use: " + strings.Join(open, ", ") + "."
	}
	return "", &chat.NotAllowedError{Note: note}
}

// openRepos are the repositories a thread may open given its channel's
// mapping: the mapped ones (all, with AnyRepo); without a mapping, the
// repositories no binding mapping (one without AnyRepo) of any platform
// names.
func (b *Bridge) openRepos(mapped []string) []string {
	known := b.cfg.Workspaces.Repos()
	switch {
	case slices.Contains(mapped, AnyRepo):
		return known
	case len(mapped) > 0:
		return slices.DeleteFunc(slices.Clone(mapped), func(r string) bool { return !slices.Contains(known, r) })
	}
	return slices.DeleteFunc(known, func(r string) bool {
		for _, p := range b.platforms {
			for _, repos := range p.Channels {
				if slices.Contains(repos, r) && !slices.Contains(repos, AnyRepo) {
					return true
				}
			}
		}
		return false
	})
}

// mappedChannel is the channel whose mapping and allowlist entry apply to
// in: its thread's parent channel where the thread is a channel of its own.
func mappedChannel(in chat.Inbound) string {
	if in.Parent != "" {
		return in.Parent
	}
	return in.Thread.Channel
}

// commandWord returns the name of a leading !command (or /command), in lower
// case, and its arguments: the rest of the text after the first space or
// line break.
func commandWord(text string) (string, string) {
	t := strings.TrimSpace(text)
	if len(t) < 2 || (t[0] != '!' && t[0] != '/') {
		return "", ""
	}
	name, args := t[1:], ""
	if i := strings.IndexAny(name, " \t\r\n"); i >= 0 {
		name, args = name[:i], name[i:]
	}
	return strings.ToLower(name), strings.TrimSpace(args)
}

func storeKey(r chat.ThreadRef) storage.ThreadKey {
	return storage.ThreadKey{Platform: r.Platform, Team: r.Team, Channel: r.Channel, Thread: r.Thread}
}

func refOf(k storage.ThreadKey) chat.ThreadRef {
	return chat.ThreadRef{Platform: k.Platform, Team: k.Team, Channel: k.Channel, Thread: k.Thread}
}

// wsKey is the workspace (and branch) key of a thread (see
// workspace.ChatThreadKey).
func wsKey(r chat.ThreadRef) workspace.ThreadKey {
	return workspace.ChatThreadKey(r.Platform, r.Channel, r.Thread)
}
