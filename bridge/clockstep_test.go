package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// clockRenewals is the store as a replica sees it: RenewLease counted, and
// failing as an unreachable store does (it cannot say) once cut is set.
type clockRenewals struct {
	storage.Store
	calls atomic.Int32
	cut   atomic.Bool
}

func (s *clockRenewals) RenewLease(ctx context.Context, l storage.Lease, ttl time.Duration) (storage.Lease, error) {
	s.calls.Add(1)
	if s.cut.Load() {
		return storage.Lease{}, errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
	}
	return s.Store.RenewLease(ctx, l, ttl)
}

// A replica whose clock is five minutes behind the store's holds a thread no
// longer than its TTL once it cannot renew: the lease runs out by its own
// clock, counted from when it last asked, not by the store's expiry read on
// a clock five minutes slow. It stops the thread and posts nothing more.
func TestReplicaClockBehindDoesNotKeepALapsedLease(t *testing.T) {
	t.Parallel()
	var store *clockRenewals
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Now = func() time.Time { return time.Now().Add(-5 * time.Minute) }
		store = &clockRenewals{Store: c.Store}
		c.Store = store
	})
	g := newGate(t)
	a.llm.Handle(g.holdFirst(llmfake.TextReply("STALE-ANSWER after the lease ran out")))
	th := testThread("540.1")
	a.say(th, alice, "long job", true)
	a.waitArrived(g)
	store.cut.Store(true)
	cut := time.Now()
	a.waitUntil("the replica lets the thread go", func() bool { return !a.live(th) })
	took := time.Since(cut)
	t.Logf("let the thread go %s after renewals failed (TTL %s)", took.Round(time.Millisecond), testTTL)
	if took > testTTL+5*time.Second {
		t.Errorf("the replica held the thread %s after it last could renew, want within its TTL (%s)", took.Round(time.Millisecond), testTTL)
	}
	g.release()
	a.flush()
	if strings.Contains(a.chat.Transcript(th), "STALE-ANSWER") {
		t.Errorf("the replica posted after its lease ran out:\n%s", a.chat.Transcript(th))
	}
}

// A replica whose clock is five minutes ahead of the store's does not find
// every lease it renews already run out: a streamed answer of hundreds of
// posts and edits asks the store nothing beyond the keeper's renewals.
func TestReplicaClockAheadDoesNotAskTheStoreOnEveryPost(t *testing.T) {
	t.Parallel()
	var store *clockRenewals
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.TTL, c.Lease.Renew = 2*time.Minute, 0 // the keeper does not renew within the test
		c.Now = func() time.Time { return time.Now().Add(5 * time.Minute) }
		store = &clockRenewals{Store: c.Store}
		c.Store = store
	})
	chunks := make([]string, 200)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("word%d ", i)
	}
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply(chunks...) })
	th := testThread("541.1")
	a.say(th, alice, "write a long answer", true)
	a.waitRuns(th, 1)
	a.waitText(th, "word199")
	if c := store.calls.Load(); c != 0 {
		t.Errorf("RenewLease was asked %d times for one streamed answer within the lease; want none", c)
	}
	if !a.live(th) {
		t.Error("the replica let its thread go")
	}
}

