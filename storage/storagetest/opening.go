package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// testOpenings: an opening is begun once, keeps its first time, and keeps
// the first thread recorded for it; a thread keeps its origin.
func testOpenings(t *testing.T, s *suite) {
	start := s.clock.Now()
	o, err := s.db.BeginOpening(s.ctx, "slack", "schedule/nightly")
	end := s.clock.Now()
	if err != nil || !o.Created || o.Opened() || o.Platform != "slack" || o.Key != "schedule/nightly" {
		t.Fatalf("first BeginOpening = %+v, %v; want created, no thread", o, err)
	}
	if o.First.Before(start.Add(-time.Millisecond)) || o.First.After(end.Add(time.Millisecond)) {
		t.Errorf("First = %v, want the time of the call (%v to %v)", o.First, start, end)
	}
	s.clock.Advance(time.Minute)
	again, err := s.db.BeginOpening(s.ctx, "slack", "schedule/nightly")
	if err != nil || again.Created || again.Opened() || !again.First.Equal(o.First) {
		t.Errorf("BeginOpening again = %+v, %v; want the same opening, not created", again, err)
	}
	if other, err := s.db.BeginOpening(s.ctx, "discord", "schedule/nightly"); err != nil || !other.Created {
		t.Errorf("another platform's key = %+v, %v; want created", other, err)
	}
	if _, err := s.db.BeginOpening(s.ctx, "slack", ""); err == nil {
		t.Error("an empty opening key was begun")
	}

	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C9", Thread: "1700000000.000100"}
	got, err := s.db.FinishOpening(s.ctx, "slack", "schedule/nightly", key)
	if err != nil || got != key {
		t.Fatalf("FinishOpening = %+v, %v; want %+v", got, err, key)
	}
	second := key
	second.Thread = "1700000000.000200"
	if got, err := s.db.FinishOpening(s.ctx, "slack", "schedule/nightly", second); err != nil || got != key {
		t.Errorf("FinishOpening with another thread = %+v, %v; want the first one kept, %+v", got, err, key)
	}
	if o, err := s.db.BeginOpening(s.ctx, "slack", "schedule/nightly"); err != nil || o.Created || o.Thread != key {
		t.Errorf("BeginOpening after it opened = %+v, %v; want its thread %+v", o, err, key)
	}
	if _, err := s.db.FinishOpening(s.ctx, "slack", "no-such-opening", key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("FinishOpening of an unknown opening = %v, want ErrNotFound", err)
	}
	if _, err := s.db.FinishOpening(s.ctx, "slack", "schedule/nightly", storage.ThreadKey{Platform: "slack"}); err == nil {
		t.Error("FinishOpening took a thread key without channel and thread")
	}

	// The origin is stored with the thread that the opening's input creates,
	// and read back by every way of reading threads.
	a, err := s.db.AcceptInboundInThread(s.ctx, key, storage.ThreadInit{Repo: "r", Origin: "schedule nightly"},
		storage.Inbound{Platform: "slack", EventID: "schedule/nightly/1", Channel: key.Channel, AuthorID: "schedule", Text: "hi", Mode: storage.ModePrompt})
	if err != nil || !a.Created || a.Thread.Origin != "schedule nightly" {
		t.Fatalf("AcceptInboundInThread = %+v, %v; want a new thread with its origin", a, err)
	}
	if th, err := s.db.GetThread(s.ctx, key); err != nil || th.Origin != "schedule nightly" {
		t.Errorf("GetThread = %+v, %v; want origin kept", th, err)
	}
	if th, err := s.db.ThreadByID(s.ctx, a.Thread.ID); err != nil || th.Origin != "schedule nightly" {
		t.Errorf("ThreadByID = %+v, %v; want origin kept", th, err)
	}
	if err := s.db.SetThreadWorkspace(s.ctx, a.Thread.ID, storage.ThreadInit{Repo: "r", Branch: "b", Origin: "other"}); err != nil {
		t.Fatal(err)
	}
	sums, err := s.db.ThreadSummaries(s.ctx)
	if err != nil || len(sums) != 1 || sums[0].Origin != "schedule nightly" {
		t.Errorf("ThreadSummaries = %+v, %v; want one with its origin unchanged", sums, err)
	}
	if th := s.thread("slack", "person"); th.Origin != "" {
		t.Errorf("a thread a person started has origin %q", th.Origin)
	}
}

// testFindActiveThread: a repository's active thread is found by its
// branch or by its origin, the oldest first; closed threads, other
// repositories and empty queries find nothing.
func testFindActiveThread(t *testing.T, s *suite) {
	open := func(ts string, init storage.ThreadInit) storage.Thread {
		th, _, err := s.db.EnsureThread(s.ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: ts}, init)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	first := open("1.1", storage.ThreadInit{Repo: "app", Branch: "bot/a", Origin: "issue #12"})
	open("1.2", storage.ThreadInit{Repo: "app", Branch: "bot/a", Origin: "issue #12"})
	other := open("1.3", storage.ThreadInit{Repo: "lib", Branch: "bot/b", Origin: "issue #13"})
	open("1.4", storage.ThreadInit{Repo: "app", Branch: "bot/c"})
	for _, q := range []storage.ThreadQuery{{Repo: "app", Branch: "bot/a"}, {Repo: "app", Origin: "issue #12"}} {
		if th, err := s.db.FindActiveThread(s.ctx, q); err != nil || th.ID != first.ID || th.Origin != "issue #12" {
			t.Errorf("FindActiveThread(%+v) = %+v, %v; want the oldest, %d", q, th, err, first.ID)
		}
	}
	if th, err := s.db.FindActiveThread(s.ctx, storage.ThreadQuery{Repo: "lib", Origin: "issue #13"}); err != nil || th.ID != other.ID {
		t.Errorf("FindActiveThread in lib = %+v, %v; want %d", th, err, other.ID)
	}
	if err := s.db.SetThreadState(s.ctx, other.ID, storage.ThreadClosed); err != nil {
		t.Fatal(err)
	}
	for _, q := range []storage.ThreadQuery{
		{Repo: "lib", Origin: "issue #13"}, // closed
		{Repo: "lib", Branch: "bot/a"},     // another repository's branch
		{Repo: "app", Origin: "issue #99"},
		{Repo: "app"}, // names nothing: threads without an origin are not found by ""
	} {
		if th, err := s.db.FindActiveThread(s.ctx, q); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("FindActiveThread(%+v) = %+v, %v; want ErrNotFound", q, th, err)
		}
	}
}
