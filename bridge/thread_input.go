package bridge

// Input routing: an accepted message is admitted (loop guard), classified
// once (a command, or input that starts or joins a run), and then answered,
// parked for a run slot, held behind a stopped run, or given to the session
// (queued, steered, or starting a run). Owner goroutine only.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
)

// loopGuard limits how many messages one thread takes per minute, so that two
// bots talking to each other cannot run up a bill.
const loopGuard = 30

// routing is the state of the thread's input routing.
type routing struct {
	recent  []time.Time     // when the last messages came (guard)
	held    []*pendingInput // input that arrived while a stopped run wound down
	waiting []*pendingInput // input parked until a run slot frees (thread_slots.go)

	acks map[string]queuedAck // input id → reaction to swap on delivery
	// kept are the files kept since an input was accepted (Attachment.Stored),
	// by inbound id, removed once it is delivered or dropped (attach.go).
	kept map[int64][]string

	requester *chat.Author // who asked for the current prompt
}

// pendingInput is an accepted message waiting for its thread.
type pendingInput struct {
	id      int64 // storage inbound id
	in      chat.Inbound
	queue   storage.Queue // the queue it waited in before a restart, if any
	parked  bool          // waited for a run slot (it passed the guard already)
	granted bool          // a run slot is held for it
	// expanded is what the session's input hooks made of it when it was
	// refused as its run ended (agent.IdleError): it is given again as
	// that, so the hooks, which may act (!review marks comments read), see
	// it once.
	expanded *agent.IdleError
	// continues: it is the input a run that found the model unreachable
	// left in the session, answered with no new prompt (thread_modelwait.go)
	continues bool
}

// queuedAck is the reaction shown on a queued message until it is delivered.
type queuedAck struct {
	messageID string
	emoji     string
}

// inputClass is what an input is, decided once when it is handled.
type inputClass struct {
	name      string // the command word, if the text starts with one
	command   bool   // name is a known !command
	unknown   bool   // `!name` is a mistyped command: answered, not given to the model
	startsRun bool   // it goes to the model: a message, !steer or !followup
}

// classify is the one reading of an input's command word, against the
// table of commands: routing (handleInput) and the mode stored with the
// input (mode) both come from it.
func classify(text string) inputClass {
	name, _ := commandWord(text)
	cmd := lookupCommand(name)
	known := cmd != nil && cmd.mode != storage.ModePrompt
	return inputClass{
		name:      name,
		command:   known,
		unknown:   cmd == nil && mistypedCommand(text, name),
		startsRun: !known || cmd.mode != storage.ModeCommand,
	}
}

// mode is how the input is stored (storage.Inbound.Mode).
func (c inputClass) mode() storage.InboundMode {
	if cmd := lookupCommand(c.name); cmd != nil {
		return cmd.mode
	}
	return storage.ModePrompt
}

// handleInput takes one accepted message to the session.
func (t *thread) handleInput(pi *pendingInput) {
	if pi.continues {
		t.answerWaiting(pi)
		return
	}
	if !t.take(pi) {
		return // another copy of it came first
	}
	t.noteKept(pi.id, pi.in)
	c := classify(pi.in.Text)
	if !t.admit(pi, c) || t.park(pi, c) || t.holdForRepo(pi, c) {
		return
	}
	if c.startsRun && !t.running() && t.refuseOverBudget(pi) {
		return
	}
	slot, ok := t.ensureSession(pi, c)
	if !ok {
		return
	}
	t.restoreAck(pi)
	if c.startsRun && !slot && !t.running() {
		if !t.takeSlot(pi) {
			return // parked until a slot frees
		}
		slot = true
	}
	t.deliver(pi, c, slot)
}

// admit applies the loop guard and answers a mistyped !command; it reports
// whether the input goes on.
func (t *thread) admit(pi *pendingInput, c inputClass) bool {
	if !pi.parked && !t.guard() {
		t.markInbound(pi.id, storage.InboundDropped, "too many messages in a minute")
		return false
	}
	if c.unknown {
		t.say(unknownCommandReply(c.name))
		t.markInbound(pi.id, storage.InboundDelivered, "")
		return false
	}
	return true
}

// park keeps input from the session for now, and reports whether it did:
// input for the model behind input that waits for a run slot (keeping the
// order), input for the model while the thread waits for the model
// (thread_modelwait.go), !stop and !status answered while the thread waits
// for either, and
// input for the model while a stopped run winds down (it must not join that
// run, where it would sit in the stopped run's queue; it starts the next).
func (t *thread) park(pi *pendingInput, c inputClass) bool {
	switch {
	case c.startsRun && t.waitingForSlot() && !pi.granted:
		t.waitBehind(pi)
	case c.startsRun && t.holdForModel(pi):
	case !c.startsRun && t.answerWhileWaiting(c.name, pi):
	case c.startsRun && t.runStopping():
		// The run winds down: the input starts the next run (starting it
		// now would take the place of the one not finished).
		t.hold(pi)
	default:
		return false
	}
	return true
}

