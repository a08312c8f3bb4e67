package storage_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

func TestPendingInboundCountsIsTheQueueDepth(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	th := newThread(t, db, "slack", "1.1")
	var ids []int64
	for i := range 4 {
		id, _ := accept(t, db, storage.Inbound{Platform: "slack", EventID: "Ev" + strconv.Itoa(i), Channel: "C1",
			MessageID: "1." + strconv.Itoa(i+2), ThreadID: th.ID, AuthorID: "U1", Text: "hi", Mode: storage.ModePrompt})
		ids = append(ids, id)
	}
	for _, m := range []struct {
		id     int64
		state  storage.InboundState
		detail string
	}{{ids[0], storage.InboundDelivered, ""}, {ids[1], storage.InboundQueued, string(storage.QueueFollowUp)}, {ids[2], storage.InboundDropped, "too many"}} {
		if err := db.MarkInbound(ctx, m.id, m.state, m.detail); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.PendingInboundCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"received": 1, "queued": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PendingInboundCounts = %v, want %v", got, want)
	}
	db.Close()
	if err := db.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed database succeeded")
	}
}

func TestHooksHearOfRunsAndPushesOnceCommitted(t *testing.T) {
	ctx := context.Background()
	type ended struct {
		outcome storage.RunOutcome
		d       time.Duration
	}
	var runs []ended
	var pushes []storage.PushResult
	clock := &fakeClock{t: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "threadsmith.db")
	hooks := storage.WithHooks(storage.Hooks{
		RunFinished:  func(o storage.RunOutcome, d time.Duration) { runs = append(runs, ended{o, d}) },
		PushRecorded: func(r storage.PushResult) { pushes = append(pushes, r) },
	})
	db, err := storage.Open(ctx, path, storage.WithClock(clock.now), hooks)
	if err != nil {
		t.Fatal(err)
	}
	th := newThread(t, db, "slack", "1.1")
	sess, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := db.StartRun(ctx, th.ID, sess.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(90 * time.Second)
	if err := db.FinishRun(ctx, first, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, first, storage.RunStopped); err == nil {
		t.Fatal("a run ended twice")
	}
	if _, err := db.RecordPush(ctx, storage.Push{ThreadID: th.ID, Branch: "bot/x", Result: storage.PushRejected}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.StartRun(ctx, th.ID, sess.ID, 0); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// The next process finds the second run cut off.
	clock.t = clock.t.Add(time.Minute)
	db, err = storage.Open(ctx, path, storage.WithClock(clock.now), hooks)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.InterruptRuns(ctx); err != nil {
		t.Fatal(err)
	}
	want := []ended{{storage.RunDone, 90 * time.Second}, {storage.RunInterrupted, time.Minute}}
	if !reflect.DeepEqual(runs, want) {
		t.Errorf("runs heard = %v, want %v", runs, want)
	}
	if !reflect.DeepEqual(pushes, []storage.PushResult{storage.PushRejected}) {
		t.Errorf("pushes heard = %v, want one rejected", pushes)
	}
}
