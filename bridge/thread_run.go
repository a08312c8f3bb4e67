package bridge

// Run lifecycle: a run is tracked from its start (recorded, timer armed),
// its end reaches the owner as a message (msgRunEnded, or the timeout), and
// finishing it posts the answer (durably, thread_answer.go), then commits and
// pushes (push.go). Owner goroutine only.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/backoff"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
)

// statusRefresh is how often the "working" indicator is re-sent during a run
// (Discord's typing indicator lasts 10 s).
const statusRefresh = 8 * time.Second

// lifecycle is the state of the thread's run and of the pushes after it.
type lifecycle struct {
	run      *activeRun
	unpushed bool      // the last push failed: the next run pushes again
	pushing  *pushJob  // the push in flight, if any (push.go)
	nextPush *pushJob  // the push to start when it is done
	retry    pushRetry // a push the remote did not answer, tried again (push.go)
	// leftOut are the nested repositories the thread was told were left
	// out of its commits; they stay in the work tree, and are not told again.
	leftOut map[string]bool
}

// activeRun is the run a thread is in.
type activeRun struct {
	id        int64
	inboundID int64
	request   string
	author    chat.Author
	sess      *agent.Session // the session it runs on
	timer     *time.Timer    // posts msgRunTimeout
	tick      *time.Timer    // posts msgStatusTick
	windDown  *time.Timer    // a shutdown's msgRunEnded for a run that does not end
	timedOut  bool
	stopped   bool
	halted    string // why a before-model-call hook stopped it (a budget), told at its end
	// interrupted: the shutdown's deadline stopped it (reported, not pushed)
	interrupted bool
	resetAfter  context.Context // a !reset stopped it: the reset follows its end
	slot        bool
}

// beginRun tracks a run that Start just started (its transcript began at
// agent_start, from the armed view).
func (t *thread) beginRun(pi *pendingInput, request string, author chat.Author, slot bool, status *outbox.Message) {
	t.trackRun(&activeRun{inboundID: pi.id, request: request, author: author, slot: slot}, status, t.statusMsgText)
}

// adoptRun tracks a run the session started by itself (input queued during a
// compaction and delivered after it), at its agent_start.
func (t *thread) adoptRun() {
	req := "(queued input)"
	var author chat.Author
	if a := t.requester; a != nil {
		author = *a
	}
	t.trackRun(&activeRun{request: req, author: author}, nil, "")
}

func (t *thread) trackRun(r *activeRun, status *outbox.Message, text string) {
	ctx := t.b.ctx
	// Recorded again while storage is unavailable (a database restart): a
	// run with no record is one no audit, takeover or restart knows of.
	var id int64
	err := whileUnavailable(ctx, t.log, "recording run start", func() error {
		var err error
		id, err = t.store.StartRun(ctx, t.rec.ID, t.sess.ID(), r.inboundID)
		return err
	})
	if err != nil {
		t.log.Error("recording run start", "err", err)
	}
	r.id = id
	t.run = r
	t.setRunID(id)
	if status != nil {
		t.saver.track(status, t.rec.ID, r.id, t.ref.Channel, text)
	}
	// The request names the work where the platform shows a title (a Slack
	// agent session).
	t.p.Outbox.SetStatusTitled(t.ref, "is working…", r.request)
	sess := t.sess
	r.sess = sess
	r.tick = time.AfterFunc(statusRefresh, func() { t.post(msgStatusTick{r}) })
	r.timer = time.AfterFunc(t.b.cfg.RunTimeout, func() { t.post(msgRunTimeout{r}) })
	// Wait returns once the session is idle and its events are processed,
	// that is posted here: the run's end comes after all of them.
	go func() {
		_ = sess.Wait(context.Background())
		t.post(msgRunEnded{r})
	}()
}

// running reports whether a run is tracked: from its start to the handling
// of its end.
func (t *thread) running() bool { return t.run != nil }

