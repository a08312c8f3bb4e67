package bridge

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/threadsmith/threadsmith/agent/transcript"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// blinkingStore is the store out of reach for the first call of each of a
// run's records (its start, an append of its entries, its end, the mark of
// its answer), as a database restarting under a run is.
type blinkingStore struct {
	storage.Store
	starts, appends, finishes, marks atomic.Int32
}

func unavailable(op string) error {
	return fmt.Errorf("storage: %s: %w", op, storage.ErrUnavailable)
}

func (s *blinkingStore) StartRun(ctx context.Context, threadID int64, sessionID string, inboundID int64) (int64, error) {
	if s.starts.Add(1) == 1 {
		return 0, unavailable("start run")
	}
	return s.Store.StartRun(ctx, threadID, sessionID, inboundID)
}

func (s *blinkingStore) AppendEntries(ctx context.Context, sessionID string, entries []transcript.Entry) error {
	// The first append is the session's header; the second the request.
	if s.appends.Add(1) == 2 {
		return unavailable("append entries")
	}
	return s.Store.AppendEntries(ctx, sessionID, entries)
}

func (s *blinkingStore) FinishRun(ctx context.Context, runID int64, outcome storage.RunOutcome) error {
	if s.finishes.Add(1) == 1 {
		return unavailable("finish run")
	}
	return s.Store.FinishRun(ctx, runID, outcome)
}

func (s *blinkingStore) MarkPosted(ctx context.Context, id int64, messageID string) error {
	if s.marks.Add(1) == 1 {
		return unavailable("mark posted")
	}
	return s.Store.MarkPosted(ctx, id, messageID)
}

// A run during which storage is out of reach for a moment at each of its
// records is recorded all the same: started, its entries kept, ended done,
// its answer marked posted, and the thread is told nothing of it.
func TestARunRidesOutStorageUnavailableForAMoment(t *testing.T) {
	t.Parallel()
	var store *blinkingStore
	r := newRig(t, func(c *Config, _ *Platform) {
		store = &blinkingStore{Store: c.Store}
		c.Store = store
	})
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("the answer") })
	th := testThread("72.1")
	r.say(th, alice, "a request", true)
	r.waitRuns(th, 1)
	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	r.waitUntil("the run recorded as done and its answer marked posted", func() bool {
		runs, err := r.db.ThreadRuns(r.ctx, rec.ID)
		if err != nil || len(runs) != 1 || runs[0].Outcome != storage.RunDone {
			return false
		}
		unposted, err := r.db.UnpostedPosts(r.ctx)
		return err == nil && len(unposted) == 0
	})
	if n := userMessages(r, rec.SessionID, "a request"); n != 1 {
		t.Errorf("the request is %d times in the session, want once", n)
	}
	if got := r.chat.Transcript(th); strings.Contains(got, "couldn't save") || strings.Contains(got, "interrupted") {
		t.Errorf("the thread was told of the outage:\n%s", got)
	}
	if store.starts.Load() < 2 || store.finishes.Load() < 2 || store.marks.Load() < 2 || store.appends.Load() < 3 {
		t.Errorf("calls: %d starts, %d appends, %d finishes, %d marks; want each failed one made again",
			store.starts.Load(), store.appends.Load(), store.finishes.Load(), store.marks.Load())
	}
}
