// Package agent is threadsmith's domain core: the AgentSession that turns a
// person's messages into model calls and tool runs, modelled on the session layer
// of the coding agent pi (docs/agent.md).
//
// A Session wraps one Agent (the loop: model calls, tools, steer and followUp
// queues) and adds the prompt pipeline, a serial event queue, persistence,
// automatic retries and context compaction. It works with no listener at all.
//
// Concurrency: at most one run is active per session. The goroutine that runs it
// (started by Start) is the only one that changes the conversation; other
// goroutines talk to the session through its methods, which only queue input,
// cancel, or read snapshots. Every event goes through one serial queue, in
// emission order, to extensions, then listeners, then the store; a panicking
// handler is logged and skipped. Listeners run on that queue and must not block
// for long.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/execqueue"
)

// Behavior says what to do with a prompt that arrives while a run is active.
type Behavior int

const (
	// BehaviorNone refuses: Start returns ErrBusy.
	BehaviorNone Behavior = iota
	// BehaviorSteer delivers at the next turn boundary and skips remaining tool calls.
	BehaviorSteer
	// BehaviorFollowUp delivers when the run would otherwise end.
	BehaviorFollowUp
)

// PromptOptions qualify a prompt.
type PromptOptions struct {
	Images []llm.Content
	// Behavior applies only when a run is active; an idle session starts a run.
	Behavior Behavior
	// SkipExpansion skips input hooks and skill/template expansion
	// (pipeline stages 1–2), for messages that extensions send themselves.
	SkipExpansion bool
	// InputID is copied into the user message (see llm.Message.InputID).
	InputID string
	// Join makes input that would start a run fail with ErrIdle instead:
	// it may only join the active one (as Behavior says). The check and the
	// queueing are one step, so a caller that believes a run goes on cannot
	// start a second one as the first settles. Input refused before the
	// input hooks ran gets ErrIdle itself; after, an *IdleError.
	Join bool
}

// Outcome says what Start did with the input.
type Outcome int

const (
	Started Outcome = iota + 1 // a run started
	Queued                     // queued as steer or followUp on the active run
	Handled                    // an input hook took it
)

func (o Outcome) String() string {
	switch o {
	case Started:
		return "started"
	case Queued:
		return "queued"
	case Handled:
		return "handled"
	}
	return "unknown"
}

var (
	// ErrBusy is returned when a prompt arrives during a run without a Behavior.
	ErrBusy = errors.New("already processing; specify steer or followUp")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("session closed")
	// ErrIdle is returned for input given with Join while no run is active.
	// When the run ended while the input hooks ran, the error is an
	// *IdleError that holds what the hooks made of the input.
	ErrIdle = errors.New("no active run to join")
	// ErrNothingToAnswer is returned by Continue when the context does not
	// end with input waiting for the model.
	ErrNothingToAnswer = errors.New("nothing to answer: the conversation ends with a reply")
)

// IdleError is ErrIdle for input whose run ended while its input hooks
// ran: the hooks have seen it, and must not see it again (a hook may act,
// as one that reads new review comments marks them read). Give Text and
// Images again with SkipExpansion once the session is idle.
type IdleError struct {
	Text   string
	Images []llm.Content
}

func (e *IdleError) Error() string { return ErrIdle.Error() }

// Is makes errors.Is(err, ErrIdle) hold for an *IdleError.
func (e *IdleError) Is(target error) bool { return target == ErrIdle }

// Config configures a Session.
type Config struct {
	// ID names the session in the Store.
	ID        string
	Model     llm.Model
	ModelName string
	// Models lists the models SetModel accepts, with their limits; empty accepts
	// any name with the limits below.
	Models       []ModelSpec
	SystemPrompt string
	Tools        []Tool
	// MaxTokens and ContextWindow are the limits of ModelName (a window of 0
	// disables compaction triggers).
	MaxTokens     int
	ContextWindow int
	Store         Store
	// Entries is the record to resume from (empty for a new session).
	Entries      []transcript.Entry
	Extensions   []Extension
	Resources    Resources
	SteerMode    QueueMode
	FollowUpMode QueueMode
	Retry        RetrySettings
	Compaction   compaction.Settings
	Logger       *slog.Logger
	// Now is the clock for timestamps (default time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends, reporting ctx's error then (default: a real
	// timer). Tests replace it to skip retry delays.
	Sleep func(ctx context.Context, d time.Duration) error
	// StoreUnavailable reports whether an error of Store says it could not
	// be reached (a database restarting) or had no room for now: such an
	// append is repeated, with
	// pauses, for up to persistPatience before it counts as failed. Nil:
	// never.
	StoreUnavailable func(error) bool
}