// stopRun stops the run tracked, if one is, and reports whether one was:
// it ends as any run does (runEnded), as stopped; resetAfter, when set, is
// the !reset that follows its end.
func (t *thread) stopRun(resetAfter context.Context) bool {
	r := t.run
	if r == nil {
		return false
	}
	r.stopped = true
	if resetAfter != nil {
		r.resetAfter = resetAfter
	}
	r.sess.Abort()
	return true
}

// abandonRun drops the run tracked without ending it here: the thread went to
// another replica, which reports it.
func (t *thread) abandonRun() {
	r := t.run
	if r == nil {
		return
	}
	t.run = nil
	r.stopTimers()
	r.sess.Abort()
	if r.slot {
		t.releaseSlot()
	}
}

// runStopping reports whether the run tracked was stopped and winds down.
func (t *thread) runStopping() bool { return t.run != nil && t.run.stopped }

// runAuthor is who asked for the run tracked, if one is.
func (t *thread) runAuthor() (chat.Author, bool) {
	if t.run == nil {
		return chat.Author{}, false
	}
	return t.run.author, true
}

// interruptRun stops the run at the shutdown's deadline: it is reported as
// interrupted when it ends (runEnded), or after runWindDown if it does not.
func (t *thread) interruptRun() {
	r := t.run
	if r.interrupted {
		return
	}
	r.interrupted, r.stopped = true, true
	r.sess.Abort()
	r.windDown = time.AfterFunc(runWindDown, func() { t.post(msgRunEnded{r}) })
}

// runWindDown is how long a run stopped by a shutdown may take to end before
// the owner reports it interrupted all the same.
const runWindDown = 5 * time.Second

// statusTick re-sends the working indicator while r goes on.
func (t *thread) statusTick(r *activeRun) {
	if t.run != r {
		return
	}
	t.p.Outbox.SetStatus(t.ref, "is working…")
	r.tick.Reset(statusRefresh)
}

// runEnded runs when r's session went idle (after every event of the run):
// that run, not whichever is current, ends — a late
// end must not finish the next one. A run a !reset stopped is followed by
// the reset.
func (t *thread) runEnded(r *activeRun) {
	if r != t.run || r.sess != t.sess {
		return
	}
	if r.resetAfter != nil {
		defer t.reset(r.resetAfter)
	}
	if r.interrupted {
		t.note("⚠️ This run was interrupted: the bot is restarting. Send a message to continue once it is back.")
		t.finishRunWith(context.Background(), storage.RunInterrupted, false)
		return
	}
	ctx := t.b.ctx
	if t.stopping != nil {
		ctx = context.Background()
	}
	t.finishRun(ctx)
}

// runHalted runs when the session's before-model-call hook stopped the run
// going on (a budget is used up): it ends as a stopped run, and the thread is
// told why at its end.
func (t *thread) runHalted(reason string) {
	if r := t.run; r != nil {
		r.stopped, r.halted = true, reason
	}
}

// runTimedOut runs on the owner when r reached the run timeout: it is
// aborted, and ends as any run does (runEnded).
func (t *thread) runTimedOut(r *activeRun) {
	if t.run == r {
		r.timedOut = true
		r.sess.Abort()
	}
}

// finishRun runs when the session went idle: it closes the transcript with
// the footer, then commits the run's work and starts pushing it.
func (t *thread) finishRun(ctx context.Context) {
	r := t.run
	outcome := storage.RunDone
	if r.stopped {
		outcome = storage.RunStopped
	}
	// A run that could not reach the model leaves its input waiting.
	reason, down := t.modelDown(r)
	if down {
		outcome = storage.RunWaiting
	}
	t.finishRunWith(ctx, outcome, true)
	if down {
		t.awaitRun(r, reason)
	} else {
		t.modelAnswered()
	}
}

