package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// QueueMode says how many queued messages one poll of a queue delivers.
type QueueMode int

const (
	// OneAtATime delivers one queued message per poll (the default).
	OneAtATime QueueMode = iota
	// AllAtOnce delivers everything queued at each poll.
	AllAtOnce
)

// Tool-result texts the model sees for calls that did not run.
const (
	skippedToolText = "skipped: a newer user message arrived"
	abortedToolText = "aborted: the run was stopped"
)

// maxParallelTools bounds how many read-only tool calls run at once.
const maxParallelTools = 4

// AgentConfig configures an Agent.
type AgentConfig struct {
	Model        llm.Model
	ModelName    string
	SystemPrompt string
	Tools        []Tool
	MaxTokens    int
	SteerMode    QueueMode
	FollowUpMode QueueMode
	// Messages is the initial context.
	Messages []llm.Message
	// Emit receives every event, synchronously, from the goroutine that produced
	// it (the run's goroutine, or a tool's for tool_execution_update). It must be
	// safe for concurrent use and must not block for long.
	Emit func(Event)
	// BeforeTools, when set, is called after an assistant message that calls tools
	// has ended and before any of its tools runs. The session uses it to make the
	// message durable first, so a crash mid-tool leaves a record of the call.
	BeforeTools func()
	// BeforeCall, when set, is asked before each model call of a run but
	// its first (between model calls). An error stops the run there: no
	// call is made, the input taken for it goes back to its queue, and the
	// run ends with Halted (the error's text) and agent_end.
	BeforeCall func(ctx context.Context) error
	// Now is the clock for message timestamps (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Agent is the agent loop (docs/agent.md §2): it calls the model, runs tools, owns the
// message list and the steer and followUp queues, and emits events. It knows
// nothing of chats or storage.
//
// Run and Continue must not be called concurrently with each other; the queue
// methods and the accessors are safe from any goroutine.
type Agent struct {
	model        llm.Model
	steerMode    QueueMode
	followUpMode QueueMode
	emit         func(Event)
	beforeTools  func()
	beforeCall   func(ctx context.Context) error
	now          func() time.Time
	log          *slog.Logger

	mu           sync.Mutex
	tools        []Tool          // under mu: SetTools may swap them between turns
	toolIndex    map[string]Tool // by name, the same set as tools
	modelName    string
	maxTokens    int
	systemPrompt string
	messages     []llm.Message
	steer        []llm.Message
	followUp     []llm.Message
	onQueue      func(steer, followUp []llm.Message)
}

// NewAgent returns an idle agent.
func NewAgent(cfg AgentConfig) *Agent {
	a := &Agent{
		model:        cfg.Model,
		maxTokens:    cfg.MaxTokens,
		steerMode:    cfg.SteerMode,
		followUpMode: cfg.FollowUpMode,
		emit:         cfg.Emit,
		beforeTools:  cfg.BeforeTools,
		beforeCall:   cfg.BeforeCall,
		now:          cfg.Now,
		log:          cfg.Logger,
		modelName:    cfg.ModelName,
		systemPrompt: cfg.SystemPrompt,
		messages:     append([]llm.Message(nil), cfg.Messages...),
	}
	a.tools, a.toolIndex = indexTools(cfg.Tools)
	if a.emit == nil {
		a.emit = func(Event) {}
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	return a
}

func indexTools(tools []Tool) ([]Tool, map[string]Tool) {
	index := make(map[string]Tool, len(tools))
	for _, t := range tools {
		index[t.Spec().Name] = t
	}
	return slices.Clone(tools), index
}

// SetTools replaces the tools the model is offered from its next call on (an
// MCP server said its list changed). A call of a tool that has just gone gets
// the usual "not found" result.
func (a *Agent) SetTools(tools []Tool) {
	list, index := indexTools(tools)
	a.mu.Lock()
	a.tools, a.toolIndex = list, index
	a.mu.Unlock()
}

// Tools returns the tools the model is offered.
func (a *Agent) Tools() []Tool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tools)
}

// Messages returns a copy of the current context.
func (a *Agent) Messages() []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]llm.Message(nil), a.messages...)
}

// LastMessage returns the context's newest message, without copying the
// context; ok is false when it is empty.
func (a *Agent) LastMessage() (m llm.Message, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.messages) == 0 {
		return llm.Message{}, false
	}
	return a.messages[len(a.messages)-1], true
}

