package bridge

// Rendering: what the thread shows. The run transcript is the view's
// (view.go); here the thread calls into it and carries out what it returns,
// and shows the status message's header and notices.

import (
	"fmt"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
)

// rendering is what the thread shows: the run transcript (view), the status
// message posted for a run about to start, and the saver of its text.
type rendering struct {
	view          *view
	pendingStatus *outbox.Message // posted for the next run, not armed yet
	statusMsgText string          // pendingStatus's text
	saver         *statusSaver
}

// showing runs f on the view, on the owner, then carries out what it
// returned: delivered input, the chat operations in order (answers stored
// before they are posted, status texts to the saver), and a render to come
// back for (msgRerender). Every call into the view goes through here.
func (t *thread) showing(f func(v *view) viewResult) {
	res := f(t.view)
	for _, id := range res.delivered {
		t.delivered(id)
	}
	applyOps(t.p.Outbox, t.ref, res.ops, func(a viewAnswer) {
		t.postAnswer(t.rec.ID, a.runID, a.chunks, a.notify)
	}, t.saver.update)
	if n := res.rerender; n != 0 {
		time.AfterFunc(res.rerenderIn, func() { t.post(msgRerender{n}) })
	}
}

// rerender is the render the view asked to come back for (showing).
func (t *thread) rerender(n uint64) {
	if t.view != nil {
		t.showing(func(v *view) viewResult { return v.tick(n) })
	}
}

// say posts a notice into the thread, below any running transcript.
func (t *thread) say(text string) {
	if t.view != nil {
		t.showing(func(v *view) viewResult { return v.post(text) })
		return
	}
	for _, c := range Split(text, t.p.limit, t.p.measure) {
		t.p.Outbox.Post(t.ref, c, outbox.High, nil)
	}
}

// note adds a line to the running transcript's status (posts it when no run
// is active).
func (t *thread) note(text string) {
	t.showing(func(v *view) viewResult { return v.note(text) })
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

// postFirstStatus posts the status message of the run a thread without a
// session is about to start, before its workspace and session are set up,
// unless one waits already.
func (t *thread) postFirstStatus() {
	if t.pendingStatus != nil {
		return
	}
	t.statusMsgText = t.header()
	// The run's status grows through edits: an adapter may stream it.
	t.pendingStatus = t.p.Outbox.PostKeyed(t.ref, t.statusMsgText, outbox.High, chat.PostKey{Stream: true}, nil)
}

// takePendingStatus returns the status posted for the next run, if any, and
// forgets it; keepPendingStatus keeps m for the next run instead.
func (t *thread) takePendingStatus() *outbox.Message {
	m := t.pendingStatus
	t.pendingStatus = nil
	return m
}

func (t *thread) keepPendingStatus(m *outbox.Message) { t.pendingStatus = m }

// endPendingStatus gives the status posted for a run that will not start
// its final text, and reports whether there was one.
func (t *thread) endPendingStatus(text string) bool {
	m := t.takePendingStatus()
	if m == nil {
		return false
	}
	t.p.Outbox.EditFinal(m, text, outbox.High)
	return true
}

// armStatus readies the transcript of the run about to start with its status
// message: the one posted already for it, or a new one.
func (t *thread) armStatus() {
	status, text := t.pendingStatus, t.statusMsgText
	if status == nil {
		text = t.header()
		// It grows through edits: an adapter may stream it.
		status = t.p.Outbox.PostKeyed(t.ref, text, outbox.High, chat.PostKey{Stream: true}, nil)
	}
	context := t.repoLine()
	t.showing(func(v *view) viewResult { v.arm(context, status, text); return viewResult{} })
	t.pendingStatus, t.statusMsgText = status, text
}

// disarmStatus drops the armed transcript of a run that did not start and
// returns its status message.
func (t *thread) disarmStatus() (status *outbox.Message) {
	t.showing(func(v *view) viewResult { status = v.disarm(); return viewResult{} })
	return status
}

// setRunID tells the transcript the storage id of its run.
func (t *thread) setRunID(id int64) {
	t.showing(func(v *view) viewResult { v.setRunID(id); return viewResult{} })
}

// runStats returns the running transcript's stats so far.
func (t *thread) runStats() (st runStats) {
	t.showing(func(v *view) viewResult { st = v.stats(); return viewResult{} })
	return st
}

// endTranscript closes the run's transcript: footer ends its last message,
// which notifies notify ("" for nobody).
func (t *thread) endTranscript(footer, notify string) {
	t.showing(func(v *view) viewResult { return v.endRun(footer, notify) })
}

// offer sets the buttons of the latest finished run's status message.
func (t *thread) offer(actions []chat.Action) {
	t.showing(func(v *view) viewResult { return v.offer(actions) })
}