// ModelSpec names a model and its limits.
type ModelSpec struct {
	Name string
	// Provider is recorded in the session's model_change entries.
	Provider      string
	ContextWindow int
	MaxTokens     int
}

// Session is one conversation (one chat thread). See the package doc.
type Session struct {
	id     string
	cfg    Config
	agent  *Agent
	events execqueue.Queue[queuedEvent]
	log    *slog.Logger
	now    func() time.Time

	baseCtx    context.Context
	baseCancel context.CancelFunc
	wg         sync.WaitGroup

	lmu          sync.Mutex
	listeners    []listener // copy-on-write: never modified in place
	nextListener int
	processFn    func(Event) // s.process, bound once

	mu              sync.Mutex
	running         bool
	idle            chan struct{}
	cancelRun       context.CancelFunc
	aborted         bool
	gaveUp          bool // the run's retries were spent: queued input waits for the next run
	closed          bool
	compacting      bool
	pendingNextTurn []llm.Message
	entries         []transcript.Entry // as persisted; appended on the event queue
	nextSeq         int64
	window          int // the current model's context window
	lastUsage       *llm.Usage

	// Owned by the run goroutine.
	retryAttempt  int
	overflowTried bool
	lastAssistant *llm.Message
	compactions   int // compactions that succeeded (by the run goroutine or Compact's caller)
}

// queuedEvent is one item of the session's event queue: an event and the
// function that processes it (s.process, or a persistence step with no event).
type queuedEvent struct {
	ev Event
	fn func(Event)
}

func runQueued(it queuedEvent) { it.fn(it.ev) }

// queuedName names an item in the log line of a panic.
func queuedName(it queuedEvent) string {
	if it.ev == nil {
		return "persist"
	}
	return it.ev.Type()
}

type listener struct {
	id int
	fn func(Event)
}

// New returns an idle session, resumed from cfg.Entries when given.
func New(cfg Config) (*Session, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	s := &Session{
		id:  cfg.ID,
		cfg: cfg,
		log: cfg.Logger.With("session", cfg.ID),
		now: cfg.Now,
	}
	s.events.Run = runQueued
	s.events.Log = s.log
	s.events.Name = queuedName
	s.processFn = s.process
	s.baseCtx, s.baseCancel = context.WithCancel(context.Background())
	restored := transcript.BuildContext(cfg.Entries)
	s.entries = slices.Clone(cfg.Entries)
	s.nextSeq = restored.NextSeq
	model := cfg.ModelName
	s.window = cfg.ContextWindow
	maxTokens := cfg.MaxTokens
	if restored.Model != "" {
		// A model the config no longer lists (the operator removed it) would
		// fail every call; the session goes back to the configured one.
		if spec, ok := s.spec(restored.Model); ok {
			model = restored.Model
			s.window, maxTokens = spec.ContextWindow, spec.MaxTokens
		} else {
			s.log.Warn("the session's model is no longer configured; using the default", "model", restored.Model, "default", model)
		}
	}
	for i := len(restored.Messages) - 1; i >= 0; i-- {
		if m := restored.Messages[i]; m.Role == llm.RoleAssistant && m.Usage != nil {
			s.lastUsage = m.Usage
			break
		}
	}
	s.agent = NewAgent(AgentConfig{
		Model:        cfg.Model,
		ModelName:    model,
		SystemPrompt: s.baseSystemPrompt(),
		Tools:        cfg.Tools,
		MaxTokens:    maxTokens,
		SteerMode:    cfg.SteerMode,
		FollowUpMode: cfg.FollowUpMode,
		Messages:     restored.Messages,
		Emit:         s.handle,
		BeforeTools:  func() { _ = s.events.Wait(context.Background()) },
		BeforeCall:   s.beforeCallHook(),
		Now:          cfg.Now,
		Logger:       s.log,
	})
	// Queue changes are reported in the order they happen: the observer runs
	// under the agent's queue lock and only appends to the serial queue.
	s.agent.setQueueObserver(func(steer, followUp []llm.Message) {
		s.events.Add(queuedEvent{QueueUpdate{Steer: steer, FollowUp: followUp}, s.processFn})
	})
	return s, nil
}

