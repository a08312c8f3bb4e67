package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// Two replicas whose clocks are five minutes off the server's, one ahead and
// one behind, judge leases alike, by the server's clock: neither takes the
// other's live lease (nor lists its thread as unowned, nor claims its
// schedule firing), and once one stops renewing, the other takes its thread
// within the TTL.
func TestLeasesHoldAcrossReplicaClocksFiveMinutesApart(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	var shift atomic.Int64 // the server's time, moved on instead of waited for
	open := func(skew time.Duration) *postgres.DB {
		db, err := postgres.Open(ctx, dsn,
			postgres.WithClock(func() time.Time { return time.Now().Add(skew) }),
			postgres.WithServerClockShift(func() time.Duration { return time.Duration(shift.Load()) }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	ahead, behind := open(5*time.Minute), open(-5*time.Minute)
	const ttl = 30 * time.Second

	thread := func(db *postgres.DB, ts string) storage.Thread {
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: ts}, storage.ThreadInit{Repo: "r"})
		if err != nil {
			t.Fatal(err)
		}
		// Input waiting: the thread has work, so a lapsed lease lists it.
		if _, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: ts + "1",
			ThreadID: th.ID, Text: "hi", Mode: storage.ModePrompt}); err != nil {
			t.Fatal(err)
		}
		return th
	}
	acquire := func(db *postgres.DB, id int64, owner string) (storage.Lease, bool) {
		l, ok, err := db.AcquireLease(ctx, id, owner, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return l, ok
	}
	unowned := func(db *postgres.DB, id int64) bool {
		ids, err := db.UnownedThreads(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}

	slow, fast := thread(behind, "1.0"), thread(ahead, "2.0")
	ls, ok := acquire(behind, slow.ID, "behind")
	if !ok {
		t.Fatal("the replica behind could not take a free thread")
	}
	lf, ok := acquire(ahead, fast.ID, "ahead")
	if !ok {
		t.Fatal("the replica ahead could not take a free thread")
	}
	// Expires is the server's time plus the TTL, whoever asked.
	for _, l := range []storage.Lease{ls, lf} {
		if d := time.Until(l.Expires); d < ttl-5*time.Second || d > ttl+5*time.Second {
			t.Errorf("lease of %s expires in %s by the server's clock, want about %s", l.Owner, d, ttl)
		}
	}
	// Live leases are not taken, nor listed, by the other replica.
	if l, ok := acquire(ahead, slow.ID, "ahead"); ok {
		t.Errorf("the replica ahead took the live lease of the replica behind: %+v", l)
	}
	if unowned(ahead, slow.ID) {
		t.Error("the replica ahead lists a thread the replica behind holds as unowned")
	}
	if l, ok := acquire(behind, fast.ID, "behind"); ok {
		t.Errorf("the replica behind took the live lease of the replica ahead: %+v", l)
	}
	// The replica behind renews; a renewal moves the expiry by the server's clock.
	shift.Store(int64(ttl / 2))
	if _, err := behind.RenewLease(ctx, ls, ttl); err != nil {
		t.Fatal(err)
	}
	// The replica ahead died at the start: past its TTL its thread is the
	// other's; the renewed lease of the replica behind still holds.
	shift.Store(int64(ttl + time.Second))
	if !unowned(behind, fast.ID) {
		t.Error("a lapsed lease's thread is not listed as unowned by the replica behind")
	}
	if l, ok := acquire(behind, fast.ID, "behind"); !ok || l.Fence <= lf.Fence {
		t.Errorf("takeover of a lapsed lease within its TTL = %+v, %v; want the replica behind, with a larger fence", l, ok)
	}
	if l, ok := acquire(ahead, slow.ID, "ahead"); ok {
		t.Errorf("the replica ahead took a renewed lease: %+v", l)
	}

	// A schedule's firing is leased the same way.
	shift.Store(0)
	at := time.Now().Truncate(time.Minute)
	if ok, err := behind.ClaimFiring(ctx, "nightly", at, "behind", ttl); err != nil || !ok {
		t.Fatalf("ClaimFiring by the replica behind = %v, %v", ok, err)
	}
	if ok, err := ahead.ClaimFiring(ctx, "nightly", at, "ahead", ttl); err != nil || ok {
		t.Errorf("the replica ahead claimed a firing the replica behind holds: %v, %v", ok, err)
	}
	shift.Store(int64(ttl + time.Second))
	if ok, err := ahead.ClaimFiring(ctx, "nightly", at, "ahead", ttl); err != nil || !ok {
		t.Errorf("the replica ahead could not claim a firing whose lease lapsed: %v, %v", ok, err)
	}
}
