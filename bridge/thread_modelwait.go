package bridge

// The thread's wait for the model (the bridge's fact is modelhealth.go):
// when a run ended because the model could not be reached, its input waits
// — it is in the session, unanswered — and input for the model that comes
// meanwhile waits behind it, acknowledged as queued, with no model call; so
// does input for the model while the bridge knows the model is down. The
// thread is told once, and not again before one of its runs reaches the
// model. When the model answers again (msgModelBack),
// the session answers the waiting input first (agent.Session.Continue), and
// the input queued behind follows in order, as the busy mode says. The wait
// is the run's recorded outcome (storage.RunWaiting), so that a restart
// takes it up again (msgAwaitStored). Owner goroutine only.

import (
	"context"
	"fmt"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
)

// modelWait is the state of the thread's wait for the model.
type modelWait struct {
	awaiting bool // the thread's input for the model waits for the model
	told     bool // the thread was told the model is unreachable, and no run reached it since
	// resume is the input of the run the model failed (continues), answered
	// first once the model is back; nil when no run failed.
	resume *pendingInput
	behind []*pendingInput // input for the model that came meanwhile, in order
}

// modelDownNotice is what a thread is told, once (told).
func modelDownNotice(reason string) string {
	return fmt.Sprintf("⚠️ The model is unreachable (%s); your message waits and will be answered when it is back.", reason)
}

// modelDown reports whether run r ended because the model could not be
// reached (its retries spent), with a few words of why. A run stopped, timed
// out, interrupted or halted by a budget did not.
func (t *thread) modelDown(r *activeRun) (string, bool) {
	if r.stopped || r.timedOut || r.interrupted || r.halted != "" || r.sess == nil {
		return "", false
	}
	last, ok := r.sess.LastMessage()
	if !ok {
		return "", false
	}
	if last.Role != llm.RoleAssistant || last.StopReason != llm.StopReasonError || last.ErrorInfo == nil {
		return "", false
	}
	down, reason := modelUnreachableErr(last.ErrorInfo)
	return reason, down
}

// awaitRun makes the thread wait for the model after run r found it down:
// r's input is answered first once it is back.
func (t *thread) awaitRun(r *activeRun, reason string) {
	pi := &pendingInput{id: r.inboundID, in: chat.Inbound{Thread: t.ref, Text: r.request, Author: r.author}, continues: true}
	t.awaitModel(reason, pi, false)
}

// awaitStored takes up the wait run r recorded (storage.RunWaiting) before a
// restart or in another replica: the thread was told then, and the model is
// asked at once whether it is back.
func (t *thread) awaitStored(r storage.Run) {
	if t.resume != nil {
		return
	}
	pi := &pendingInput{id: r.InboundID, continues: true}
	if r.InboundID != 0 {
		if in, err := t.b.cfg.Store.GetInbound(t.b.ctx, r.InboundID); err == nil {
			pi.in = inboundFromStore(t.rec, in)
		} else {
			t.log.Warn("reading the input that waits for the model", "inbound", r.InboundID, "err", err)
		}
	}
	if pi.in.Text == "" {
		pi.in = chat.Inbound{Thread: t.ref, Text: "(queued input)"}
	}
	t.told = true
	t.awaitModel(reasonBeforeRestart, pi, true)
}

// reasonBeforeRestart is why the model is taken for down at a start that
// found input waiting for it, until the first probe says otherwise: input
// replayed meanwhile waits with it rather than failing one run each.
const reasonBeforeRestart = "it was unreachable before the restart"

// awaitModel makes the thread wait for the model, telling it once; resume,
// if set, is the input the session holds unanswered; now asks the model at
// once whether it is back.
func (t *thread) awaitModel(reason string, resume *pendingInput, now bool) {
	t.awaiting = true
	if resume != nil {
		t.resume = resume
	}
	if !t.told {
		t.told = true
		t.say(t.b.redact(modelDownNotice(reason)))
	}
	t.b.health.wait(t, t.modelName(), reason, now)
}

// modelName is the model the thread's session uses; "" when none is open.
func (t *thread) modelName() string {
	if t.sess == nil {
		return ""
	}
	return t.sess.ModelName()
}