// beforeCallHook is the agent's BeforeCall: the extensions'
// BeforeModelCall hooks, in order, once the run's events so far are
// processed; nil when no extension has one.
func (s *Session) beforeCallHook() func(ctx context.Context) error {
	var hooks []Extension
	for _, x := range s.cfg.Extensions {
		if x.BeforeModelCall != nil {
			hooks = append(hooks, x)
		}
	}
	if len(hooks) == 0 {
		return nil
	}
	return func(ctx context.Context) error {
		if err := s.events.Wait(ctx); err != nil {
			return nil // the run was stopped: the loop sees it
		}
		for _, x := range hooks {
			var err error
			s.safely(x.Name+" before-model-call hook", func() { err = x.BeforeModelCall(ctx) })
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Subscribe registers a listener for every event, in emission order, on the event
// queue. It returns a function that removes the listener.
func (s *Session) Subscribe(fn func(Event)) (unsubscribe func()) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	s.nextListener++
	id := s.nextListener
	s.listeners = append(slices.Clip(s.listeners), listener{id: id, fn: fn})
	return func() {
		s.lmu.Lock()
		defer s.lmu.Unlock()
		s.listeners = slices.DeleteFunc(slices.Clone(s.listeners), func(l listener) bool { return l.id == id })
	}
}

// Prompt runs the prompt pipeline (docs/agent.md §3). When it starts a run, it returns
// once the session is idle again: the run, every automatic retry and compaction,
// and the processing of their events are done. Queued and handled input returns
// at once. If ctx ends first, the run is aborted and Prompt returns ctx's error.
func (s *Session) Prompt(ctx context.Context, text string, opts PromptOptions) error {
	out, err := s.Start(ctx, text, opts)
	if err != nil || out != Started {
		return err
	}
	if err := s.Wait(ctx); err != nil {
		s.Abort()
		_ = s.Wait(context.Background())
		return err
	}
	return nil
}

// Start runs the prompt pipeline like Prompt but does not wait for the run: it
// returns as soon as the input has been handled, queued, or has started a run.
// Inputs given to Start one after another are processed in that order.
func (s *Session) Start(ctx context.Context, text string, opts PromptOptions) (Outcome, error) {
	if s.isClosed() {
		return 0, ErrClosed
	}
	if opts.Join && !s.IsRunning() {
		// Refused before the input hooks: the caller gives the same input
		// again once the session is idle, and the hooks see it then, once.
		return 0, ErrIdle
	}
	images := opts.Images
	if !opts.SkipExpansion {
		// 1. Input hooks see the raw input.
		var handled bool
		text, images, handled = s.runInputHooks(ctx, text, images)
		if handled {
			return Handled, nil
		}
		// 2. Skills and templates.
		text = s.cfg.Resources.Expand(text)
	}
	msg := userMessage(text, images, opts.InputID, s.now())

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	// 3. A run is active (or a compaction holds the session): queue.
	if s.running {
		defer s.mu.Unlock()
		switch opts.Behavior {
		case BehaviorSteer:
			s.agent.Steer(msg)
		case BehaviorFollowUp:
			s.agent.FollowUp(msg)
		default:
			return 0, ErrBusy
		}
		return Queued, nil
	}
	if opts.Join {
		s.mu.Unlock()
		return 0, &IdleError{Text: text, Images: images}
	}
	// 4. Validate before claiming the session.
	if err := s.validate(); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	runCtx := s.claimLocked()
	s.mu.Unlock()

	go s.drive(runCtx, func(ctx context.Context) []llm.Message {
		return s.preparePrompt(ctx, msg, images)
	})
	return Started, nil
}

// Continue starts a run that answers the input the context ends with, with
// no new prompt: after a run that ended on a failed model call, the model is
// asked again from the stored conversation. The failed reply at the end of the
// context is left out of it (it stays in the record), as a retry leaves it
// out. It returns Started, ErrBusy while a run is active, and
// ErrNothingToAnswer when the context ends with a reply (the input was
// answered) or is empty: a second Continue after the first answered is a no-op.
func (s *Session) Continue(ctx context.Context) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return 0, ErrClosed
	case s.running:
		return 0, ErrBusy
	}
	msgs := s.agent.Messages()
	end := len(msgs)
	if end > 0 && msgs[end-1].Role == llm.RoleAssistant && msgs[end-1].StopReason == llm.StopReasonError {
		end--
	}
	if end == 0 || msgs[end-1].Role == llm.RoleAssistant {
		return 0, ErrNothingToAnswer
	}
	if err := s.validate(); err != nil {
		return 0, err
	}
	if end < len(msgs) {
		s.agent.DropLastAssistant()
	}
	runCtx := s.claimLocked()
	go s.drive(runCtx, nil)
	return Started, nil
}

