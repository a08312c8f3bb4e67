package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// Pushing is "make the remote branch equal the local branch". After every
// run (and, for a run a crash cut off, at the next start) the thread commits
// what changed, then pushes whenever the local branch is ahead of what the
// remote was last seen to have: a commit from before a crash, or one whose
// push failed, goes out with the next push even when the run changed nothing.
// In a repository whose pushes wait for approval the commits stay until
// someone allowed says Push (pushapproval.go).
//
// The push itself runs off the owner goroutine, so that a slow or silent
// remote holds up neither the thread's commands nor its next run; its result
// comes back to the owner as a message (msgPushDone). One push is in flight per thread; runs
// that end meanwhile fold into the next one.

// pushRetry is the state of pushes that failed because the remote did not
// answer: the thread is told of the first failure only, and the kept
// commits are pushed again by themselves, at growing intervals, until the
// remote takes them (or a run's own push does).
type pushRetry struct {
	tries   int         // failed pushes in a row: the thread heard of the first
	timer   *time.Timer // posts msgPushRetry
	request string      // the request of the work waiting (pull request text)
}

// Push retries wait from Config.PushRetry (default pushRetryMin), doubling,
// up to pushRetryMax; after pushRetryTries failures in a row the commits
// wait for the next run (a remote gone for good is not tried forever, and
// the thread may be evicted).
const (
	pushRetryMin   = 30 * time.Second
	pushRetryMax   = 10 * time.Minute
	pushRetryTries = 12
)

// pushJob is one push of the thread's branch and what waits on it.
type pushJob struct {
	request    string   // the request of the newest run it carries (pull request text)
	committed  bool     // it carries a new commit (else it retries earlier ones)
	runs       []runEnd // runs recorded as ended once the push is done
	approvedBy string   // who said Push, in a repository whose pushes wait for it ("": none)

	res  workspace.PushResult
	err  error
	done chan struct{} // closed once the push is done with the workspace
}

// runEnd is a run whose end is recorded when its work is on the remote.
type runEnd struct {
	id      int64
	outcome storage.RunOutcome
}

// commitRun commits the run's changes and queues a push when the branch is
// ahead of the remote. It reports whether a push was queued (the run's end is
// then recorded when the push is done); otherwise the caller records it.
func (t *thread) commitRun(ctx context.Context, r *activeRun, outcome storage.RunOutcome) bool {
	if t.ws == nil || !t.owned(ctx, t.b.cfg.Lease.TTL/2) {
		// A replica that lost the thread pushes nothing: its push could
		// replace the new owner's commits on the branch.
		return false
	}
	changed, err := t.ws.Changed(ctx)
	if err != nil {
		t.log.Error("checking the workspace for changes", "err", err)
		t.say("⚠️ I couldn't check the workspace for changes: " + userError(err))
		return false
	}
	if changed {
		res, err := t.ws.CommitWork(ctx, workspace.CommitRequest{
			Request:    t.commitRequest(r.request),
			ThreadLink: t.link(ctx),
			CoAuthor:   workspace.Identity{Name: r.author.Name, Email: r.author.Email},
		})
		if err != nil {
			t.log.Error("commit failed", "err", err)
			t.say("⚠️ Committing the changes failed: " + userError(err))
			return false
		}
		if note := nestedNote(t.newlyNested(res.Nested)); note != "" {
			t.say(note)
		}
		// A folder left out keeps the work tree changed with nothing to
		// commit: only a new commit is pushed and told as one.
		changed = res.SHA != ""
		crashpoint.Hit(crashpoint.Committed)
	}
	if !changed && !t.unpushed && !t.aheadOfRemote(ctx) {
		return false
	}
	if t.approval().Push {
		// The commits wait in the workspace for someone allowed to say
		// Push (pushCommand); the run ends now.
		t.offerPush(ctx)
		return false
	}
	job := &pushJob{request: r.request, committed: changed}
	if r.id != 0 {
		job.runs = []runEnd{{r.id, outcome}}
	}
	t.queuePush(job)
	return true
}

// aheadOfRemote reports whether the branch has commits the remote did not
// have when last seen (no network call). When that cannot be told, it says
// yes: a push that finds the remote up to date costs one round trip.
func (t *thread) aheadOfRemote(ctx context.Context) bool {
	n, err := t.ws.Unpushed(ctx)
	if err != nil {
		t.log.Warn("counting unpushed commits", "err", err)
		return true
	}
	return n > 0
}

