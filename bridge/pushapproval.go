package bridge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// Pushes that wait for approval. In a repository with Approval.Push a run
// that changed files is committed as any other, but its commits stay in the
// workspace: the run ends with the branch's diff stat and a Push button
// (!push). Nothing reaches the remote, and no pull request is opened, until
// someone allowed says Push: a requester of the work waiting (the author of
// a run since the last successful push) or one of the repository's
// approvers. Whether work waits is read from git (the commits the remote
// lacks) and who asked for it from storage, so both survive a restart; the
// push of an interrupted run at the next start waits the same way
// (commitRun). The push records who approved it (storage.Push.Detail), which
// the session page shows.

// Approval is what a repository's threads wait for someone's approval of.
type Approval struct {
	// Push keeps a run's commits in the workspace until a requester or an
	// approver says Push.
	Push bool
	// Plan plans every new request read-only first; the work starts when
	// the requester or an approver says Approve (plan.go).
	Plan bool
	// Approvers are the chat user ids who may approve besides the
	// requester.
	Approvers []string
}

// approval is the thread's repository's.
func (t *thread) approval() Approval { return t.b.cfg.Approvals[t.rec.Repo] }

// approves says whether user is one of repo's approvers: besides the
// requester, the one who may decide on a plan, a push or the repository.
func (t *thread) approves(repo, user string) bool {
	return slices.Contains(t.b.cfg.Approvals[repo].Approvers, user)
}

// pushActions are the buttons of a finished run whose commits wait for
// approval.
var pushActions = []chat.Action{{ID: "push", Label: "Push"}, {ID: "diff", Label: "Diff"}}

// offerPush tells the thread what waits to be pushed (the branch's files
// against the default branch) and puts Push on the run's status message.
func (t *thread) offerPush(ctx context.Context) {
	files, err := t.ws.BranchFiles(ctx)
	if err != nil {
		t.log.Warn("listing the branch's files for the push approval", "err", err)
	}
	n, err := t.ws.Unpushed(ctx)
	if err != nil {
		t.log.Warn("counting unpushed commits", "err", err)
	}
	t.say(approvalNote(t.ws.Branch(), n, files))
	if t.view != nil {
		t.offer(pushActions)
	}
}

// maxApprovalFiles is how many files the approval note names.
const maxApprovalFiles = 15

// approvalNote is the diff stat of work that waits for Push. File names are
// the agent's choice: each is one code span (fileSpan).
func approvalNote(branch string, commits int, files []workspace.FileStat) string {
	var b strings.Builder
	added, deleted := 0, 0
	for _, f := range files {
		added, deleted = added+f.Added, deleted+f.Deleted
	}
	what := "committed"
	if commits > 0 {
		what = fmt.Sprintf("%d commit%s", commits, plural(commits))
	}
	fmt.Fprintf(&b, "⏸️ Not pushed yet: %s on `%s` wait for approval · %d file%s changed (+%d −%d)",
		what, branch, len(files), plural(len(files)), added, deleted)
	for i, f := range files {
		if i == maxApprovalFiles {
			fmt.Fprintf(&b, "\n• … and %d more", len(files)-i)
			break
		}
		fmt.Fprintf(&b, "\n• %s +%d −%d", fileSpan(f.Path), f.Added, f.Deleted)
	}
	b.WriteString("\nThe requester or an approver pushes it with **Push** (or `!push`).")
	return b.String()
}

// pushCommand answers !push and the Push button: the requester of the work
// waiting, or an approver, pushes it once; anyone else is told privately
// that they may not.
func (t *thread) pushCommand(c commandCall) {
	ctx := c.ctx
	if !t.approval().Push {
		t.say("⬆️ This repository's runs push by themselves: nothing waits for `!push`.")
		return
	}
	if _, err := t.openWorkspace(ctx); err != nil {
		t.log.Warn("opening the workspace to push", "err", err)
		t.say("⚠️ I couldn't open the workspace to push: " + userError(err))
		return
	}
	if t.pushing != nil {
		t.say("⬆️ A push is already under way.")
		return
	}
	if !t.unpushed && !t.aheadOfRemote(ctx) {
		t.say(fmt.Sprintf("⬆️ Nothing to push: the remote has every commit of `%s`.", t.ws.Branch()))
		return
	}
	requesters, request := t.waitingWork(ctx)
	if !requesters[c.author.ID] && !t.approves(t.rec.Repo, c.author.ID) {
		t.log.Info("refused a push by someone who neither asked for the work nor approves it", "user", c.author.ID)
		t.whisper(c.in, "Sorry, only the person who asked for this work or an approver of this repository can push it.")
		return
	}
	t.log.Info("push approved", "user", c.author.ID)
	t.recordDecision(storage.DecisionPush, c.author, t.ws.Branch())
	t.queuePush(&pushJob{request: request, committed: true, approvedBy: displayName(c.author)})
}

// waitingWork reads from storage who asked for the work not pushed yet: the
// authors of the runs that started after the last successful push, and the
// latest of their requests (for the pull request's title).
func (t *thread) waitingWork(ctx context.Context) (requesters map[string]bool, request string) {
	st := t.b.cfg.Store
	requesters = map[string]bool{}
	pushes, err := st.ThreadPushes(ctx, t.rec.ID)
	if err != nil {
		t.log.Warn("reading the thread's pushes", "err", err)
	}
	var since storage.Push
	for _, p := range pushes {
		if p.Result == storage.PushOK {
			since = p
		}
	}
	runs, err := st.ThreadRuns(ctx, t.rec.ID)
	if err != nil {
		t.log.Warn("reading the thread's runs", "err", err)
	}
	for _, r := range runs {
		if r.InboundID == 0 || (since.ID != 0 && r.StartedAt.Before(since.At)) {
			continue
		}
		in, err := st.GetInbound(ctx, r.InboundID)
		if err != nil {
			t.log.Warn("reading a run's request", "run", r.ID, "err", err)
			continue
		}
		if in.AuthorID != forgeAuthorID {
			requesters[in.AuthorID] = true
		}
		request = in.Text
	}
	return requesters, request
}

// whisper sends a note only to the author of in, off the owner (it is a
// call to the platform); on a platform that cannot whisper the note goes to
// the thread.
func (t *thread) whisper(in chat.Inbound, note string) {
	w, ok := t.p.Adapter.(chat.Whisperer)
	if !ok {
		t.say(note) // no private notes here: a refusal is still answered
		return
	}
	ctx := t.b.ctx
	t.background(func() msgCommandDone {
		if err := w.Whisper(ctx, in, note); err != nil {
			t.log.Warn("refusal note failed", "err", err)
		}
		return msgCommandDone{}
	})
}
