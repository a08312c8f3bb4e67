package storagetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
)

// testAcceptInboundInThread: a thread's first message creates the thread and
// is accepted in it in one transaction; later copies are duplicates; input
// that cannot be stored leaves no thread behind.
func testAcceptInboundInThread(t *testing.T, s *suite) {
	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C9", Thread: "9.0"}
	in := storage.Inbound{Platform: "slack", EventID: "Ev9", Channel: "C9", MessageID: "9.0", ThreadID: 424242,
		AuthorID: "U1", AuthorName: "alice", Text: "hi", Mode: storage.ModePrompt}
	a, err := s.db.AcceptInboundInThread(s.ctx, key, storage.ThreadInit{Repo: "r", Branch: "b"}, in)
	if err != nil {
		t.Fatalf("AcceptInboundInThread: %v", err)
	}
	if !a.Created || a.Duplicate || a.Thread.Key != key || a.Thread.Repo != "r" || a.Thread.Branch != "b" || a.Thread.State != storage.ThreadActive {
		t.Errorf("first message = %+v, want a new active thread with its init and the input stored", a)
	}
	got, err := s.db.GetInbound(s.ctx, a.ID)
	if err != nil || got.ThreadID != a.Thread.ID || got.Text != "hi" || got.State != storage.InboundReceived {
		t.Errorf("GetInbound = %+v, %v; want received in thread %d", got, err, a.Thread.ID)
	}
	stored, err := s.db.GetThread(s.ctx, key)
	if err != nil || stored.ID != a.Thread.ID || stored.LastSeenMessage != "9.0" {
		t.Errorf("GetThread = %+v, %v; want thread %d, last seen 9.0", stored, err, a.Thread.ID)
	}
	// The new thread comes back as stored: the message that created it is
	// its activity and its newest message seen.
	if a.Thread.LastSeenMessage != stored.LastSeenMessage || !a.Thread.ActiveAt.Equal(stored.ActiveAt) ||
		!a.Thread.UpdatedAt.Equal(stored.UpdatedAt) || !a.Thread.CreatedAt.Equal(stored.CreatedAt) || a.Thread.State != stored.State {
		t.Errorf("AcceptInboundInThread returned %+v, stored is %+v; want the new thread as stored", a.Thread, stored)
	}
	if !stored.ActiveAt.Equal(got.ReceivedAt) {
		t.Errorf("new thread active at %v, its first input received at %v; want the same", stored.ActiveAt, got.ReceivedAt)
	}
	pending, err := s.db.PendingInbound(s.ctx, a.Thread.ID)
	if err != nil || len(pending) != 1 || pending[0].ID != a.ID {
		t.Errorf("PendingInbound = %+v, %v; want the one input", pending, err)
	}

	// The same message again (Slack: its message event after the
	// app_mention), with other init: a duplicate in the same thread.
	again := in
	again.EventID = "Ev10"
	b, err := s.db.AcceptInboundInThread(s.ctx, key, storage.ThreadInit{Repo: "other"}, again)
	if err != nil || b.Created || !b.Duplicate || b.ID != a.ID || b.Thread.ID != a.Thread.ID || b.Thread.Repo != "r" {
		t.Errorf("second copy = %+v, %v; want a duplicate of %d in the unchanged thread", b, err, a.ID)
	}

	// A thread that exists takes new input.
	old := s.thread("slack", "1.0")
	c, err := s.db.AcceptInboundInThread(s.ctx, old.Key, storage.ThreadInit{Repo: "other", Branch: "other"},
		storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "1.5", Mode: storage.ModePrompt})
	if err != nil || c.Created || c.Duplicate || c.Thread.ID != old.ID {
		t.Errorf("input in an existing thread = %+v, %v; want stored in thread %d", c, err, old.ID)
	}
	// init is for a new thread: an existing one keeps its repository and branch.
	if kept, err := s.db.GetThread(s.ctx, old.Key); err != nil || kept.Repo != old.Repo || kept.Branch != old.Branch || c.Thread.Repo != old.Repo {
		t.Errorf("existing thread after AcceptInboundInThread = %+v, %v (returned %+v); want repo %q branch %q kept", kept, err, c.Thread, old.Repo, old.Branch)
	}
	if got, err := s.db.GetInbound(s.ctx, c.ID); err != nil || got.ThreadID != old.ID {
		t.Errorf("GetInbound = %+v, %v; want it in thread %d", got, err, old.ID)
	}

	// Input that cannot be stored: no thread either.
	for i, bad := range []storage.Inbound{
		{Channel: "C7", Mode: storage.ModePrompt},
		{Platform: "slack", Channel: "C7", Mode: "shout"},
	} {
		k := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C7", Thread: fmt.Sprint(i, ".0")}
		if _, err := s.db.AcceptInboundInThread(s.ctx, k, storage.ThreadInit{}, bad); err == nil {
			t.Errorf("AcceptInboundInThread(%+v) succeeded", bad)
		}
		_, err := s.db.GetThread(s.ctx, k)
		wantErr(t, "the thread of refused input", err, storage.ErrNotFound)
	}
	if _, err := s.db.AcceptInboundInThread(s.ctx, storage.ThreadKey{Platform: "slack"}, storage.ThreadInit{}, in); err == nil {
		t.Error("AcceptInboundInThread with an incomplete key succeeded")
	}
}

// testConcurrentAcceptInboundInThread: copies of a new thread's first
// message racing each other make one thread and one input.
func testConcurrentAcceptInboundInThread(t *testing.T, s *suite) {
	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "5.0"}
	const copies = 8
	var mu sync.Mutex
	var results []storage.Accepted
	var wg sync.WaitGroup
	for c := range copies {
		wg.Go(func() {
			in := storage.Inbound{Platform: "slack", EventID: fmt.Sprint("Ev", c%2), Channel: "C1", MessageID: "5.0", Mode: storage.ModePrompt}
			a, err := s.db.AcceptInboundInThread(s.ctx, key, storage.ThreadInit{Repo: "r"}, in)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			results = append(results, a)
			mu.Unlock()
		})
	}
	wg.Wait()
	created, stored := 0, 0
	for _, a := range results {
		if a.Created {
			created++
		}
		if !a.Duplicate {
			stored++
		}
		if a.Thread.ID != results[0].Thread.ID || a.ID != results[0].ID {
			t.Errorf("copies went to thread %d input %d and thread %d input %d", a.Thread.ID, a.ID, results[0].Thread.ID, results[0].ID)
		}
	}
	if created != 1 || stored != 1 || len(results) != copies {
		t.Errorf("%d results: %d created the thread, %d stored the input; want %d, 1, 1", len(results), created, stored, copies)
	}
}