// hold keeps input for the model until the run tracked ends: finishRun
// hands it back.
func (t *thread) hold(pi *pendingInput) { t.held = append(t.held, pi) }

// takeHeld takes the input held while a run wound down.
func (t *thread) takeHeld() []*pendingInput {
	held := t.held
	t.held = nil
	return held
}

// ensureSession opens the thread's session for pi when it has none, and
// reports whether a run slot is now held for pi and whether pi goes on.
// Input that starts a run takes its slot before the workspace is set up, so
// that a burst of new threads does not check out every workspace at once.
func (t *thread) ensureSession(pi *pendingInput, c inputClass) (slot, ok bool) {
	if t.sess != nil {
		return false, true
	}
	if cmd := lookupCommand(c.name); c.command && cmd.answeredUnopened() {
		t.markInbound(pi.id, storage.InboundDelivered, "")
		_, args := commandWord(pi.in.Text)
		if err := t.runCommand(t.b.ctx, cmd, pi, args); err != nil {
			t.say("❌ " + err.Error())
		}
		return false, false
	}
	if c.command && !c.startsRun && t.rec.SessionID == "" {
		t.say(t.noSessionReply(c.name))
		t.markInbound(pi.id, storage.InboundDelivered, "")
		return false, false
	}
	if c.startsRun {
		// The first answer a person sees comes before the workspace and
		// the session are set up: a new thread's clone, a resumed one's
		// load from the store, its sandbox and MCP servers.
		t.postFirstStatus()
		if !t.takeSlot(pi) {
			return false, false // parked until a slot frees
		}
		slot = true
	}
	if err := t.open(t.b.ctx, pi.in); err != nil {
		if slot {
			t.releaseSlot()
		}
		t.fail(pi, "I couldn't set up this thread's workspace: "+userError(err), err)
		return false, false
	}
	return slot, true
}

// restoreAck: input queued before a restart still shows its queued
// reaction, to be swapped when the model gets it.
func (t *thread) restoreAck(pi *pendingInput) {
	if pi.queue == "" || pi.in.MessageID == "" {
		return
	}
	emoji := reactFollowUp
	if pi.queue == storage.QueueSteer {
		emoji = reactSteer
	}
	t.setAck(pi, emoji)
}

func (t *thread) setAck(pi *pendingInput, emoji string) {
	t.acks[inputID(pi.id)] = queuedAck{messageID: pi.in.MessageID, emoji: emoji}
}

// takeAck takes the queued reaction of input id off the list.
func (t *thread) takeAck(id string) (queuedAck, bool) {
	ack, ok := t.acks[id]
	delete(t.acks, id)
	return ack, ok
}

// deliver gives pi to the session: it starts a run (which holds slot), joins
// the one going as queued or steering input, or is a command answered here.
func (t *thread) deliver(pi *pendingInput, c inputClass, slot bool) {
	ctx := t.b.ctx
	step, ok := t.planRoute(pi, c, slot)
	if !ok {
		return // answered, or held for the next run
	}
	text, images := t.prepareInput(ctx, pi.in)
	if step.kind != planNone {
		// The model gets the step's prompt; the command word, if any, is
		// not part of what is planned.
		if name, args := commandWord(text); name != "" && name == c.name {
			text = args
		}
		text = step.prompt(text)
		c = inputClass{name: c.name, startsRun: true}
	}
	author := pi.in.Author
	t.requester = &author
	if slot {
		// The transcript must be ready before the run's first event.
		t.armStatus()
		t.syncBranch(ctx)
	}
	opts := agent.PromptOptions{Behavior: t.b.cfg.Agent.BusyMode, Images: images, InputID: inputID(pi.id)}
	if author.ID == forgeAuthorID {
		// A review a forge's webhook brought waits for the run going on:
		// the reviewer did not see what it is doing.
		opts.Behavior = agent.BehaviorFollowUp
	}
	// While a run is tracked, input for the model may only join it: if the
	// session settled already (its idle event is still to come), Start
	// starts nothing, and the input starts the next run.
	opts.Join = c.startsRun && t.running()
	if step.kind == planMake {
		t.planStarting(pi.id)
	}
	out, text, behavior, err := t.prompt(ctx, pi, c, text, opts)
	if step.kind == planMake {
		if out == agent.Started {
			t.planStarted(step, pi.id)
		} else {
			t.giveToolsBack()
		}
	}
	if step.request != "" {
		text = step.request // what the run is for: its commit message and title
	}
	if out != agent.Started && slot {
		t.releaseSlot()
	}
	// The status this call armed, for a run that did not start (armed but
	// unused); only this call's: one armed for a run that started stays
	// that run's until the view takes it at agent_start.
	var unused *outbox.Message
	if out != agent.Started && slot {
		unused = t.disarmStatus()
	}
	status := t.takePendingStatus()
	switch {
	case errors.Is(err, agent.ErrIdle):
		t.keepPendingStatus(unused)
		unused = nil
		t.hold(pi)
	case err != nil:
		t.keepPendingStatus(unused)
		t.fail(pi, userError(err), err)
		unused = nil
	case out == agent.Started:
		t.beginRun(pi, text, pi.in.Author, slot, status)
	case out == agent.Queued:
		t.queuedInSession(pi, behavior)
	case out == agent.Handled:
		t.markInbound(pi.id, storage.InboundDelivered, "")
	}
	if unused != nil {
		t.p.Outbox.Edit(unused, "…", outbox.Normal)
	}
}