func userMessage(text string, images []llm.Content, inputID string, now time.Time) llm.Message {
	content := make([]llm.Content, 0, 1+len(images))
	content = append(content, llm.Text(text))
	content = append(content, images...)
	return llm.Message{Role: llm.RoleUser, Content: content, InputID: inputID, Timestamp: now.UnixMilli()}
}

func (s *Session) runInputHooks(ctx context.Context, text string, images []llm.Content) (string, []llm.Content, bool) {
	for _, x := range s.cfg.Extensions {
		if x.Input == nil {
			continue
		}
		var res InputResult
		s.safely(x.Name+" input hook", func() { res = x.Input(ctx, Input{Text: text, Images: images}) })
		switch res.Action {
		case InputHandled:
			return text, images, true
		case InputTransform:
			text = res.Text
			if res.Images != nil {
				images = res.Images
			}
		}
	}
	return text, images, false
}

// validate checks that a prompt can be sent. Called with s.mu held.
func (s *Session) validate() error {
	if s.cfg.Model == nil || s.agent.ModelName() == "" {
		return errors.New("no model configured: set llm.model (and llm.base_url) in the config")
	}
	if r, ok := s.cfg.Model.(interface{ Ready() error }); ok {
		return r.Ready()
	}
	return nil
}

// claimLocked marks the session running and returns the run's context.
func (s *Session) claimLocked() context.Context {
	s.running = true
	s.aborted, s.gaveUp = false, false
	s.idle = make(chan struct{})
	ctx, cancel := context.WithCancel(s.baseCtx)
	s.cancelRun = cancel
	s.wg.Add(1)
	return ctx
}

// preparePrompt runs pipeline stages 5–7 on the run goroutine and returns the
// messages that open the run.
func (s *Session) preparePrompt(ctx context.Context, msg llm.Message, images []llm.Content) []llm.Message {
	// 5. The previous reply may have ended near the limit.
	s.compactBeforePrompt(ctx)
	// 6. The prompt and any messages waiting for the next turn.
	prompts := []llm.Message{msg}
	s.mu.Lock()
	prompts = append(prompts, s.pendingNextTurn...)
	s.pendingNextTurn = nil
	s.mu.Unlock()
	// 7. Hooks may add context and replace the system prompt for this prompt only.
	system := s.baseSystemPrompt()
	var preface []llm.Message
	custom := func(m llm.Message) llm.Message {
		if m.Role == "" {
			m.Role = llm.RoleCustom
		}
		if m.Timestamp == 0 {
			m.Timestamp = s.now().UnixMilli()
		}
		return m
	}
	for _, x := range s.cfg.Extensions {
		if x.BeforeAgentStart == nil {
			continue
		}
		var res BeforeAgentStartResult
		s.safely(x.Name+" before_agent_start hook", func() {
			res = x.BeforeAgentStart(ctx, BeforeAgentStart{Prompt: msg.TextContent(), Images: images, SystemPrompt: system})
		})
		for _, m := range res.Preface {
			preface = append(preface, custom(m))
		}
		for _, m := range res.Messages {
			prompts = append(prompts, custom(m))
		}
		if res.SystemPrompt != "" {
			system = res.SystemPrompt
		}
	}
	s.agent.SetSystemPrompt(system)
	return append(preface, prompts...)
}