// Two replicas on one PostgreSQL (with the real clock), one's clock five
// minutes ahead and the other's five minutes behind: a thread the replica
// behind runs is not taken by the replica ahead however long its run takes
// (no lease stolen, the answer shown once, by its owner), and the thread of
// a replica that died with a clock five minutes ahead is taken over within
// the TTL and a poll, its queued input answered once.
func TestReplicasWithClocksFiveMinutesApartServeEachThreadOnce(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	open := func(skew time.Duration) *postgres.DB {
		db, err := postgres.Open(context.Background(), dsn, postgres.WithClock(func() time.Time { return time.Now().Add(skew) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	replica := func(owner string, skew time.Duration, first *rig) rigOption {
		return func(c *Config, p *Platform) {
			leased(owner)(c, p)
			c.Store = open(skew)
			c.Now = func() time.Time { return time.Now().Add(skew) }
			if first != nil {
				p.Adapter.(*chatfake.Adapter).StartIDsAt(500000)
				c.Model = first.cfg.Model
			}
		}
	}
	ahead := newRig(t, replica("ahead", 5*time.Minute, nil))
	behind := newRig(t, replica("behind", -5*time.Minute, ahead))
	db := ahead.cfg.Store
	g := newGate(t)
	ahead.llm.Handle(g.holdFirst(llmfake.TextReply("ANSWERED once")))

	// The replica behind runs a thread; its run outlasts the TTL three times.
	th := testThread("550.1")
	behind.say(th, alice, "a long job", true)
	behind.waitArrived(g)
	owner := behind.owner(th)
	if owner == nil || owner.lease.Load() == nil {
		t.Fatal("the replica behind does not hold the thread it received")
	}
	held := *owner.lease.Load()
	tick := time.NewTicker(50 * time.Millisecond)
	for end := time.Now().Add(3 * testTTL); time.Now().Before(end); <-tick.C {
		if l, ok, err := db.AcquireLease(ahead.ctx, held.ThreadID, "probe", testTTL); err != nil || ok || l.Owner != "behind" || l.Fence != held.Fence {
			t.Fatalf("the live lease of the replica behind = %+v (taken by the probe: %v, %v); want %+v", l, ok, err, held)
		}
		if ahead.live(th) {
			t.Fatal("the replica ahead took a thread the replica behind runs")
		}
	}
	tick.Stop()
	g.release()
	behind.waitText(th, "ANSWERED once")
	behind.flush()
	ahead.flush()
	if n := strings.Count(behind.chat.Transcript(th), "ANSWERED once"); n != 1 {
		t.Errorf("the answer shows %d times, want once:\n%s", n, behind.chat.Transcript(th))
	}
	if tr := ahead.chat.Transcript(th); tr != "" {
		t.Errorf("the replica ahead posted in a thread it does not own:\n%s", tr)
	}

	// A replica whose clock was five minutes ahead died holding a thread
	// with a run going and input queued.
	dead := testThread("551.1")
	rec, _, err := db.EnsureThread(ahead.ctx, storeKey(dead), storage.ThreadInit{Repo: "app", Branch: ahead.wsm.BranchFor(wsKey(dead))})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := db.CreateSession(ahead.ctx, rec.ID, storage.SessionInit{Model: mainModel, SystemPrompt: baseSystemPrompt})
	if err != nil {
		t.Fatal(err)
	}
	deadDB := open(5 * time.Minute)
	l, ok, err := deadDB.AcquireLease(ahead.ctx, rec.ID, "dead-ahead", testTTL)
	if err != nil || !ok {
		t.Fatalf("AcquireLease: %v, %v", ok, err)
	}
	if _, err := deadDB.StartRun(storage.WithLease(ahead.ctx, l), rec.ID, sess.ID, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, err := deadDB.AcceptInbound(ahead.ctx, storage.Inbound{Platform: "test", Channel: dead.Channel, MessageID: "551.2", ThreadID: rec.ID,
		AuthorID: bob.ID, AuthorName: bob.Name, Text: "QUEUED before the crash", Mode: storage.ModePrompt}); err != nil {
		t.Fatal(err)
	}
	both := func() string { return ahead.chat.Transcript(dead) + behind.chat.Transcript(dead) }
	ahead.waitUntil("a live replica answers the dead one's queued input", func() bool { return strings.Contains(both(), "ANSWERED once") })
	took := time.Since(start)
	t.Logf("the dead replica's thread answered %s after its input was queued (TTL %s)", took.Round(time.Millisecond), testTTL)
	if took > testTTL+5*time.Second {
		t.Errorf("takeover took %s, want within the lease (%s) and a poll", took.Round(time.Millisecond), testTTL)
	}
	ahead.flush()
	behind.flush()
	if n := strings.Count(both(), "ANSWERED once"); n != 1 {
		t.Errorf("the queued input was answered %d times, want once:\n%s", n, both())
	}
	if n := strings.Count(both(), "The previous run in this thread was interrupted"); n != 1 {
		t.Errorf("the interrupted run was reported %d times, want once:\n%s", n, both())
	}
}
