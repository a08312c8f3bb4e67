package bridge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/workspace"
)

// Replicas in one process: bridges sharing one store (SQLite's in-process
// notifier stands in for PostgreSQL's NOTIFY; the lease logic is the same),
// each with its own chat connection, workspaces and outbox, and one LLM.

const testTTL = time.Second

// leased makes a rig's bridge a replica named owner.
func leased(owner string) rigOption {
	return func(c *Config, _ *Platform) {
		c.Lease = LeaseConfig{Owner: owner, TTL: testTTL, Renew: testTTL / 4, Poll: 50 * time.Millisecond}
	}
}

// lapse plays a lease l that ran out while its holder paused: another
// replica, to, takes the thread for an hour. The holder's keeper, when it
// runs, may renew the released lease before to's acquire (a renewal moves
// the expiry of a lease that is still the holder's), so the lapse is played
// again until to holds the thread.
func (r *rig) lapse(l storage.Lease, to string) storage.Lease {
	r.tb.Helper()
	var nl storage.Lease
	r.waitUntil(to+" takes the thread", func() bool {
		if err := r.db.ReleaseLease(r.ctx, l); err != nil {
			r.tb.Fatal(err)
		}
		var ok bool
		var err error
		if nl, ok, err = r.db.AcquireLease(r.ctx, l.ThreadID, to, time.Hour); err != nil {
			r.tb.Fatalf("the takeover: %v", err)
		}
		return ok
	})
	return nl
}

// replicaOf makes a rig's bridge a replica of first's: the same store and
// model.
func replicaOf(first *rig, owner string) rigOption {
	return func(c *Config, p *Platform) {
		leased(owner)(c, p)
		p.Adapter.(*chatfake.Adapter).StartIDsAt(500000)
		c.Store = first.db
		c.Model = first.cfg.Model
	}
}

// userMessages counts the user messages of a thread's session that contain s.
func userMessages(r *rig, sessionID, s string) int {
	r.tb.Helper()
	es, err := r.db.LoadEntries(r.ctx, sessionID)
	if err != nil {
		r.tb.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Type == transcript.EntryMessage && e.Message.Role == "user" {
			for _, c := range e.Message.Content {
				if strings.Contains(c.Text, s) {
					n++
				}
			}
		}
	}
	return n
}

// A reply that reaches a replica which does not own the thread is stored
// there and taken by the owner: the model gets it once, the owner answers,
// and the receiver says nothing.
func TestReplicaInputReachesTheOwner(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"))
	var n atomic.Int32
	a.llm.Handle(func(req llmfake.Request) llmfake.Response {
		return llmfake.TextReply("ANSWER-" + string(rune('0'+n.Add(1))))
	})
	th := testThread("501.1")
	a.say(th, alice, "first request", true)
	a.waitRuns(th, 1)
	if !a.live(th) {
		t.Fatal("the receiving replica does not own the thread it started")
	}
	// B starts once A holds the thread: a replica running meanwhile may take
	// a thread whose mention is stored before its receiver's owner claims it
	// (either answers in the same chat thread; here each has its own chat).
	b := newRig(t, replicaOf(a, "replica-b"))

	// The reply comes in on replica B's connection (Slack spreads events
	// over an app's connections): B knows the thread from the store.
	b.say(th, bob, "SECOND-REQUEST from b", false)
	a.waitRuns(th, 2)
	a.waitText(th, "ANSWER-2")
	b.flush()
	if got := b.chat.BotTexts(th); len(got) != 0 {
		t.Errorf("the replica without the thread posted %q", got)
	}
	if b.live(th) {
		t.Error("the replica without the thread kept an owner for it")
	}
	rec, err := a.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	if got := userMessages(a, rec.SessionID, "SECOND-REQUEST from b"); got != 1 {
		t.Errorf("the reply reached the model %d times, want once", got)
	}
	if pending, _ := a.db.PendingInbound(a.ctx, rec.ID); len(pending) != 0 {
		t.Errorf("input left pending: %+v", pending)
	}
}

