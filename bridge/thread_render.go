package bridge

// Rendering: what the thread shows besides the run transcript (view.go):
// the status message's header and notices.

import (
	"fmt"
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

// armStatus readies the transcript of the run about to start with its status
// message: the one posted already for it, or a new one.
func (t *thread) armStatus() {
	status, text := t.pendingStatus, t.statusMsgText
	if status == nil {
		text = t.header()
		// It grows through edits: an adapter may stream it.
		status = t.p.Outbox.PostKeyed(t.ref, text, outbox.High, chat.PostKey{Stream: true}, nil)
	}
	t.view.arm(t.repoLine(), status, text)
	t.pendingStatus, t.statusMsgText = status, text
}