func (s *Session) baseSystemPrompt() string {
	return s.cfg.SystemPrompt + s.cfg.Resources.SkillsPrompt()
}

// drive is the run goroutine: it runs the agent, then retries, compacts and
// delivers queued input until the session can go idle.
func (s *Session) drive(ctx context.Context, prepare func(context.Context) []llm.Message) {
	defer s.wg.Done()
	s.retryAttempt = 0
	s.overflowTried = false
	var prompts []llm.Message
	if prepare != nil {
		prompts = prepare(ctx)
	}
	resume := prompts == nil
	for {
		s.lastAssistant = nil
		if resume {
			if _, err := s.agent.Continue(ctx); err != nil {
				s.log.Warn("nothing to continue", "err", err)
			}
		} else {
			s.agent.Run(ctx, prompts)
			resume = true
		}
		// Everything the run emitted, persistence included, is processed before
		// deciding what comes next; nothing else emits meanwhile.
		_ = s.events.Wait(context.Background())
		compactions := s.compactions
		if s.afterRun(ctx) {
			continue
		}
		if s.settle() {
			s.snapshotLater()
			return
		}
		if s.compactions != compactions {
			// Input that arrived while the context was compacted opens the
			// next run as a prompt would (see queuedPrompt).
			if prompts = s.queuedPrompt(ctx); prompts != nil {
				resume = false
			}
		}
	}
}

// queuedPrompt takes the first queued message (steer before followUp) off
// its queue and returns the messages that open a run with it as the prompt:
// stages 5–7 of the pipeline run for it, so hooks see it and what they tell
// is told. Input delivered after a compaction goes this way: the context
// was rebuilt, and what a hook told before (who asks, the date) may have been
// summarised away — delivered as a plain continuation, the hooks would not
// run and the model would not be told again. Nil when nothing is queued.
func (s *Session) queuedPrompt(ctx context.Context) []llm.Message {
	m, ok := s.agent.takeFirstQueued()
	if !ok {
		return nil
	}
	var images []llm.Content
	for _, c := range m.Content {
		if c.Type == llm.ContentImage {
			images = append(images, c)
		}
	}
	return s.preparePrompt(ctx, m, images)
}

// afterRun handles the end of a run and reports whether to continue it: a retry
// after a transient error, or the retry of an overflowed request after compaction.
func (s *Session) afterRun(ctx context.Context) bool {
	if ctx.Err() != nil {
		if s.retryAttempt > 0 {
			s.emit(AutoRetryEnd{Success: false, Attempt: s.retryAttempt, FinalError: "cancelled"})
			s.retryAttempt = 0
		}
		return false
	}
	s.mu.Lock()
	halted := s.aborted // a before-call hook stopped it (Halted)
	s.mu.Unlock()
	last := s.lastAssistant
	if last == nil || halted {
		return false
	}
	if s.cfg.Compaction.Enabled && isOverflow(*last, s.contextWindow()) {
		return s.recoverOverflow(ctx)
	}
	if s.cfg.Retry.Enabled && isRetryable(*last) {
		s.retryAttempt++
		if s.retryAttempt > s.cfg.Retry.MaxRetries {
			s.emit(AutoRetryEnd{Success: false, Attempt: s.retryAttempt - 1, FinalError: last.ErrorMessage})
			s.retryAttempt = 0
			s.mu.Lock()
			s.gaveUp = true
			s.mu.Unlock()
		} else {
			d := s.cfg.Retry.delay(s.retryAttempt, last.ErrorInfo)
			s.emit(AutoRetryStart{Attempt: s.retryAttempt, MaxAttempts: s.cfg.Retry.MaxRetries, Delay: d, ErrorMessage: last.ErrorMessage})
			s.agent.DropLastAssistant() // it stays in the record, not in the context
			if err := s.cfg.Sleep(ctx, d); err != nil || ctx.Err() != nil {
				s.emit(AutoRetryEnd{Success: false, Attempt: s.retryAttempt, FinalError: "cancelled"})
				s.retryAttempt = 0
				return false
			}
			return true
		}
	}
	if last.StopReason != llm.StopReasonAborted {
		s.compactAfterRun(ctx, *last)
	}
	return false
}