// A replica that died with a thread (its lease live, a run going, input
// queued) loses it when the lease runs out: another replica takes it over,
// reports the cut-off run, and answers the queued input.
func TestReplicaTakesOverADeadReplicasThread(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	a := newRig(t, leased("replica-a"))
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("TAKEN-OVER answer") })
	th := testThread("502.1")
	// What a replica that was killed left behind: its lease, a run it
	// started, and input accepted and not yet delivered.
	rec, _, err := a.db.EnsureThread(a.ctx, storeKey(th), storage.ThreadInit{Repo: "app", Branch: a.wsm.BranchFor(wsKey(th))})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := a.db.CreateSession(a.ctx, rec.ID, storage.SessionInit{Model: mainModel, SystemPrompt: baseSystemPrompt})
	if err != nil {
		t.Fatal(err)
	}
	dead, ok, err := a.db.AcquireLease(a.ctx, rec.ID, "replica-dead", testTTL)
	if err != nil || !ok {
		t.Fatalf("AcquireLease: %v, %v", ok, err)
	}
	if _, err := a.db.StartRun(storage.WithLease(a.ctx, dead), rec.ID, sess.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.db.AcceptInbound(a.ctx, storage.Inbound{Platform: "test", Channel: th.Channel, MessageID: "502.2", ThreadID: rec.ID,
		AuthorID: bob.ID, AuthorName: bob.Name, Text: "QUEUED-BEFORE-THE-CRASH", Mode: storage.ModePrompt}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a.waitText(th, "The previous run in this thread was interrupted")
	a.waitText(th, "TAKEN-OVER answer")
	if took := time.Since(start); took > testTTL+2*time.Second {
		t.Errorf("takeover took %s, want within the lease (%s) and a poll", took, testTTL)
	}
	if got := userMessages(a, sess.ID, "QUEUED-BEFORE-THE-CRASH"); got != 1 {
		t.Errorf("the queued input reached the model %d times, want once", got)
	}
	// The notice was stored before it was posted, as answers are: a new
	// owner dying before its outbox sent it leaves it to the next.
	a.waitUntil("the notice is marked posted", func() bool {
		posts, err := a.db.UnpostedPosts(a.ctx)
		return err == nil && len(posts) == 0
	})
	raw, err := sql.Open("sqlite", "file:"+a.db.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var stored int
	if err := raw.QueryRow(`SELECT count(*) FROM pending_posts WHERE thread_id = ? AND post_key LIKE 'interrupted-%' AND text LIKE '%was interrupted%'`, rec.ID).Scan(&stored); err != nil || stored != 1 {
		t.Errorf("stored interrupted notices: %d, %v; want 1", stored, err)
	}
	if n := strings.Count(a.chat.Transcript(th), "The previous run in this thread was interrupted"); n != 1 {
		t.Errorf("the notice shows %d times, want once", n)
	}
	l, ok, err := a.db.AcquireLease(a.ctx, rec.ID, "replica-dead", testTTL)
	if err != nil || ok || l.Owner != "replica-a" || l.Fence <= dead.Fence {
		t.Errorf("lease after the takeover = %+v, %v, %v; want replica-a's with a larger fence", l, ok, err)
	}
}

// A replica whose thread was taken over (it paused past its lease, or the
// store was out of reach) stops there: its run ends without a word from it,
// its writes are refused, and it gives up the thread.
func TestReplicaThatLostItsLeaseStops(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"))
	g := newGate(t)
	a.llm.Handle(g.holdFirst(llmfake.TextReply("STALE-ANSWER from the old owner")))
	th := testThread("503.1")
	a.say(th, alice, "long job", true)
	a.waitArrived(g)
	rec, _ := a.thread(th)
	owner := a.owner(th)
	l := owner.lease.Load()
	if l == nil {
		t.Fatal("the owner has no lease")
	}
	// Another replica takes the thread: its lease lapsed while A paused.
	nl := a.lapse(*l, "replica-b")
	a.waitUntil("the old owner lets the thread go", func() bool { return !a.live(th) })
	g.release()
	a.flush()
	if strings.Contains(a.chat.Transcript(th), "STALE-ANSWER") {
		t.Errorf("the old owner posted its answer after losing the thread:\n%s", a.chat.Transcript(th))
	}
	runs, err := a.db.ThreadRuns(a.ctx, rec.ID)
	if err != nil || len(runs) != 1 || runs[0].Outcome != "" {
		t.Errorf("runs = %+v, %v; want the one run left for the new owner to end", runs, err)
	}
	if cur, _, _ := a.db.AcquireLease(a.ctx, rec.ID, "replica-c", time.Hour); cur.Owner != "replica-b" || cur.Fence != nl.Fence {
		t.Errorf("lease = %+v, want replica-b's still", cur)
	}
}

// A replica gives its threads up when it stops (after its runs ended and
// their work was pushed), and when a thread goes idle: another replica may
// take them at once, without waiting for the lease to run out.
func TestReplicaReleasesItsLeases(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"), func(c *Config, _ *Platform) { c.IdleEvict = 200 * time.Millisecond })
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("done") })
	th := testThread("504.1")
	a.say(th, alice, "a request", true)
	a.waitRuns(th, 1)
	rec, _ := a.thread(th)
	a.waitUntil("the idle thread is evicted", func() bool { return !a.live(th) })
	if l, ok, err := a.db.AcquireLease(a.ctx, rec.ID, "replica-b", time.Hour); err != nil || !ok {
		t.Errorf("another replica could not take the idle thread: %+v, %v, %v", l, ok, err)
	}

	th2 := testThread("504.2")
	a.say(th2, alice, "another request", true)
	a.waitRuns(th2, 1)
	rec2, _ := a.thread(th2)
	if err := a.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(a.ctx, a.db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if l, ok, err := db.AcquireLease(a.ctx, rec2.ID, "replica-b", time.Hour); err != nil || !ok {
		t.Errorf("another replica could not take the thread after a shutdown: %+v, %v, %v", l, ok, err)
	}
}

// Once shutdown began, no thread owner starts (a takeover poll or a message
// racing it would otherwise leave one that shutdown never stops, and the
// shutdown would wait out its grace): the input is stored for the next start.
func TestNoThreadOwnerStartsDuringShutdown(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	r := newRig(t, leased("replica-a"))
	th := testThread("505.1")
	rec, _, err := r.db.EnsureThread(r.ctx, storeKey(th), storage.ThreadInit{Repo: "app"})
	if err != nil {
		t.Fatal(err)
	}
	r.b.mu.Lock()
	r.b.closing = true
	r.b.mu.Unlock()
	r.b.dispatchItem(r.b.platforms["test"], rec, func(*thread) message { return nil })
	if r.live(th) {
		t.Fatal("a thread owner started during shutdown")
	}
	start := time.Now()
	if err := r.stop(5 * time.Second); err != nil || time.Since(start) > 3*time.Second {
		t.Errorf("shutdown took %s: %v", time.Since(start), err)
	}
}

// A replica paused past its lease (SIGSTOP, a long GC, a frozen VM) wakes up
// in the middle of a run whose thread another replica took over. Before its
// lease keeper runs again, the run's events arrive: they must show nothing —
// no answer, no notice that the conversation could not be saved (its writes
// are refused) — and its work is not pushed over the new owner's.
func TestReplicaWakingAfterATakeoverShowsNothing(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.TTL, c.Lease.Renew = time.Hour, 0 // the keeper does not run during the test
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	g := newGate(t)
	a.llm.Handle(g.holdFirst(llmfake.TextReply("STALE-ANSWER from the paused owner")))
	th := testThread("507.1")
	a.say(th, alice, "long job", true)
	a.waitArrived(g)
	rec, _ := a.thread(th)
	l := a.owner(th).lease.Load()
	a.lapse(*l, "replica-b")           // it lapsed while A slept, and B took it
	offset.Store(int64(2 * time.Hour)) // A wakes up: by its clock, its lease ran out
	g.release()
	a.waitUntil("the paused owner lets the thread go", func() bool { return !a.live(th) })
	a.flush()
	if tr := a.chat.Transcript(th); strings.Contains(tr, "STALE-ANSWER") || strings.Contains(tr, "couldn't save") {
		t.Errorf("the owner that lost the thread showed its run:\n%s", tr)
	}
	if pushes, err := a.db.ThreadPushes(a.ctx, rec.ID); err != nil || len(pushes) != 0 {
		t.Errorf("pushes by the owner that lost the thread: %+v, %v", pushes, err)
	}
}

// A reply without a mention may reach a replica a moment before another
// replica has stored the mention that starts its thread (Slack spreads a
// thread's events over the replicas' connections): it waits for the thread
// to appear instead of being ignored — it is acknowledged, and the platform
// would not send it again.
func TestReplicaReplyRacingItsThreadsMention(t *testing.T) {
	t.Parallel()
	spreads := func(_ *Config, p *Platform) { p.SpreadsThreads = true }
	a := newRig(t, leased("replica-a"), spreads)
	b := newRig(t, replicaOf(a, "replica-b"), spreads)
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("508.1")
	got := b.sayLater(th, bob, "RACING-REPLY from b", false)
	// The reply is waiting on B (it asked the store, which has no thread);
	// now A stores the mention.
	b.waitUntil("the reply to reach replica b", func() bool { return len(b.chat.Messages(th)) == 1 })
	a.say(th, alice, "start here", true)
	r := recv(b, "the racing reply's receipt", got)
	if r.err != nil || r.rc != chat.Accepted {
		t.Fatalf("the racing reply: receipt %v, %v; want accepted", r.rc, r.err)
	}
	a.waitUntil("the reply reaches the model", func() bool {
		rec, err := a.thread(th)
		return err == nil && rec.SessionID != "" && userMessages(a, rec.SessionID, "RACING-REPLY from b") == 1
	})
}

// unreachableRenewals is the store with RenewLease failing as a store out
// of reach does (not fenced: it cannot say), counting the calls.
type unreachableRenewals struct {
	storage.Store
	calls atomic.Int32
}

func (s *unreachableRenewals) RenewLease(context.Context, storage.Lease, time.Duration) (storage.Lease, error) {
	s.calls.Add(1)
	return storage.Lease{}, errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
}

// A lease that ran out by the local clock is checked with the store before
// a session event is shown; when the store cannot answer, the thread goes on
// (its writes are fenced if it was lost) and does not ask again for every
// event: a streamed answer is hundreds of events.
func TestLeaseCheckDoesNotAskAnUnreachableStoreOnEveryEvent(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	var store *unreachableRenewals
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.TTL, c.Lease.Renew = time.Hour, 0
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		store = &unreachableRenewals{Store: c.Store}
		c.Store = store
	})
	g := newGate(t)
	chunks := make([]string, 200)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("word%d ", i)
	}
	a.llm.Handle(g.holdFirst(llmfake.TextReply(chunks...)))
	th := testThread("509.1")
	a.say(th, alice, "write a long answer", true)
	a.waitArrived(g)
	offset.Store(int64(2 * time.Hour)) // the lease ran out by the local clock
	g.release()
	a.waitRuns(th, 1)
	a.waitText(th, "word199")
	if c := store.calls.Load(); c == 0 || c > 3 {
		t.Errorf("RenewLease was asked %d times for one streamed answer; want the first event to ask, then a pause", c)
	}
}