// holdForModel keeps input for the model back while the thread waits for it,
// or while the bridge knows the thread's model is down and no run of the
// thread goes on; it reports whether it did.
func (t *thread) holdForModel(pi *pendingInput) bool {
	if !t.awaiting {
		if t.running() {
			return false
		}
		down, reason := t.b.health.knownDown(t.modelName())
		if !down {
			return false
		}
		if pi.queue != "" {
			// Queued before a restart: the thread was told then.
			t.told = true
		}
		t.awaitModel(reason, nil, false)
	}
	pi.parked = true // it passed the guard
	t.behind = append(t.behind, pi)
	if pi.queue != "" {
		t.restoreAck(pi) // queued before a restart: its reaction shows it
		return true
	}
	t.queuedInSession(pi, agent.BehaviorFollowUp)
	return true
}

// modelBack runs when the model answers again: the waiting input is handed
// back, the failed run's first.
func (t *thread) modelBack() {
	if !t.awaiting {
		return
	}
	ins := t.behind
	if t.resume != nil {
		ins = append([]*pendingInput{t.resume}, ins...)
	}
	// told stays until a run reaches the model (modelAnswered): a model
	// that fails again at once is not told twice.
	t.awaiting, t.resume, t.behind = false, nil, nil
	t.requeueFront(ins)
}

// modelAnswered runs when a run of the thread ended without finding the
// model unreachable: a later outage is told again.
func (t *thread) modelAnswered() { t.told = false }

// answerWaiting starts the run that answers the input a failed run left in
// the session (pi.continues), with no new prompt.
func (t *thread) answerWaiting(pi *pendingInput) {
	switch {
	case t.awaiting: // down again before its turn came
		t.resume = pi
		return
	case t.running():
		t.hold(pi) // it follows the run going on
		return
	case t.waitingForSlot() && !pi.granted:
		t.waitBehind(pi)
		return
	}
	slot, ok := t.ensureSession(pi, inputClass{startsRun: true})
	if !ok {
		return
	}
	if !slot && !t.takeSlot(pi) {
		return // parked until a slot frees
	}
	ctx := t.b.ctx
	author := pi.in.Author
	t.requester = &author
	t.armStatus()
	t.syncBranch(ctx)
	out, err := t.sess.Continue(ctx)
	if out == agent.Started {
		t.beginRun(pi, pi.in.Text, author, true, t.takePendingStatus())
		return
	}
	t.releaseSlot()
	unused := t.disarmStatus()
	t.takePendingStatus()
	if unused != nil {
		t.p.Outbox.Edit(unused, "…", outbox.Normal)
	}
	t.log.Info("nothing waits for the model's answer", "inbound", pi.id, "err", err)
}

// dropModelWait ends the thread's wait for the model (!stop): the input
// queued behind is dropped, and the failed run's input is no longer
// answered by itself (a stopped run recorded after it says so to a
// restart). It returns the texts dropped.
func (t *thread) dropModelWait(ctx context.Context) []string {
	resume, behind := t.resume, t.behind
	t.awaiting, t.told, t.resume, t.behind = false, false, nil, nil
	t.b.health.leave(t)
	var texts []string
	for _, pi := range behind {
		t.markInbound(pi.id, storage.InboundDropped, "stopped while waiting for the model")
		if ack, ok := t.takeAck(inputID(pi.id)); ok && ack.messageID != "" {
			t.p.Outbox.React(t.ref, ack.messageID, ack.emoji, false)
		}
		texts = append(texts, pi.in.Text)
	}
	if resume != nil && t.rec.SessionID != "" {
		id, err := t.store.StartRun(ctx, t.rec.ID, t.rec.SessionID, resume.id)
		if err == nil {
			err = t.store.FinishRun(ctx, id, storage.RunStopped)
		}
		if err != nil {
			t.log.Warn("recording the end of the wait for the model", "err", err)
		}
	}
	return texts
}

// modelWaitState is !status's word for a thread waiting for the model.
func (t *thread) modelWaitState() string {
	n := len(t.behind)
	if t.resume != nil {
		n++
	}
	return fmt.Sprintf("waiting for the model to answer again (the model is unreachable; %d message%s waiting)", n, plural(n))
}