// settle makes the session idle unless input arrived after the run's last look at
// its queues (then it reports false and the run continues to deliver it). An
// aborted run, and one that spent its retries (the model cannot be reached:
// the input would only fail the same way), leave queued input for the next run.
func (s *Session) settle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.aborted && !s.gaveUp && !s.closed && s.agent.HasQueued() {
		return false
	}
	s.running = false
	s.cancelRun()
	s.cancelRun = nil
	close(s.idle)
	return true
}

// handle receives every agent event synchronously, on the goroutine that emitted
// it, and queues it. State the run goroutine relies on before the next line of
// the emitter is updated here, not on the queue.
func (s *Session) handle(ev Event) {
	switch e := ev.(type) {
	case MessageStart:
		if e.Message.Role == llm.RoleUser {
			s.overflowTried = false
		}
	case Halted:
		// The run ends as an aborted one: queued input waits for the next.
		s.mu.Lock()
		s.aborted = true
		s.mu.Unlock()
	case MessageEnd:
		if e.Message.Role != llm.RoleAssistant {
			break
		}
		m := e.Message
		s.lastAssistant = &m
		if m.Usage != nil && m.StopReason != llm.StopReasonError && m.StopReason != llm.StopReasonAborted {
			s.mu.Lock()
			s.lastUsage = m.Usage
			s.mu.Unlock()
		}
		if m.StopReason == llm.StopReasonError || m.StopReason == llm.StopReasonAborted {
			break
		}
		if !isOverflow(m, s.contextWindow()) {
			s.overflowTried = false
		}
		if s.retryAttempt > 0 {
			attempt := s.retryAttempt
			s.retryAttempt = 0
			s.events.Add(queuedEvent{ev, s.processFn})
			s.emit(AutoRetryEnd{Success: true, Attempt: attempt})
			return
		}
	}
	s.events.Add(queuedEvent{ev, s.processFn})
}

// emit queues a session event (retry, compaction) behind the agent's events.
func (s *Session) emit(ev Event) { s.events.Add(queuedEvent{ev, s.processFn}) }

// process runs on the event queue: extensions, then listeners, then persistence.
func (s *Session) process(ev Event) {
	for _, x := range s.cfg.Extensions {
		if x.OnEvent != nil {
			s.safely(x.Name+" event handler", func() { x.OnEvent(ev) })
		}
	}
	s.lmu.Lock()
	ls := s.listeners
	s.lmu.Unlock()
	for _, l := range ls {
		s.safely("listener", func() { l.fn(ev) })
	}
	if me, ok := ev.(MessageEnd); ok {
		switch me.Message.Role {
		case llm.RoleUser, llm.RoleAssistant, llm.RoleToolResult, llm.RoleCustom:
			s.persist(transcript.Entry{Type: transcript.EntryMessage, Timestamp: me.Message.Timestamp, Message: &me.Message})
		}
	}
}