// A replica pushes a thread's work only while it holds the thread with half
// a lease to spare: a force push is allowed over the bot's own commits, so a
// replica that lost the thread (paused past its lease) could otherwise
// replace the new owner's commits on the branch.
func TestReplicaThatLostTheThreadDoesNotPush(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.TTL, c.Lease.Renew = time.Hour, 0
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("looked") })
	th := testThread("510.1")
	a.say(th, alice, "look around", true)
	a.waitRuns(th, 1)
	rec, _ := a.thread(th)
	owner := a.owner(th)
	l := owner.lease.Load()
	// The owner is held inside an item while it loses the thread (an owner
	// that notices the loss first ends, and drops the items queued to it).
	held, paused := make(chan struct{}), make(chan struct{})
	pushed := make(chan bool, 1)
	owner.post(ownerFunc(func() {
		close(held)
		<-paused
		// Work the lost owner still has in its workspace.
		if err := os.WriteFile(filepath.Join(owner.ws.Root(), "stale.txt"), []byte("stale\n"), 0o644); err != nil {
			t.Error(err)
		}
		pushed <- owner.commitRun(a.ctx, &activeRun{request: "stale work"}, storage.RunDone)
	}))
	recv(a, "the owner to take the item", held)
	a.lapse(*l, "replica-b")
	offset.Store(int64(2 * time.Hour))
	close(paused)
	if recv(a, "the lost owner's commit", pushed) {
		t.Error("the replica that lost the thread committed and pushed its work")
	}
	if heads := a.remote.Branches(t); slices.Contains(heads, rec.Branch) {
		t.Errorf("the branch %s is on the remote: %v", rec.Branch, heads)
	}
}

