package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

func TestRunsAndInterruptRuns(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db := openAt(t, path, sqlite.WithClock(clock.now))
	sa := newSession(t, db, "1.0")
	sb := newSession(t, db, "2.0")
	ta, _ := db.GetThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1.0"})
	tb, _ := db.GetThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "2.0"})
	in, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "1.1", ThreadID: ta.ID, Mode: storage.ModePrompt})

	done, err := db.StartRun(ctx, ta.ID, sa.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Second)
	if err := db.FinishRun(ctx, done, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, done, storage.RunFailed); !errors.Is(err, storage.ErrRunEnded) {
		t.Errorf("FinishRun twice = %v, want ErrRunEnded", err)
	}
	if err := db.FinishRun(ctx, 777, storage.RunDone); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("FinishRun(unknown) = %v, want ErrNotFound", err)
	}
	startedA, _ := db.StartRun(ctx, ta.ID, sa.ID, 0)
	startedB, _ := db.StartRun(ctx, tb.ID, sb.ID, 0)
	startedAt := clock.t
	if _, err := db.StartRun(ctx, ta.ID, "nope", 0); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("StartRun(unknown session) = %v, want ErrNotFound", err)
	}
	db.Close() // the process dies with two runs in progress

	clock.advance(time.Minute)
	db = openAt(t, path, sqlite.WithClock(clock.now))
	runs, err := db.InterruptRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Run{
		{ID: startedA, ThreadID: ta.ID, Thread: ta.Key, SessionID: sa.ID, StartedAt: startedAt, EndedAt: clock.t, Outcome: storage.RunInterrupted},
		{ID: startedB, ThreadID: tb.ID, Thread: tb.Key, SessionID: sb.ID, StartedAt: startedAt, EndedAt: clock.t, Outcome: storage.RunInterrupted},
	}
	if !reflect.DeepEqual(runs, want) {
		t.Errorf("InterruptRuns =\n %+v\nwant\n %+v", runs, want)
	}
	for _, id := range []int64{startedA, startedB} {
		r, err := db.GetRun(ctx, id)
		if err != nil || r.Outcome != storage.RunInterrupted {
			t.Errorf("run %d after InterruptRuns: outcome %q err %v, want interrupted", id, r.Outcome, err)
		}
	}
	if r, _ := db.GetRun(ctx, done); r.Outcome != storage.RunDone || r.InboundID != in {
		t.Errorf("finished run = %+v, want outcome done, inbound %d", r, in)
	}
	if again, err := db.InterruptRuns(ctx); err != nil || len(again) != 0 {
		t.Errorf("second InterruptRuns = %v, %v; want none", again, err)
	}
}

func TestOutbound(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := newSession(t, db, "1.0")
	th, _ := db.GetThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1.0"})
	run, _ := db.StartRun(ctx, th.ID, s.ID, 0)
	status, err := db.RecordOutbound(ctx, storage.Outbound{ThreadID: th.ID, RunID: run, Kind: storage.OutboundStatus, Channel: "C1", MessageID: "1.2", Text: "working…"})
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := db.RecordOutbound(ctx, storage.Outbound{ThreadID: th.ID, RunID: run, Kind: storage.OutboundAnswer, Channel: "C1", MessageID: "1.3", Text: "done"})
	notice, _ := db.RecordOutbound(ctx, storage.Outbound{ThreadID: th.ID, Kind: storage.OutboundNotice, Channel: "C1", MessageID: "1.4", Text: "pushed"})
	if err := db.UpdateOutbound(ctx, status, "working… read a.go ✓"); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateOutbound(ctx, 999, "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("UpdateOutbound(unknown) = %v, want ErrNotFound", err)
	}
	got, err := db.OutboundForRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != status || got[1].ID != answer {
		t.Fatalf("OutboundForRun = %+v, want the status and the answer", got)
	}
	if got[0].Text != "working… read a.go ✓" || got[0].MessageID != "1.2" || got[0].Kind != storage.OutboundStatus || got[0].RunID != run {
		t.Errorf("status message = %+v, want the edited text, message 1.2, kind status, run %d", got[0], run)
	}
	last, err := db.LastOutbound(ctx, th.ID, storage.OutboundNotice)
	if err != nil || last.ID != notice || last.RunID != 0 {
		t.Errorf("LastOutbound(notice) = %+v, %v; want message %d with no run", last, err, notice)
	}
	if _, err := db.LastOutbound(ctx, th.ID, storage.OutboundAck); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("LastOutbound(ack) = %v, want ErrNotFound", err)
	}
	if _, err := db.RecordOutbound(ctx, storage.Outbound{ThreadID: th.ID, Kind: "shout", Channel: "C1", MessageID: "1"}); err == nil {
		t.Error("RecordOutbound with an unknown kind succeeded")
	}
}

func TestPushes(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	db := openDB(t, sqlite.WithClock(clock.now))
	th := newThread(t, db, "slack", "1.0")
	if _, err := db.LastPush(ctx, th.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("LastPush before any = %v, want ErrNotFound", err)
	}
	if _, err := db.RecordPush(ctx, storage.Push{ThreadID: th.ID, Branch: "bot/slack-1", SHA: "abc", Result: storage.PushOK}); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Hour)
	want := storage.Push{ThreadID: th.ID, Branch: "bot/slack-1", SHA: "def", Result: storage.PushRejected, Detail: "non-fast-forward"}
	id, err := db.RecordPush(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	want.ID, want.At = id, clock.t
	if got, err := db.LastPush(ctx, th.ID); err != nil || got != want {
		t.Errorf("LastPush = %+v, %v; want %+v", got, err, want)
	}
	if _, err := db.RecordPush(ctx, storage.Push{ThreadID: th.ID, Branch: "b", Result: "maybe"}); err == nil {
		t.Error("RecordPush with an unknown result succeeded")
	}
}

func TestMarkEventProcessed(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	db := openDB(t, sqlite.WithClock(clock.now), sqlite.WithEventRetention(time.Hour))
	mark := func(platform, id string) bool {
		t.Helper()
		first, err := db.MarkEventProcessed(ctx, platform, id)
		if err != nil {
			t.Fatal(err)
		}
		return first
	}
	if !mark("slack", "Ev1") {
		t.Error("first delivery of Ev1 not reported first")
	}
	if mark("slack", "Ev1") {
		t.Error("redelivery of Ev1 reported first")
	}
	if !mark("discord", "Ev1") {
		t.Error("Ev1 on another platform not reported first")
	}
	clock.advance(30 * time.Minute)
	if mark("slack", "Ev1") {
		t.Error("redelivery within the retention reported first")
	}
	// Past the retention, the next mark prunes Ev1: it is forgotten.
	clock.advance(2 * time.Hour)
	if !mark("slack", "Ev2") {
		t.Error("Ev2 not reported first")
	}
	var n int
	if err := rawDB(t, db.Path()).QueryRow(`SELECT count(*) FROM processed_events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("processed_events holds %d ids after pruning, want 1 (Ev2)", n)
	}
	if _, err := db.MarkEventProcessed(ctx, "slack", ""); err == nil {
		t.Error("MarkEventProcessed with an empty id succeeded")
	}
}
