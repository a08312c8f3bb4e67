package bridge

// Run lifecycle: a run is tracked from its start (recorded, timer armed),
// its end reaches the owner as an item (runDone, or the timeout), and
// finishing it posts the answer (durably, thread_answer.go), then commits and
// pushes (push.go). Owner goroutine only.

import (
	"context"
	"fmt"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
)

// statusRefresh is how often the "working" indicator is re-sent during a run
// (Discord's typing indicator lasts 10 s).
const statusRefresh = 8 * time.Second

// lifecycle is the state of the thread's run and of the pushes after it.
type lifecycle struct {
	run        *activeRun
	statusTick *time.Ticker  // re-sends "is working…" while a run goes on
	unpushed   bool          // the last push failed: the next run pushes again
	pushing    *pushJob      // the push in flight, if any (push.go)
	nextPush   *pushJob      // the push to start when it is done
	pushDone   chan *pushJob // its result, back to the owner
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
	timer     *time.Timer
	timedOut  bool
	stopped   bool
	slot      bool
}

// beginRun tracks a run that Start just started (its transcript began at
// agent_start, from the armed view).
func (t *thread) beginRun(pi *pendingInput, request string, author chat.Author, slot bool, status *outbox.Message) {
	t.trackRun(&activeRun{inboundID: pi.id, request: request, author: author, slot: slot}, status, t.statusMsgText)
}

// adoptRun tracks a run the session started by itself (input queued during a
// compaction and delivered after it).
func (t *thread) adoptRun() {
	if t.run != nil || t.sess == nil || !t.sess.IsRunning() {
		return
	}
	req := "(queued input)"
	var author chat.Author
	if a := t.requester.Load(); a != nil {
		author = *a
	}
	t.trackRun(&activeRun{request: req, author: author}, nil, "")
}

func (t *thread) trackRun(r *activeRun, status *outbox.Message, text string) {
	ctx := t.b.ctx
	id, err := t.store.StartRun(ctx, t.rec.ID, t.sess.ID(), r.inboundID)
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
	t.statusTick = time.NewTicker(statusRefresh)
	sess := t.sess
	r.sess = sess
	r.timer = time.AfterFunc(t.b.cfg.RunTimeout, func() { t.enqueue(item{runTimeout: r}) })
	go func() {
		_ = sess.Wait(context.Background())
		t.enqueue(item{runDone: r})
	}()
}

// runTimedOut runs on the owner when r reached the run timeout: it is
// aborted, and ends as any run does (runDone).
func (t *thread) runTimedOut(r *activeRun) {
	if t.run == r {
		r.timedOut = true
		r.sess.Abort()
	}
}

// finishRun runs when the session went idle: it closes the transcript with
// the footer, then commits the run's work and starts pushing it.
func (t *thread) finishRun(ctx context.Context) {
	outcome := storage.RunDone
	if t.run.stopped {
		outcome = storage.RunStopped
	}
	t.finishRunWith(ctx, outcome, true)
}

func (t *thread) finishRunWith(ctx context.Context, outcome storage.RunOutcome, push bool) {
	r := t.run
	t.run = nil
	r.timer.Stop()
	if r.slot {
		t.releaseSlot()
	}
	if t.statusTick != nil {
		t.statusTick.Stop()
		t.statusTick = nil
	}
	t.p.Outbox.SetStatus(t.ref, "")
	if r.timedOut {
		t.note(fmt.Sprintf("⏹ stopped: the run took longer than the %s limit.", t.b.cfg.RunTimeout))
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
	if !push || !t.commitRun(ctx, r, outcome) {
		t.endRunRecord(ctx, r.id, outcome)
	}
	// Input that arrived while a stopped run wound down starts the next one.
	held := t.held
	t.held = nil
	t.requeueFront(held)
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
	if err := t.store.FinishRun(ctx, id, outcome); err != nil {
		t.log.Warn("recording run end", "err", err)
	}
}
