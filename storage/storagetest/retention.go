package storagetest

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// testRetention: a thread inactive since before the cutoff is listed and
// deleted with every record of it, and then forgotten (its chat thread starts
// a new one); a thread with pending input, a run in progress, a post not
// made, another replica's live lease or recent activity is kept.
func testRetention(t *testing.T, s *suite) {
	// old: a whole record, everything ended.
	old := s.thread("slack", "1.0")
	ss := s.session(old)
	in, _ := s.accept(storage.Inbound{ThreadID: old.ID, MessageID: "1.1", AuthorID: "U1", Text: "hi"})
	s.append(ss.ID, transcript.Entry{Seq: 0, Message: ptr(user("hi", strconv.FormatInt(in, 10))), Type: transcript.EntryMessage},
		transcript.Entry{Seq: 1, Message: ptr(reply(&llm.Usage{Input: 10, Output: 2})), Type: transcript.EntryMessage})
	// Its session's snapshot goes with it (PostgreSQL's foreign key would
	// refuse the session's deletion otherwise).
	if err := s.db.SnapshotSession(s.ctx, ss.ID); err != nil {
		t.Fatal(err)
	}
	if u, err := s.db.UserUsage(s.ctx, "slack", "U1"); err != nil || u.Input != 10 {
		t.Fatalf("UserUsage before deletion = %+v, %v", u, err)
	}
	run, err := s.db.StartRun(s.ctx, old.ID, ss.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.RecordOutbound(s.ctx, storage.Outbound{ThreadID: old.ID, RunID: run, Kind: storage.OutboundAnswer, Channel: "C1", MessageID: "9.1", Text: "done"}); err != nil {
		t.Fatal(err)
	}
	posts, err := s.db.RecordPendingPosts(s.ctx, []storage.PendingPost{{ThreadID: old.ID, RunID: run, Key: "ret-k1", Text: "answer"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.MarkPosted(s.ctx, posts[0], "9.2"); err != nil {
		t.Fatal(err)
	}
	if err := s.db.FinishRun(s.ctx, run, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.RecordPush(s.ctx, storage.Push{ThreadID: old.ID, Branch: "ts/a", SHA: "abc", Result: storage.PushOK}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.RecordDecision(s.ctx, storage.Decision{ThreadID: old.ID, Kind: storage.DecisionApprove, UserID: "U1"}); err != nil {
		t.Fatal(err)
	}
	// The bot opened it (a schedule's firing): the opening goes with it.
	if _, err := s.db.BeginOpening(s.ctx, "slack", "schedule/nightly/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.FinishOpening(s.ctx, "slack", "schedule/nightly/1", old.Key); err != nil {
		t.Fatal(err)
	}
	l, ok := s.acquire(old.ID, "me", time.Minute)
	if !ok {
		t.Fatal("lease not acquired")
	}
	if err := s.db.ReleaseLease(s.ctx, l); err != nil {
		t.Fatal(err)
	}

	// Kept however old: pending input, a run in progress, a post not made.
	pending := s.thread("slack", "2.0")
	s.accept(storage.Inbound{ThreadID: pending.ID, MessageID: "2.1"})
	running := s.thread("slack", "3.0")
	if _, err := s.db.StartRun(s.ctx, running.ID, s.session(running).ID, 0); err != nil {
		t.Fatal(err)
	}
	unposted := s.thread("slack", "4.0")
	if _, err := s.db.RecordPendingPosts(s.ctx, []storage.PendingPost{{ThreadID: unposted.ID, Key: "ret-k2", Text: "answer"}}); err != nil {
		t.Fatal(err)
	}
	leased := s.thread("slack", "5.0")

	s.clock.Advance(100 * 24 * time.Hour)
	cutoff := s.clock.Now().Add(-90 * 24 * time.Hour)
	if _, ok := s.acquire(leased.ID, "other", time.Hour); !ok {
		t.Fatal("lease not acquired")
	}
	recent := s.thread("discord", "6.0")

	got, err := s.db.ExpiredThreads(s.ctx, cutoff, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != old.ID || got[0].Key != old.Key || got[0].Repo != "r" {
		t.Fatalf("ExpiredThreads = %+v, want only thread %d", got, old.ID)
	}
	if got, err := s.db.ExpiredThreads(s.ctx, cutoff, 0); err != nil || len(got) != 0 {
		t.Errorf("ExpiredThreads(limit 0) = %+v, %v", got, err)
	}
	for _, th := range []storage.Thread{pending, running, unposted, leased, recent} {
		if del, err := s.db.DeleteThread(s.ctx, th.ID, cutoff); err != nil || del {
			t.Errorf("DeleteThread(%s) = %v, %v; want it kept", th.Key.Thread, del, err)
		}
	}
	// A cutoff before the thread's activity keeps it.
	if del, err := s.db.DeleteThread(s.ctx, old.ID, old.CreatedAt.Add(-time.Hour)); err != nil || del {
		t.Errorf("DeleteThread with an earlier cutoff = %v, %v", del, err)
	}
	del, err := s.db.DeleteThread(s.ctx, old.ID, cutoff)
	if err != nil || !del {
		t.Fatalf("DeleteThread(old) = %v, %v", del, err)
	}
	if del, err := s.db.DeleteThread(s.ctx, old.ID, cutoff); err != nil || del {
		t.Errorf("DeleteThread twice = %v, %v", del, err)
	}
	if del, err := s.db.DeleteThread(s.ctx, 99999, cutoff); err != nil || del {
		t.Errorf("DeleteThread(unknown) = %v, %v", del, err)
	}
	_, err = s.db.GetThread(s.ctx, old.Key)
	wantErr(t, "GetThread after deletion", err, storage.ErrNotFound)
	if o, err := s.db.BeginOpening(s.ctx, "slack", "schedule/nightly/1"); err != nil || !o.Created {
		t.Errorf("BeginOpening of the deleted thread's opening = %+v, %v; want it new (the record went with its thread)", o, err)
	}
	_, err = s.db.ThreadByID(s.ctx, old.ID)
	wantErr(t, "ThreadByID after deletion", err, storage.ErrNotFound)
	_, err = s.db.GetSession(s.ctx, ss.ID)
	wantErr(t, "GetSession after deletion", err, storage.ErrNotFound)
	if _, err := s.db.NextSeq(s.ctx, ss.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("NextSeq of a deleted session: %v, want ErrNotFound", err)
	}
	err = s.db.AppendEntries(s.ctx, ss.ID, []transcript.Entry{{Seq: 5, Type: transcript.EntryMessage, Message: ptr(user("late", ""))}})
	wantErr(t, "AppendEntries to a deleted session", err, storage.ErrNotFound)
	_, err = s.db.GetRun(s.ctx, run)
	wantErr(t, "GetRun after deletion", err, storage.ErrNotFound)
	_, err = s.db.GetInbound(s.ctx, in)
	wantErr(t, "GetInbound after deletion", err, storage.ErrNotFound)
	_, err = s.db.LastPush(s.ctx, old.ID)
	wantErr(t, "LastPush after deletion", err, storage.ErrNotFound)
	if ds, err := s.db.ThreadDecisions(s.ctx, old.ID); err != nil || len(ds) != 0 {
		t.Errorf("ThreadDecisions after deletion = %+v, %v", ds, err)
	}
	_, err = s.db.RunUsageOf(s.ctx, run)
	wantErr(t, "RunUsageOf after deletion", err, storage.ErrNotFound)
	if ps, err := s.db.UnpostedPosts(s.ctx); err != nil || len(ps) != 1 || ps[0].ThreadID != unposted.ID {
		t.Errorf("UnpostedPosts = %+v, %v", ps, err)
	}
	sums, err := s.db.ThreadSummaries(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sm := range sums {
		if sm.ID == old.ID {
			t.Errorf("ThreadSummaries still lists the deleted thread")
		}
	}
	if u, err := s.db.UserUsage(s.ctx, "slack", "U1"); err != nil || u.Input != 0 {
		t.Errorf("UserUsage after deletion = %+v, %v", u, err)
	}
	// Forgotten: the same chat thread is a new thread.
	a, err := s.db.AcceptInboundInThread(s.ctx, old.Key, storage.ThreadInit{Repo: "r"},
		storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "1.1", Mode: storage.ModePrompt, Text: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Created || a.Duplicate || a.Thread.ID == old.ID || a.Thread.SessionID != "" {
		t.Errorf("input in the deleted thread = %+v, want a new thread", a)
	}
	// The other threads' records are untouched.
	if ps, err := s.db.PendingInbound(s.ctx, pending.ID); err != nil || len(ps) != 1 {
		t.Errorf("PendingInbound(kept) = %+v, %v", ps, err)
	}
}

func ptr[T any](v T) *T { return &v }

// testRetentionLock: one holder at a time; released, it can be taken again.
func testRetentionLock(t *testing.T, s *suite) {
	release, ok, err := s.db.TryRetentionLock(s.ctx)
	if err != nil || !ok {
		t.Fatalf("TryRetentionLock = %v, %v", ok, err)
	}
	if _, ok, err := s.db.TryRetentionLock(s.ctx); err != nil || ok {
		t.Fatalf("TryRetentionLock while held = %v, %v; want not ok", ok, err)
	}
	release()
	release() // a second release changes nothing
	again, ok, err := s.db.TryRetentionLock(s.ctx)
	if err != nil || !ok {
		t.Fatalf("TryRetentionLock after release = %v, %v", ok, err)
	}
	again()
}