// A replica that takes a thread over works on the pushed branch: its
// workspace is made from the remote branch (docs/behaviour.md §9), not from the
// default branch, so the previous owner's pushed work is there.
func TestReplicaTakingOverWorksOnThePushedBranch(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"), func(c *Config, _ *Platform) {
		c.IdleEvict = 300 * time.Millisecond
		// A does not look for threads without an owner: it would race B
		// for the thread once B stored its input, before B's owner claims it.
		c.Lease.Poll = time.Hour
	})
	a.llm.Push(writeThenAnswer("notes.txt", "written on a", "WROTE on a")...)
	th := testThread("511.1")
	a.say(th, alice, "write the notes", true)
	a.waitRuns(th, 1)
	rec, _ := a.thread(th)
	a.waitUntil("the work is pushed", func() bool { return slices.Contains(a.remote.Branches(t), rec.Branch) })
	a.waitUntil("replica a gives the idle thread up", func() bool { return !a.live(th) })
	// B starts now: running while A's mention was stored, it could have
	// taken the thread before A's owner claimed it.
	b := newRig(t, replicaOf(a, "replica-b"), func(c *Config, _ *Platform) {
		// The same remote as a's, through workspaces of its own.
		wsm, err := workspace.New(workspace.Config{
			DataDir:         filepath.Join(t.TempDir(), "workspaces"),
			Repos:           []workspace.Repo{{Name: "app", URL: a.remote.Path, DefaultBranch: "main"}},
			CleanupInterval: -1,
			Logger:          c.Logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = wsm.Close(context.Background()) })
		c.Workspaces = wsm
	})
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("CONTINUED on b") })
	b.say(th, bob, "go on", false)
	b.waitText(th, "CONTINUED on b")
	owner := b.owner(th)
	if owner == nil {
		t.Fatal("replica b does not own the thread it answered")
	}
	got := make(chan string, 1)
	owner.post(ownerFunc(func() {
		data, err := os.ReadFile(filepath.Join(owner.ws.Root(), "notes.txt"))
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(data)
	}))
	if s := recv(b, "replica b's owner to read notes.txt", got); s != "written on a\n" {
		t.Errorf("notes.txt in replica b's workspace: %q, want the pushed work", s)
	}
}