// ReplaceMessages replaces the context. Call it only while no run is active.
func (a *Agent) ReplaceMessages(msgs []llm.Message) {
	a.mu.Lock()
	a.messages = append([]llm.Message(nil), msgs...)
	a.mu.Unlock()
}

// DropLastAssistant removes the last message if it is an assistant reply (a failed
// reply that is about to be retried) and reports whether it did.
func (a *Agent) DropLastAssistant() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.messages); n > 0 && a.messages[n-1].Role == llm.RoleAssistant {
		a.messages = a.messages[:n-1]
		return true
	}
	return false
}

// SetModel switches the model and its output limit for later calls.
func (a *Agent) SetModel(name string, maxTokens int) {
	a.mu.Lock()
	a.modelName = name
	a.maxTokens = maxTokens
	a.mu.Unlock()
}

// ModelName returns the model used for the next call.
func (a *Agent) ModelName() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.modelName
}

// SetSystemPrompt sets the system prompt for later calls.
func (a *Agent) SetSystemPrompt(p string) {
	a.mu.Lock()
	a.systemPrompt = p
	a.mu.Unlock()
}

// SystemPrompt returns the system prompt of the next call.
func (a *Agent) SystemPrompt() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.systemPrompt
}

// Steer queues a message for the next turn boundary: it is delivered after the
// running tool finishes, and the assistant's remaining tool calls are skipped.
func (a *Agent) Steer(m llm.Message) { a.enqueue(&a.steer, m) }

// FollowUp queues a message for when the agent would otherwise stop.
func (a *Agent) FollowUp(m llm.Message) { a.enqueue(&a.followUp, m) }

func (a *Agent) enqueue(q *[]llm.Message, m llm.Message) {
	a.mu.Lock()
	*q = append(*q, m)
	a.notifyQueueLocked()
	a.mu.Unlock()
}

// takeFirstQueued takes the first queued message off its queue: steer's
// before followUp's.
func (a *Agent) takeFirstQueued() (llm.Message, bool) {
	for _, q := range []*[]llm.Message{&a.steer, &a.followUp} {
		if m := a.dequeue(q, OneAtATime); len(m) > 0 {
			return m[0], true
		}
	}
	return llm.Message{}, false
}

// Queued returns copies of both queues.
func (a *Agent) Queued() (steer, followUp []llm.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]llm.Message(nil), a.steer...), append([]llm.Message(nil), a.followUp...)
}

// HasQueued reports whether either queue holds a message.
func (a *Agent) HasQueued() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.steer)+len(a.followUp) > 0
}

// ClearQueues empties both queues and returns what they held.
func (a *Agent) ClearQueues() (steer, followUp []llm.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	steer, followUp = a.steer, a.followUp
	a.steer, a.followUp = nil, nil
	if len(steer)+len(followUp) > 0 {
		a.notifyQueueLocked()
	}
	return steer, followUp
}

// setQueueObserver registers a function called (with the lock held, so in queue
// order) whenever a queue changes.
func (a *Agent) setQueueObserver(fn func(steer, followUp []llm.Message)) {
	a.mu.Lock()
	a.onQueue = fn
	a.mu.Unlock()
}

func (a *Agent) notifyQueueLocked() {
	if a.onQueue != nil {
		a.onQueue(append([]llm.Message(nil), a.steer...), append([]llm.Message(nil), a.followUp...))
	}
}

func (a *Agent) dequeue(q *[]llm.Message, mode QueueMode) []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(*q) == 0 {
		return nil
	}
	var out []llm.Message
	if mode == AllAtOnce {
		out, *q = *q, nil
	} else {
		out = []llm.Message{(*q)[0]}
		*q = append([]llm.Message(nil), (*q)[1:]...)
	}
	a.notifyQueueLocked()
	return out
}

// requeueSteer puts steer messages taken off the queue back at its front.
func (a *Agent) requeueSteer(msgs []llm.Message) { a.requeue(&a.steer, msgs) }

// requeue puts messages taken off q back at its front.
func (a *Agent) requeue(q *[]llm.Message, msgs []llm.Message) {
	if len(msgs) == 0 {
		return
	}
	a.mu.Lock()
	*q = append(slices.Clone(msgs), *q...)
	a.notifyQueueLocked()
	a.mu.Unlock()
}

func (a *Agent) dequeueSteer() []llm.Message    { return a.dequeue(&a.steer, a.steerMode) }
func (a *Agent) dequeueFollowUp() []llm.Message { return a.dequeue(&a.followUp, a.followUpMode) }