func (t *thread) finishRunWith(ctx context.Context, outcome storage.RunOutcome, push bool) {
	r := t.run
	t.run = nil
	r.stopTimers()
	if r.slot {
		t.releaseSlot()
	}
	t.p.Outbox.SetStatus(t.ref, "")
	if r.timedOut {
		t.note(fmt.Sprintf("⏹ stopped: the run took longer than the %s limit.", t.b.cfg.RunTimeout))
	}
	if r.halted != "" {
		t.note(r.halted)
	}
	stats := t.runStats()
	if stats.failed && outcome == storage.RunDone {
		outcome = storage.RunFailed
	}
	// The answer is posted the moment the model is done, before any git work:
	// a slow remote must not keep it from the people waiting for it, and a
	// crash while pushing must not lose it.
	info := t.b.modelInfo(t.sess.ModelName())
	foot := withPageLink(footer(stats, t.b.cfg.Now(), t.sess.ContextTokens(), t.sess.Status().ContextWindow, !info.Price.zero()), t.pageLink())
	t.endTranscript(foot, t.notifyOf(r, stats))
	t.saver.flush()
	// The run stays open in storage until its work is on the remote: a crash
	// before that leaves it interrupted, and the next start pushes it.
	planned := t.planRunEnded(r, outcome)
	if !push || planned || !t.commitRun(ctx, r, outcome) {
		t.endRunRecord(ctx, r.id, outcome)
	}
	// Input that arrived while a stopped run wound down starts the next one.
	t.requeueFront(t.takeHeld())
}

// stopTimers stops what r's timers would still post.
func (r *activeRun) stopTimers() {
	r.timer.Stop()
	r.tick.Stop()
	if r.windDown != nil {
		r.windDown.Stop()
	}
}

// notifyOf is the person r's answer mentions: who asked, when the run took
// agent.notify_after or longer (0: never), so that they hear it ended.
func (t *thread) notifyOf(r *activeRun, stats runStats) string {
	after := t.b.cfg.Agent.NotifyAfter
	if after <= 0 || stats.started.IsZero() || t.b.cfg.Now().Sub(stats.started) < after {
		return ""
	}
	return r.author.ID
}

// endRunRecord records the end of a run (id 0: none was recorded).
func (t *thread) endRunRecord(ctx context.Context, id int64, outcome storage.RunOutcome) {
	if id == 0 {
		return
	}
	// A database that cannot be reached now (a restart) may be in a moment:
	// the end is recorded again, the owner waiting, rather than left for a
	// takeover to mark the run interrupted. A repeat of an end that was
	// committed after all is refused as ended: done.
	repeated := false
	err := whileUnavailable(ctx, t.log, "recording run end", func() error {
		err := t.store.FinishRun(ctx, id, outcome)
		if repeated && errors.Is(err, storage.ErrRunEnded) {
			err = nil
		}
		repeated = true
		return err
	})
	if err != nil {
		t.log.Warn("recording run end", "err", err)
	}
}

// whileUnavailable calls write, and calls it again, pausing from
// storeRetryPause doubling, for as long as it fails with
// storage.ErrUnavailable or storage.ErrFull (room may return: the disk's
// reserve handed over, space freed), up to storeRetryPatience or ctx's end.
// It is for writes the caller cannot do without and that are safe to repeat;
// the caller's goroutine waits.
func whileUnavailable(ctx context.Context, log *slog.Logger, what string, write func() error) error {
	err := write()
	for pause, waited := storeRetryPause, time.Duration(0); storeUnavailable(err) && waited < storeRetryPatience; pause = min(2*pause, storeRetryMaxPause) {
		log.Warn(what+": storage unavailable or full; trying again", "err", err, "in", pause)
		if !backoff.Sleep(ctx, pause) {
			return err
		}
		waited += pause
		err = write()
	}
	return err
}

// How long a write the bot cannot do without is repeated while storage is
// unavailable: longer than a database's restart.
const (
	storeRetryPause    = 250 * time.Millisecond
	storeRetryMaxPause = 4 * time.Second
	storeRetryPatience = 20 * time.Second
)

// storeUnavailable reports whether a write the bot cannot do without is
// worth repeating: the store could not be reached, or had no room.
func storeUnavailable(err error) bool {
	return errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrFull)
}