// queuePush starts job, or folds it into the push waiting behind the one in
// flight.
func (t *thread) queuePush(job *pushJob) {
	switch {
	case t.pushing == nil:
		t.startPush(job)
	case t.nextPush == nil:
		t.nextPush = job
	default:
		next := t.nextPush
		next.request = job.request
		next.committed = next.committed || job.committed
		next.runs = append(next.runs, job.runs...)
		if job.approvedBy != "" {
			next.approvedBy = job.approvedBy
		}
	}
}

func (t *thread) startPush(job *pushJob) {
	t.pushing = job
	job.done = make(chan struct{})
	ws, ctx := t.ws, t.b.ctx
	go func() {
		job.res, job.err = ws.Push(ctx)
		if job.err == nil {
			crashpoint.Hit(crashpoint.Pushed)
		}
		close(job.done)
		t.post(msgPushDone{job})
	}()
}

// abandonPushes gives up the pushes of a thread another replica took: their
// results are not this replica's to report; the workspace stays open until
// the one in flight is done with it.
func (t *thread) abandonPushes() {
	if t.pushing == nil {
		return
	}
	select {
	case <-t.pushing.done:
	case <-time.After(time.Minute):
		t.log.Warn("a push of the lost thread did not finish in a minute")
	}
	t.pushing, t.nextPush = nil, nil
}

// pushFinished runs on the owner when a push is done: the thread hears how
// it went, the runs it carried end, and the next push starts.
func (t *thread) pushFinished(job *pushJob) {
	if job != t.pushing {
		return // given up (the thread was lost)
	}
	ctx := t.b.ctx
	t.pushing = nil
	notice := t.pushNoticeFor(ctx, job, job.res, job.err)
	if t.retryPush(job) {
		notice = "" // told at the streak's first failure
	}
	if notice != "" {
		t.say(notice)
	}
	for _, r := range job.runs {
		t.endRunRecord(ctx, r.id, r.outcome)
	}
	if next := t.nextPush; next != nil {
		t.nextPush = nil
		t.startPush(next)
	}
}

// retryPush keeps the retry state after a push: a push the remote did not
// answer is tried again later by itself; any other outcome ends the streak.
// It reports whether the failure was told already in this streak.
func (t *thread) retryPush(job *pushJob) (toldBefore bool) {
	t.stopPushRetry()
	r := &t.retry
	if job.err == nil || workspace.ErrorCode(job.err) != workspace.CodeUnreachable || t.approval().Push {
		*r = pushRetry{}
		return false
	}
	toldBefore = r.tries > 0
	r.tries++
	if job.request != "" {
		r.request = job.request
	}
	if r.tries >= pushRetryTries {
		return toldBefore
	}
	wait := min(t.b.cfg.PushRetry<<min(r.tries-1, 16), pushRetryMax)
	r.timer = time.AfterFunc(wait, func() { t.post(msgPushRetry{}) })
	return toldBefore
}

// pushRetryDue pushes the kept commits again, unless a push or a run (which
// pushes when it ends) is under way.
func (t *thread) pushRetryDue() {
	t.retry.timer = nil
	if t.pushing != nil || t.running() || t.ws == nil {
		return
	}
	t.queuePush(&pushJob{request: t.retry.request})
}

// stopPushRetry stops the retry timer (a thread that ends, a push done).
func (t *thread) stopPushRetry() {
	if t.retry.timer != nil {
		t.retry.timer.Stop()
		t.retry.timer = nil
	}
}

// resumeInterrupted runs on the owner at start for a run the previous process
// did not finish: the work it left (a commit not pushed, changes not
// committed) is committed and pushed now instead of waiting for a next run.
func (t *thread) resumeInterrupted(r storage.Run) {
	ctx := t.b.ctx
	if t.running() {
		return // a run is going: it pushes when it ends
	}
	if _, err := t.openWorkspace(ctx); err != nil {
		t.log.Warn("opening the workspace of an interrupted run", "err", err)
		return
	}
	request := "(work of an interrupted run)"
	if r.InboundID != 0 {
		if in, err := t.b.cfg.Store.GetInbound(ctx, r.InboundID); err == nil && in.Text != "" {
			request = in.Text
		}
	}
	t.noteLastPush(ctx)
	if t.commitRun(ctx, &activeRun{request: request}, "") {
		t.log.Info("pushing the work of an interrupted run", "run", r.ID)
	}
}

// noteLastPush: a last push that failed makes the next run push again.
func (t *thread) noteLastPush(ctx context.Context) {
	if lp, err := t.b.cfg.Store.LastPush(ctx, t.rec.ID); err == nil && lp.Result != storage.PushOK {
		t.unpushed = true
	}
}