func (a *Agent) appendMessage(m llm.Message) {
	a.mu.Lock()
	a.messages = append(a.messages, m)
	a.mu.Unlock()
}

// Run starts a run with the given prompt messages and returns the messages the run
// added, when it has ended (agent_end emitted). Input queued while the agent was
// idle follows the prompt right away: steer first, then followUp. Cancelling ctx
// aborts the run: the partial reply is kept with StopReason aborted and both
// queues are untouched.
func (a *Agent) Run(ctx context.Context, prompts []llm.Message) []llm.Message {
	a.emit(AgentStart{})
	a.emit(TurnStart{})
	added := a.deliverAll(prompts)
	pending := append(a.dequeueSteer(), a.dequeueFollowUp()...)
	return a.loop(ctx, added, pending)
}

func (a *Agent) deliverAll(msgs []llm.Message) []llm.Message {
	added := make([]llm.Message, 0, len(msgs)+4)
	for _, p := range msgs {
		a.deliver(p)
		added = append(added, p)
	}
	return added
}

// ErrCannotContinue is returned by Continue when the context ends with an assistant
// reply and nothing is queued.
var ErrCannotContinue = errors.New("nothing to continue: the last message is the assistant's and no input is queued")

// Continue resumes from the current context without a new prompt: after a retry
// (the failed reply was dropped), or to deliver queued input.
func (a *Agent) Continue(ctx context.Context) ([]llm.Message, error) {
	msgs := a.Messages()
	if len(msgs) == 0 {
		return nil, errors.New("nothing to continue: the context is empty")
	}
	if msgs[len(msgs)-1].Role == llm.RoleAssistant {
		// Queued input opens the run, one message per poll as the mode says.
		if s := a.dequeueSteer(); len(s) > 0 {
			a.emit(AgentStart{})
			a.emit(TurnStart{})
			return a.loop(ctx, a.deliverAll(s), nil), nil
		}
		if f := a.dequeueFollowUp(); len(f) > 0 {
			a.emit(AgentStart{})
			a.emit(TurnStart{})
			return a.loop(ctx, a.deliverAll(f), a.dequeueSteer()), nil
		}
		return nil, ErrCannotContinue
	}
	a.emit(AgentStart{})
	a.emit(TurnStart{})
	return a.loop(ctx, nil, a.dequeueSteer()), nil
}

// deliver adds a user-side message to the context with its start and end events.
func (a *Agent) deliver(m llm.Message) {
	if m.Timestamp == 0 {
		m.Timestamp = a.now().UnixMilli()
	}
	a.emit(MessageStart{Message: m})
	a.appendMessage(m)
	a.emit(MessageEnd{Message: m})
}

// loop runs turns until the model stops and nothing is queued. pending is input
// to deliver before the first model call.
func (a *Agent) loop(ctx context.Context, added, pending []llm.Message) []llm.Message {
	firstTurn := true
	pendingQueue := &a.steer // the queue pending was taken from, after the first turn
	for {
		moreToolCalls := true
		for moreToolCalls || len(pending) > 0 {
			if !firstTurn {
				if err := a.mayCall(ctx); err != nil {
					a.requeue(pendingQueue, pending)
					a.emit(Halted{Reason: err.Error()})
					a.emit(AgentEnd{Messages: added})
					return added
				}
				a.emit(TurnStart{})
			}
			firstTurn = false
			for _, m := range pending {
				a.deliver(m)
				added = append(added, m)
			}
			pending = nil

			reply := a.streamReply(ctx)
			added = append(added, reply)
			if reply.StopReason == llm.StopReasonError || reply.StopReason == llm.StopReasonAborted {
				a.emit(TurnEnd{Message: reply})
				a.emit(AgentEnd{Messages: added})
				return added
			}

			calls := reply.ToolCalls()
			moreToolCalls = len(calls) > 0
			var results, steered []llm.Message
			if moreToolCalls {
				if a.beforeTools != nil {
					a.beforeTools()
				}
				results, steered = a.executeTools(ctx, calls)
				added = append(added, results...)
			}
			a.emit(TurnEnd{Message: reply, ToolResults: results})
			if ctx.Err() != nil {
				// An aborted run keeps both queues (docs/agent.md §2): a steer
				// taken off the queue while the last tool ran goes back to
				// its front, for the next run.
				a.requeueSteer(steered)
				a.emit(AgentEnd{Messages: added})
				return added
			}
			pendingQueue = &a.steer
			if len(steered) > 0 {
				pending = steered
			} else {
				pending = a.dequeueSteer()
			}
		}
		if f := a.dequeueFollowUp(); len(f) > 0 {
			pending, pendingQueue = f, &a.followUp
			continue
		}
		break
	}
	a.emit(AgentEnd{Messages: added})
	return added
}