// Input that comes after a run's session went idle, but before the owner
// handled that run's end, starts the next run after the end is handled: it
// took the unfinished run's place before (that run was never recorded as
// ended, its slot was never given back, and its late end finished the new
// run instead). Seen in the chaos suite, where stored input arrives in
// bursts; the test holds the owner busy to open the window for sure.
func TestInputBetweenARunsEndAndItsHandlingStartsTheNextRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGate(t)
	var n atomic.Int32
	r.llm.Handle(func(llmfake.Request) llmfake.Response {
		k := n.Add(1)
		if k == 1 {
			g.hold()
		}
		return llmfake.TextReply(fmt.Sprintf("ANSWER-%d", k))
	})
	th := testThread("512.1")
	r.say(th, alice, "first", true)
	r.waitArrived(g)
	rec, _ := r.thread(th)
	owner := r.owner(th)
	busy, sessc := make(chan struct{}), make(chan *agent.Session, 1)
	owner.post(ownerFunc(func() { sessc <- owner.sess; <-busy })) // the owner is busy…
	sess := recv(r, "the owner to be busy", sessc)
	r.say(th, bob, "second", false) // …so this waits in its inbox,
	g.release()                     // and the run ends behind it.
	r.waitUntil("the session is idle", func() bool { return !sess.IsRunning() })
	close(busy)
	r.waitRuns(th, 2)
	r.waitText(th, "ANSWER-2")
	r.waitUntil("both runs are recorded as ended", func() bool {
		runs, err := r.db.ThreadRuns(r.ctx, rec.ID)
		if err != nil || len(runs) != 2 {
			return false
		}
		return runs[0].Outcome != "" && runs[1].Outcome != "" && !runs[1].StartedAt.Before(runs[0].EndedAt)
	})
}

