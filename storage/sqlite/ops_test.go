package sqlite_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

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
	hooks := sqlite.WithHooks(storage.Hooks{
		RunFinished:  func(o storage.RunOutcome, d time.Duration) { runs = append(runs, ended{o, d}) },
		PushRecorded: func(r storage.PushResult) { pushes = append(pushes, r) },
	})
	db, err := sqlite.Open(ctx, path, sqlite.WithClock(clock.now), hooks)
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
	db, err = sqlite.Open(ctx, path, sqlite.WithClock(clock.now), hooks)
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