// mayCall asks BeforeCall whether the next model call may be made; a hook
// that panics lets it be made.
func (a *Agent) mayCall(ctx context.Context) (err error) {
	if a.beforeCall == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("before-call hook panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = nil
		}
	}()
	return a.beforeCall(ctx)
}

// streamReply makes one model call and returns the final assistant message, which
// it has added to the context. Failures become an assistant message with
// StopReason error (or aborted), announced with message_start and message_end.
func (a *Agent) streamReply(ctx context.Context) (reply llm.Message) {
	a.mu.Lock()
	req := llm.Request{
		Model:        a.modelName,
		SystemPrompt: a.systemPrompt,
		Messages:     ProviderMessages(a.messages),
		MaxTokens:    a.maxTokens,
	}
	for _, t := range a.tools {
		req.Tools = append(req.Tools, t.Spec())
	}
	a.mu.Unlock()

	start := llm.Message{Role: llm.RoleAssistant, Model: req.Model, Timestamp: a.now().UnixMilli()}
	a.emit(MessageStart{Message: start})

	final, err := a.callModel(ctx, req)
	final.Role = llm.RoleAssistant
	if final.Model == "" {
		final.Model = req.Model
	}
	if final.Timestamp == 0 {
		final.Timestamp = start.Timestamp
	}
	if err != nil {
		if ctx.Err() != nil {
			final.StopReason = llm.StopReasonAborted
			final.ErrorMessage = "aborted"
		} else {
			final.StopReason = llm.StopReasonError
			final.ErrorMessage = err.Error()
			var pe *llm.Error
			if errors.As(err, &pe) {
				final.ErrorInfo = pe
			}
		}
	}
	sanitizeToolArgs(&final)
	a.appendMessage(final)
	a.emit(MessageEnd{Message: final})
	return final
}

func (a *Agent) callModel(ctx context.Context, req llm.Request) (msg llm.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("model client panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("model client failed: %v", r)
		}
	}()
	if a.model == nil {
		return llm.Message{}, errors.New("no model configured")
	}
	return a.model.Stream(ctx, req, func(d llm.Delta, partial *llm.Message) {
		snap := partial.Clone()
		snap.Role = llm.RoleAssistant
		a.emit(MessageUpdate{Message: snap, Delta: d})
	})
}

// toolRun is the state of one tool call of an assistant message.
type toolRun struct {
	call     llm.Content
	tool     Tool
	args     []byte
	refused  bool // cannot run: result holds the reason
	result   ToolResult
	duration time.Duration
	done     bool // result is final
}

// executeTools runs an assistant message's tool calls and returns their results
// in call order, plus steer messages that arrived while they ran. Consecutive
// read-only calls run in parallel; after each call finishes the steer queue is
// polled, and once it yields, calls not yet started are skipped.
func (a *Agent) executeTools(ctx context.Context, calls []llm.Content) (results []llm.Message, steered []llm.Message) {
	runs := make([]*toolRun, len(calls))
	for i, c := range calls {
		runs[i] = a.prepare(c)
	}
	emitted := 0 // results emitted so far, always a prefix of runs
	emitDone := func() {
		for emitted < len(runs) && runs[emitted].done {
			r := runs[emitted]
			results = append(results, a.finish(r))
			emitted++
		}
	}
	for i := 0; i < len(runs); {
		if len(steered) > 0 || ctx.Err() != nil {
			break
		}
		j := i + 1
		if runs[i].readOnly() {
			for j < len(runs) && runs[j].readOnly() {
				j++
			}
		}
		steered = a.runBatch(ctx, runs[i:j])
		emitDone()
		i = j
	}
	// Whatever did not start is skipped (steer) or refused (abort).
	text := skippedToolText
	if len(steered) == 0 && ctx.Err() != nil {
		text = abortedToolText
	}
	for _, r := range runs {
		if !r.done {
			a.emit(ToolExecutionStart{ToolCallID: r.call.ID, ToolName: r.call.Name, Args: r.call.Arguments})
			r.result = ErrorResult(text)
			r.done = true
			emitDone()
		}
	}
	return results, steered
}