// persist assigns sequence numbers and appends entries to the record and the
// store. It runs on the event queue, which orders all writes.
func (s *Session) persist(entries ...transcript.Entry) {
	s.mu.Lock()
	for i := range entries {
		entries[i].Seq = s.nextSeq
		s.nextSeq++
		if entries[i].Timestamp == 0 {
			entries[i].Timestamp = s.now().UnixMilli()
		}
	}
	s.entries = append(s.entries, entries...)
	s.mu.Unlock()
	if s.cfg.Store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.cfg.Store.AppendEntries(ctx, s.id, entries)
	if err != nil {
		// Once more as it was: the store may have committed it and lost
		// the answer (a dropped connection), and an append of what it holds
		// already succeeds without storing it twice (Store's contract).
		err = s.cfg.Store.AppendEntries(ctx, s.id, entries)
	}
	if err != nil && s.renumber(ctx, entries) {
		err = s.cfg.Store.AppendEntries(ctx, s.id, entries)
	}
	// A store that cannot be reached now may be in a moment: the append is
	// repeated (the store takes an identical append it holds as done),
	// pausing from persistPause doubling, for up to persistPatience.
	for pause, waited := persistPause, time.Duration(0); err != nil && s.cfg.StoreUnavailable != nil &&
		s.cfg.StoreUnavailable(err) && waited < persistPatience; pause = min(2*pause, persistMaxPause) {
		s.log.Warn("storing session entries: the store is unavailable; trying again", "err", err, "in", pause)
		if s.cfg.Sleep(ctx, pause) != nil {
			break
		}
		waited += pause
		err = s.cfg.Store.AppendEntries(ctx, s.id, entries)
	}
	if err != nil {
		// Never only a log line: the people in the thread must know that
		// part of their conversation will be missing after a restart.
		s.log.Error("persisting session entries failed", "err", err, "first_seq", entries[0].Seq, "count", len(entries))
		s.emit(PersistFailed{Entries: len(entries), ErrorMessage: err.Error()})
	}
}

// snapshotPatience bounds a snapshot's wait for the store: the events
// behind it wait as long.
const snapshotPatience = 5 * time.Second

// How long persist keeps repeating an append the store was unavailable for:
// longer than a database's restart, shorter than its 30 s context.
const (
	persistPause    = 250 * time.Millisecond
	persistMaxPause = 4 * time.Second
	persistPatience = 20 * time.Second
)