// prompt hands text to the session and returns Start's outcome, the text
// the model got and how it was given. A command is answered by its handler
// (Handled); the words after !steer and !followup go to the model as that
// kind of input (or start a run when nothing runs).
func (t *thread) prompt(ctx context.Context, pi *pendingInput, c inputClass, text string, opts agent.PromptOptions) (agent.Outcome, string, agent.Behavior, error) {
	if c.command {
		cmd := lookupCommand(c.name)
		_, args := commandWord(text)
		if cmd.run != nil {
			// Recorded before it runs: a command acts at most once (a
			// restart must not replay a !reset into the new conversation),
			// and what it answers is never seen before its input is done.
			t.markInbound(pi.id, storage.InboundDelivered, "")
			return agent.Handled, text, opts.Behavior, t.runCommand(ctx, cmd, pi, args)
		}
		text, opts.Behavior = args, cmd.behavior()
		if strings.TrimSpace(text) == "" {
			var none agent.Outcome
			return none, text, opts.Behavior, plainError{"say what: `!steer <text>` or `!followup <text>`"}
		}
	}
	given := text
	if pi.expanded != nil {
		given, opts.Images, opts.SkipExpansion = pi.expanded.Text, pi.expanded.Images, true
	}
	out, err := t.sess.Start(ctx, given, opts)
	var idle *agent.IdleError
	if errors.As(err, &idle) {
		pi.expanded = idle
	}
	return out, text, opts.Behavior, err
}

// queuedInSession records that pi waits queued, in the session's queue or
// behind the thread's wait for the model (before its reaction says so), and
// shows it; delivered swaps the reaction.
func (t *thread) queuedInSession(pi *pendingInput, behavior agent.Behavior) {
	emoji, queue := reactFollowUp, storage.QueueFollowUp
	if behavior == agent.BehaviorSteer {
		emoji, queue = reactSteer, storage.QueueSteer
	}
	t.setAck(pi, emoji)
	t.markInbound(pi.id, storage.InboundQueued, string(queue))
	if pi.in.MessageID != "" {
		t.p.Outbox.React(t.ref, pi.in.MessageID, emoji, true)
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
	if !t.endPendingStatus(text) {
		t.say(text)
	}
	t.markInbound(pi.id, storage.InboundDropped, oneLine(msg, 200))
}

func (t *thread) markInbound(id int64, state storage.InboundState, detail string) {
	err := t.b.cfg.Store.MarkInbound(t.b.ctx, id, state, detail)
	if err != nil && !errors.Is(err, storage.ErrInvalidTransition) {
		t.log.Warn("recording input state", "inbound", id, "state", state, "err", err)
	}
	if err == nil && (state == storage.InboundDelivered || state == storage.InboundDropped) {
		t.dropKeptFiles(id)
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

func inputID(id int64) string { return strconv.FormatInt(id, 10) }

// delivered runs when input reaches the model (the view tells it).
// It swaps the reaction and removes the files kept for the input (the model
// has them now): the input is recorded as delivered by the store, in the
// commit that appends the user message (storage.AppendEntries), so that no
// crash can separate the two.
func (t *thread) delivered(id string) {
	ack, queued := t.takeAck(id)
	if queued && ack.messageID != "" {
		t.p.Outbox.React(t.ref, ack.messageID, ack.emoji, false)
		t.p.Outbox.React(t.ref, ack.messageID, reactDelivered, true)
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		t.dropKeptFiles(n)
	}
}