// unpushedNote completes !status's push line with what the remote lacks of
// the local branch, not only how the last push went.
func (t *thread) unpushedNote(ctx context.Context) string {
	if t.ws == nil || t.pushing != nil {
		return ""
	}
	n, err := t.ws.Unpushed(ctx)
	if err != nil || n == 0 {
		return ""
	}
	return fmt.Sprintf(" · %d commit%s not on the remote yet", n, plural(n))
}

// pushNoticeFor records the outcome of a push and returns its notice for the
// thread ("" when there is nothing to say: nothing new reached the remote).
func (t *thread) pushNoticeFor(ctx context.Context, job *pushJob, res workspace.PushResult, err error) string {
	if err != nil {
		t.unpushed = true
		result := storage.PushError
		if errors.Is(err, workspace.ErrPushRejected) {
			result = storage.PushRejected
		}
		// The thread gets the sentence written for it; the log gets git's
		// own words (redacted by the workspace).
		t.log.Warn("push failed", "branch", t.ws.Branch(), "sha", res.SHA, "err", err)
		t.recordPush(ctx, res.SHA, result, userError(err))
		retry := "will be pushed after the next run"
		switch {
		case t.approval().Push:
			retry = "is pushed at the next `!push`"
		case workspace.ErrorCode(err) == workspace.CodeUnreachable:
			retry = "is pushed again by itself when the remote answers (tried for about an hour, and with every run); you hear when it is on the remote"
		}
		return fmt.Sprintf("⚠️ Pushing `%s` failed: %s\nThe commit is kept here and %s.", t.ws.Branch(), userError(err), retry)
	}
	t.unpushed = false
	detail := ""
	if job.approvedBy != "" {
		detail = "approved by " + oneLine(job.approvedBy, 80)
	}
	t.recordPush(ctx, res.SHA, storage.PushOK, detail)
	if res.UpToDate && !job.committed {
		return ""
	}
	notice := pushNotice(res)
	if job.approvedBy != "" {
		notice += "\nApproved by `" + codeSafe(job.approvedBy) + "`."
	}
	if line := t.syncPullRequest(ctx, job.request); line != "" {
		notice += "\n" + line
	}
	return notice
}

func (t *thread) recordPush(ctx context.Context, sha string, result storage.PushResult, detail string) {
	if _, err := t.b.cfg.Store.RecordPush(ctx, storage.Push{ThreadID: t.rec.ID, Branch: t.ws.Branch(), SHA: sha, Result: result, Detail: detail}); err != nil {
		t.log.Warn("recording push", "err", err)
	}
}

// link is the thread's permalink for commit messages, when the platform gives one.
func (t *thread) link(ctx context.Context) string {
	if l, ok := t.p.Adapter.(chat.Linker); ok {
		if url, err := l.Permalink(ctx, t.ref); err == nil && url != "" {
			return "Thread: " + url
		}
	}
	return fmt.Sprintf("Thread: %s %s", t.ref.Platform, t.ref.Key())
}

// newlyNested drops from nested the repositories left out that the thread
// was already told of, and remembers the others left out.
func (t *thread) newlyNested(nested []workspace.Nested) []workspace.Nested {
	var out []workspace.Nested
	for _, n := range nested {
		if n.How == workspace.NestedSkipped {
			if t.leftOut[n.Path] {
				continue
			}
			if t.leftOut == nil {
				t.leftOut = map[string]bool{}
			}
			t.leftOut[n.Path] = true
		}
		out = append(out, n)
	}
	return out
}

// maxNestedNamed caps the nested repositories a note names.
const maxNestedNamed = 5

// nestedNote is the one line telling the thread what a commit did with
// nested git repositories, or "" when it met none. Their paths are the
// agent's choice, each shown as one code span (fileSpan): no line break, no
// markup, no mention.
func nestedNote(nested []workspace.Nested) string {
	if len(nested) == 0 {
		return ""
	}
	var parts []string
	for i, n := range nested {
		if i == maxNestedNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(nested)-i))
			break
		}
		switch n.How {
		case workspace.NestedAsFiles:
			parts = append(parts, fileSpan(n.Path)+" committed as ordinary files (a repository without commits; its .git left out)")
		case workspace.NestedLinked:
			parts = append(parts, fileSpan(n.Path)+" committed as a link to its current commit, not its files")
		default:
			parts = append(parts, fileSpan(n.Path)+" not committed (its .git is a file or link to a repository elsewhere)")
		}
	}
	return "ℹ️ Nested git repositories: " + strings.Join(parts, "; ") + "."
}