// prepare resolves the tool and validates the arguments. A call that cannot run is
// marked refused, with the error result the model will see.
func (a *Agent) prepare(c llm.Content) *toolRun {
	r := &toolRun{call: c, args: c.Arguments}
	refuse := func(msg string) *toolRun {
		r.refused, r.result = true, ErrorResult(msg)
		return r
	}
	a.mu.Lock()
	t, ok := a.toolIndex[c.Name]
	a.mu.Unlock()
	if !ok {
		return refuse(fmt.Sprintf("tool %s not found", c.Name))
	}
	r.tool = t
	if len(c.Arguments) > 0 && c.Arguments[0] == '"' {
		return refuse("invalid arguments: not a JSON object: " + string(c.Arguments))
	}
	if msg := validateArgs(t.Spec().Parameters, c.Arguments); msg != "" {
		return refuse(msg)
	}
	return r
}

func (r *toolRun) readOnly() bool {
	if r.refused {
		return false
	}
	ro, ok := r.tool.(ReadOnlyTool)
	return ok && ro.ReadOnly()
}

// runBatch runs the calls of a batch (one call, or consecutive read-only calls in
// parallel) and returns steer messages that arrived meanwhile. Calls refused at
// preparation count as finished at once.
func (a *Agent) runBatch(ctx context.Context, batch []*toolRun) (steered []llm.Message) {
	type finished struct{}
	doneCh := make(chan finished, len(batch))
	running := 0
	next := 0
	launch := func() {
		for next < len(batch) && running < maxParallelTools {
			r := batch[next]
			next++
			if r.refused { // announce it in order; its result is already known
				a.emit(ToolExecutionStart{ToolCallID: r.call.ID, ToolName: r.call.Name, Args: r.call.Arguments})
				r.done = true
				running++
				doneCh <- finished{}
				continue
			}
			a.emit(ToolExecutionStart{ToolCallID: r.call.ID, ToolName: r.call.Name, Args: r.call.Arguments})
			running++
			go func() {
				a.execute(ctx, r)
				doneCh <- finished{}
			}()
		}
	}
	launch()
	for running > 0 {
		<-doneCh
		running--
		if steered == nil && ctx.Err() == nil {
			if s := a.dequeueSteer(); len(s) > 0 {
				steered = s
				next = len(batch) // start nothing more
			}
		}
		if ctx.Err() != nil {
			next = len(batch)
		}
		launch()
	}
	return steered
}

// execute runs one tool call and records its result and duration in r.
func (a *Agent) execute(ctx context.Context, r *toolRun) {
	start := time.Now()
	var finished atomic.Bool
	update := func(p ToolResult) {
		if finished.Load() {
			return
		}
		a.emit(ToolExecutionUpdate{ToolCallID: r.call.ID, ToolName: r.call.Name, Partial: p})
	}
	defer func() {
		finished.Store(true)
		if p := recover(); p != nil {
			a.log.Error("tool panicked", "tool", r.call.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			r.result = ErrorResult(fmt.Sprintf("tool %s failed unexpectedly", r.call.Name))
		}
		r.duration = time.Since(start)
		r.done = true
	}()
	res, err := r.tool.Execute(ctx, ToolCall{ID: r.call.ID, Name: r.call.Name, Args: r.args}, update)
	switch {
	case err != nil && ctx.Err() != nil:
		res = ErrorResult(abortedToolText)
	case err != nil:
		a.log.Warn("tool failed", "tool", r.call.Name, "err", err)
		res = ErrorResult(err.Error())
	}
	r.result = res
}

// finish emits a call's tool_execution_end and its tool-result message, adds the
// result to the context, and returns it.
func (a *Agent) finish(r *toolRun) llm.Message {
	a.emit(ToolExecutionEnd{ToolCallID: r.call.ID, ToolName: r.call.Name, Args: r.call.Arguments, Result: r.result, Duration: r.duration})
	m := llm.Message{
		Role:       llm.RoleToolResult,
		ToolCallID: r.call.ID,
		ToolName:   r.call.Name,
		Content:    r.result.Content,
		IsError:    r.result.IsError,
		Details:    r.result.Details,
		Timestamp:  a.now().UnixMilli(),
	}
	a.deliver(m)
	return m
}