// pendingCounter is the store counting PendingInbound, the query a thread's
// owner makes when it hears of input.
type pendingCounter struct {
	storage.Store
	calls atomic.Int32
}

func (s *pendingCounter) PendingInbound(ctx context.Context, threadID int64) ([]storage.Inbound, error) {
	s.calls.Add(1)
	return s.Store.PendingInbound(ctx, threadID)
}

// News of input (every accepted message is news, to every replica, the
// receiver too; and each poll that finds stored input) that reaches a busy
// owner joins the look already queued: one store query for the burst, not
// one per message.
func TestNewsOfInputForABusyOwnerCostsOneQuery(t *testing.T) {
	t.Parallel()
	var store *pendingCounter
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.Poll = time.Hour // only the news below nudges the owner
		store = &pendingCounter{Store: c.Store}
		c.Store = store
	})
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("513.1")
	a.say(th, alice, "hello", true)
	a.waitRuns(th, 1)
	rec, _ := a.thread(th)
	owner := a.owner(th)
	busy, held := make(chan struct{}), make(chan struct{})
	owner.post(ownerFunc(func() { close(held); <-busy }))
	recv(a, "the owner to be busy", held)
	before := store.calls.Load()
	for range 50 {
		a.b.nudge(rec.ID)
	}
	close(busy)
	done := make(chan struct{})
	owner.post(ownerFunc(func() { close(done) }))
	recv(a, "the owner to take the news", done)
	if n := store.calls.Load() - before; n != 1 {
		t.Errorf("50 pieces of news for a busy owner made %d PendingInbound queries, want 1", n)
	}
}

// What a replica's outbox still holds for a thread when the thread is taken
// over (its answer waited out a rate limit while the replica was paused past
// its lease) is not sent: the owner guards the thread's posts with its lease,
// and the new owner shows the thread now.
func TestOutboxOfAnOwnerThatLostTheThreadPostsNothing(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.TTL, c.Lease.Renew = time.Hour, 0 // the keeper does not run during the test
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("first answer") })
	th := testThread("514.1")
	a.say(th, alice, "hello", true)
	a.waitRuns(th, 1)
	owner := a.owner(th)
	a.lapse(*owner.lease.Load(), "replica-b") // it lapsed while A slept, and B took it
	offset.Store(int64(2 * time.Hour))        // A wakes up: by its clock, its lease ran out
	sent := make(chan error, 1)
	owner.p.Outbox.Post(th, "STALE-POST queued before the pause", outbox.High, func(_ string, err error) { sent <- err })
	if err := recv(a, "the queued post's outcome", sent); !errors.Is(err, outbox.ErrWithdrawn) {
		t.Errorf("the stale owner's queued post: %v, want %v", err, outbox.ErrWithdrawn)
	}
	a.flush()
	if tr := a.chat.Transcript(th); strings.Contains(tr, "STALE-POST") {
		t.Errorf("the owner that lost the thread posted:\n%s", tr)
	}
	a.waitUntil("the stale owner lets the thread go", func() bool { return !a.live(th) })
	// The guard that keeps the outbox from posting for the thread outlives
	// the owner; the owner (its session, its view) is not kept with it.
	out := owner.p.Outbox
	gone := weak.Make(owner)
	owner = nil
	for deadline := time.Now().Add(5 * time.Second); gone.Value() != nil; {
		if time.Now().After(deadline) {
			t.Fatal("the owner that lost the thread is still in memory 5 s after it ended")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the owner's goroutine ends after it leaves the thread table
	}
	out.Post(th, "STALE-POST after the owner ended", outbox.High, func(_ string, err error) { sent <- err })
	if err := recv(a, "the post's outcome", sent); !errors.Is(err, outbox.ErrWithdrawn) {
		t.Errorf("a post the lost owner's outbox still held after the owner ended: %v, want %v", err, outbox.ErrWithdrawn)
	}
}

// getThreadCounter is the store counting GetThread.
type getThreadCounter struct {
	storage.Store
	calls atomic.Int32
}

func (s *getThreadCounter) GetThread(ctx context.Context, key storage.ThreadKey) (storage.Thread, error) {
	s.calls.Add(1)
	return s.Store.GetThread(ctx, key)
}

