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
	"sync"
	"sync/atomic"
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
	current *pendingInput   // the input being handled, for the commands it runs

	amu  sync.Mutex           // acks is also read on the session's event queue
	acks map[string]queuedAck // input id → reaction to swap on delivery

	requester atomic.Pointer[chat.Author] // who asked for the current prompt
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
