package sqlite_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

func sessionOn(t *testing.T, store agent.Store, id string) *agent.Session {
	t.Helper()
	s, err := agent.New(agent.Config{ID: id, Store: store, ModelName: "a",
		Models: []agent.ModelSpec{{Name: "a", ContextWindow: 1000}, {Name: "b", ContextWindow: 2000}, {Name: "c", ContextWindow: 3000}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// Two owners of one session (the bridge once started a second
// one while a !compact ran) both number their next entry the same. The store
// is the authority: the second append moves to the next free number and is
// kept, instead of being refused and only logged.
func TestSecondWriterOnASessionLosesNoEntry(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	th := newThread(t, db, "slack", "1700000000.000100")
	rec, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "a"})
	if err != nil {
		t.Fatal(err)
	}
	first, second := sessionOn(t, db, rec.ID), sessionOn(t, db, rec.ID)
	// Different models: two identical entries at one seq within a
	// millisecond are one append retried, by design (an append whose
	// answer was lost), and the store keeps one.
	for i, s := range []*agent.Session{first, second} {
		if err := s.SetModel([]string{"b", "c"}[i]); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := db.LoadEntries(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Seq != 0 || entries[1].Seq != 1 {
		t.Fatalf("stored entries = %+v, want both model changes, seq 0 and 1", entries)
	}
	if got := second.Entries(); len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("the second writer's record = %+v, want its entry at the store's seq 1", got)
	}
	if next, err := db.NextSeq(ctx, rec.ID); err != nil || next != 2 {
		t.Fatalf("NextSeq = %d, %v; want 2", next, err)
	}
}

// failingStore refuses every append.
type failingStore struct{}

func (failingStore) AppendEntries(context.Context, string, []transcript.Entry) error {
	return errors.New("disk I/O error")
}

// An append that fails surfaces as an event the thread is told about.
func TestFailedAppendIsAnEvent(t *testing.T) {
	s := sessionOn(t, failingStore{}, "S1")
	var mu sync.Mutex
	var failed []agent.PersistFailed
	s.Subscribe(func(ev agent.Event) {
		if pf, ok := ev.(agent.PersistFailed); ok {
			mu.Lock()
			failed = append(failed, pf)
			mu.Unlock()
		}
	})
	if err := s.SetModel("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 1 || failed[0].Entries != 1 || failed[0].ErrorMessage != "disk I/O error" {
		t.Fatalf("persist_failed events = %+v, want one for the model change with the error", failed)
	}
}

// lostAnswerStore commits the first append and then reports an error, as a
// database connection that drops during the commit does.
type lostAnswerStore struct {
	*sqlite.DB
	once sync.Once
}

func (s *lostAnswerStore) AppendEntries(ctx context.Context, id string, es []transcript.Entry) error {
	err := s.DB.AppendEntries(ctx, id, es)
	s.once.Do(func() {
		if err == nil {
			err = errors.New("unexpected EOF")
		}
	})
	return err
}

// An append the store committed but whose answer was lost is not stored
// twice: the session repeats it as it was (the store takes an identical
// append as done) instead of moving it to new sequence numbers.
func TestAppendWhoseCommitWasNotSeenIsStoredOnce(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	th := newThread(t, db, "slack", "1700000000.000200")
	rec, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "a"})
	if err != nil {
		t.Fatal(err)
	}
	s := sessionOn(t, &lostAnswerStore{DB: db}, rec.ID)
	var failed []agent.PersistFailed
	s.Subscribe(func(ev agent.Event) {
		if pf, ok := ev.(agent.PersistFailed); ok {
			failed = append(failed, pf)
		}
	})
	if err := s.SetModel("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := db.LoadEntries(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || len(failed) != 0 {
		t.Fatalf("stored %d entries (%+v), %d persist failures; want the model change once, no failure", len(entries), entries, len(failed))
	}
}