// Most replies a Slack replica sees are in threads the bot is not in (it
// gets every message of its channels): each waits for a mention racing it,
// and asks the store when it hears of accepted input and once at the end,
// not every 100 ms (15 queries for each such reply).
func TestReplyInAThreadTheBotIsNotInAsksTheStoreTwice(t *testing.T) {
	t.Parallel()
	var store *getThreadCounter
	a := newRig(t, leased("replica-a"), func(c *Config, p *Platform) {
		p.SpreadsThreads = true
		store = &getThreadCounter{Store: c.Store}
		c.Store = store
	})
	_, rc, err := a.chat.Say(a.ctx, testThread("515.1"), bob, "people talking among themselves", false)
	if err != nil || rc != chat.Ignored {
		t.Fatalf("the reply: %v, %v; want ignored", rc, err)
	}
	if n := store.calls.Load(); n != 2 {
		t.Errorf("the reply asked the store for its thread %d times, want 2", n)
	}
}

// A follow-up that the thread's owner receives itself comes to it twice: the
// receiver hands it over, and the store's notice of it has the owner read
// the thread's stored input. The owner handles one copy: the model sees the
// message once, and once more for no second run.
func TestFollowUpTheOwnerReceivesReachesTheModelOnce(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"))
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("516.1")
	a.say(th, alice, "start", true)
	a.waitRuns(th, 1)
	a.say(th, alice, "FOLLOW-UP once", false)
	a.waitRuns(th, 2)
	a.flush()
	rec, _ := a.thread(th)
	if n := userMessages(a, rec.SessionID, "FOLLOW-UP once"); n != 1 {
		t.Errorf("the follow-up reached the model %d times, want once", n)
	}
	if runs, err := a.db.ThreadRuns(a.ctx, rec.ID); err != nil || len(runs) != 2 {
		t.Errorf("runs: %d, %v; want 2", len(runs), err)
	}
}

// unavailableAccepts is the store refusing to accept input while down, as a
// database out of reach does.
type unavailableAccepts struct {
	storage.Store
	down atomic.Bool
}

func (s *unavailableAccepts) AcceptInboundInThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit, in storage.Inbound) (storage.Accepted, error) {
	if s.down.Load() {
		return storage.Accepted{}, fmt.Errorf("storage: accept inbound: %w", storage.ErrUnavailable)
	}
	return s.Store.AcceptInboundInThread(ctx, key, init, in)
}

// A mention refused while the store was out of reach comes back later (the
// platform delivers it again); a reply in its thread that arrives before it
// is refused too, not acknowledged and dropped, and is stored once it is
// delivered again after the mention.
func TestReplyBeforeItsRefusedMentionIsRefusedToo(t *testing.T) {
	t.Parallel()
	var store *unavailableAccepts
	a := newRig(t, leased("replica-a"), func(c *Config, p *Platform) {
		p.SpreadsThreads = true
		store = &unavailableAccepts{Store: c.Store}
		c.Store = store
	})
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("517.1")
	store.down.Store(true)
	mention, rc, err := a.chat.Say(a.ctx, th, alice, "start here", true)
	if err == nil {
		t.Fatalf("the mention while the store is down: %v, want refused with an error", rc)
	}
	store.down.Store(false)
	reply, rc, err := a.chat.Say(a.ctx, th, bob, "REPLY-BEFORE-ITS-MENTION", false)
	if err == nil {
		t.Fatalf("the reply before its refused mention came back: receipt %v, want refused (delivered again), not dropped", rc)
	}
	if rc, err := a.chat.Redeliver(a.ctx, mention, true); err != nil || rc != chat.Accepted {
		t.Fatalf("the mention delivered again: %v, %v; want accepted", rc, err)
	}
	if rc, err := a.chat.Redeliver(a.ctx, reply, false); err != nil || rc != chat.Accepted {
		t.Fatalf("the reply delivered again: %v, %v; want accepted", rc, err)
	}
	a.waitUntil("the reply reaches the model", func() bool {
		rec, err := a.thread(th)
		return err == nil && rec.SessionID != "" && userMessages(a, rec.SessionID, "REPLY-BEFORE-ITS-MENTION") == 1
	})
}