// renumber handles an append refused because the store already holds those
// sequence numbers (another writer appended to the session meanwhile): the
// entries, the tail of the record, move to the store's next free numbers so
// that they are kept instead of lost. It reports whether it moved them.
// Entries only ever refer to earlier ones (a compaction to its first kept
// entry), so moving the newest ones breaks no reference.
func (s *Session) renumber(ctx context.Context, entries []transcript.Entry) bool {
	src, ok := s.cfg.Store.(SeqSource)
	if !ok {
		return false
	}
	next, err := src.NextSeq(ctx, s.id)
	if err != nil || next <= entries[0].Seq {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tail := s.entries[len(s.entries)-len(entries):]
	for i := range entries {
		entries[i].Seq = next + int64(i)
		tail[i].Seq = entries[i].Seq
	}
	s.nextSeq = next + int64(len(entries))
	s.log.Warn("session entries renumbered after a sequence conflict", "first_seq", next, "count", len(entries))
	return true
}

// snapshotLater asks a Snapshotter store, behind the run's appends on the
// event queue, to keep the session's live entries in one value: the next
// resume reads that instead of every entry. A failure costs only that
// resume's speed, so it is logged and nothing more, and it holds the queue
// for at most snapshotPatience (a store that cannot be reached).
func (s *Session) snapshotLater() {
	sn, ok := s.cfg.Store.(Snapshotter)
	if !ok {
		return
	}
	s.events.Add(queuedEvent{nil, func(Event) {
		ctx, cancel := context.WithTimeout(context.Background(), snapshotPatience)
		defer cancel()
		if err := sn.SnapshotSession(ctx, s.id); err != nil {
			s.log.Warn("taking the session's snapshot", "err", err)
		}
	}})
}

// persistLater queues entries for persistence behind the events already queued.
func (s *Session) persistLater(entries ...transcript.Entry) {
	s.events.Add(queuedEvent{nil, func(Event) { s.persist(entries...) }})
}

func (s *Session) safely(what string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error(what+" panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn()
}

// Steer queues a message for the active run (or the next one) at the next turn
// boundary.
func (s *Session) Steer(m llm.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agent.Steer(m)
}

// FollowUp queues a message for when the active run (or the next one) would end.
func (s *Session) FollowUp(m llm.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agent.FollowUp(m)
}

// SetTools replaces the session's tools from the model's next call on.
func (s *Session) SetTools(tools []Tool) { s.agent.SetTools(tools) }

// Tools returns the tools the model is offered.
func (s *Session) Tools() []Tool { return s.agent.Tools() }

// Queued returns copies of the steer and followUp queues.
func (s *Session) Queued() (steer, followUp []llm.Message) { return s.agent.Queued() }

// ClearQueue empties both queues and returns what they held.
func (s *Session) ClearQueue() (steer, followUp []llm.Message) { return s.agent.ClearQueues() }

// QueueNextTurn adds a message to be sent with the next prompt (after it).
func (s *Session) QueueNextTurn(m llm.Message) {
	if m.Role == "" {
		m.Role = llm.RoleCustom
	}
	s.mu.Lock()
	s.pendingNextTurn = append(s.pendingNextTurn, m)
	s.mu.Unlock()
}

// Abort cancels the active run, any retry wait and any compaction. Queued input
// stays queued. It does not wait: use Wait.
func (s *Session) Abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running && s.cancelRun != nil {
		s.aborted = true
		s.cancelRun()
	}
}

// Wait blocks until the session is idle and its events are processed, or ctx ends.
func (s *Session) Wait(ctx context.Context) error {
	s.mu.Lock()
	ch := s.idle
	running := s.running
	s.mu.Unlock()
	if running {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.events.Wait(ctx)
}

// IsRunning reports whether a run (or compaction) is active.
func (s *Session) IsRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// ModelName returns the model used for the next call.
func (s *Session) ModelName() string { return s.agent.ModelName() }

// UnknownModelError is returned by SetModel for a name that is not configured.
type UnknownModelError struct {
	Name  string
	Known []string
}

func (e *UnknownModelError) Error() string {
	return fmt.Sprintf("unknown model %q; known models: %s", e.Name, strings.Join(e.Known, ", "))
}

// SetModel switches the model (and its limits) for the rest of the session and
// records the change.
func (s *Session) SetModel(name string) error {
	name = strings.TrimSpace(name)
	spec, ok := s.spec(name)
	if name == "" || !ok {
		known := make([]string, len(s.cfg.Models))
		for i, m := range s.cfg.Models {
			known[i] = m.Name
		}
		return &UnknownModelError{Name: name, Known: known}
	}
	s.mu.Lock()
	s.window = spec.ContextWindow
	s.mu.Unlock()
	s.agent.SetModel(name, spec.MaxTokens)
	s.persistLater(transcript.Entry{Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Provider: spec.Provider, Model: name}})
	return nil
}

// spec returns the limits of a model name.
func (s *Session) spec(name string) (ModelSpec, bool) {
	if len(s.cfg.Models) == 0 {
		return ModelSpec{Name: name, ContextWindow: s.cfg.ContextWindow, MaxTokens: s.cfg.MaxTokens}, name != ""
	}
	for _, m := range s.cfg.Models {
		if m.Name == name {
			return m, true
		}
	}
	return ModelSpec{}, false
}

func (s *Session) contextWindow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.window
}

// Messages returns a copy of the live context.
func (s *Session) Messages() []llm.Message { return s.agent.Messages() }

// LastMessage returns the context's newest message without copying the
// context; ok is false when it is empty.
func (s *Session) LastMessage() (llm.Message, bool) { return s.agent.LastMessage() }

// Entries returns a copy of the session's record as persisted so far.
func (s *Session) Entries() []transcript.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.entries)
}

// Status is a snapshot for !status.
type Status struct {
	Model         string
	Running       bool
	Compacting    bool
	ContextTokens int
	ContextWindow int
	Steer         []llm.Message
	FollowUp      []llm.Message
}

// Status returns a snapshot of the session.
func (s *Session) Status() Status {
	st := Status{Model: s.agent.ModelName(), ContextWindow: s.contextWindow()}
	st.Steer, st.FollowUp = s.agent.Queued()
	st.ContextTokens = s.ContextTokens()
	s.mu.Lock()
	st.Running, st.Compacting = s.running, s.compacting
	s.mu.Unlock()
	return st
}

// Close aborts any run, waits for it and for the event queue to drain, and stops
// the session. It returns ctx's error if that takes too long.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	if s.cancelRun != nil {
		s.aborted = true
		s.cancelRun()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := s.events.Wait(ctx)
	s.events.Close()
	s.baseCancel()
	return err
}
