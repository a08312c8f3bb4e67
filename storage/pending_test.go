package storage_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// A post recorded and never marked survives a restart and is returned once
// per start until it is marked; a marked one (posted or refused) is not.
func TestPendingPostsSurviveRestartUntilMarked(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), storage.FileName)
	db := openAt(t, path, storage.WithClock(clock.now))
	sa := newSession(t, db, "1.0")
	ta, _ := db.GetThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1.0"})
	run, err := db.StartRun(ctx, ta.ID, sa.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordPendingPosts(ctx, []storage.PendingPost{{ThreadID: ta.ID, Key: "", Text: "x"}}); err == nil {
		t.Error("a post without a key was recorded")
	}
	if _, err := db.RecordPendingPosts(ctx, []storage.PendingPost{{ThreadID: 999, Key: "k0", Text: "x"}}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a post of an unknown thread: %v, want ErrNotFound", err)
	}
	ids, err := db.RecordPendingPosts(ctx, []storage.PendingPost{
		{ThreadID: ta.ID, RunID: run, Key: "k1", Text: "the answer"},
		{ThreadID: ta.ID, RunID: run, Key: "k2", Text: "its footer"},
		{ThreadID: ta.ID, Key: "k3", Text: "refused"},
	})
	if err != nil || len(ids) != 3 {
		t.Fatalf("RecordPendingPosts = %v, %v", ids, err)
	}
	if _, err := db.RecordPendingPosts(ctx, []storage.PendingPost{{ThreadID: ta.ID, Key: "k1", Text: "again"}}); err == nil {
		t.Error("a key was recorded twice")
	}
	if err := db.MarkPosted(ctx, ids[0], "1.5"); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkPosted(ctx, ids[0], "1.6"); err != nil {
		t.Errorf("marking twice: %v", err)
	}
	if err := db.MarkPosted(ctx, ids[2], ""); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkPosted(ctx, 777, "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("MarkPosted(unknown) = %v, want ErrNotFound", err)
	}
	db.Close() // the process dies before the footer was accepted

	db = openAt(t, path, storage.WithClock(clock.now))
	got, err := db.UnpostedPosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := storage.PendingPost{ID: ids[1], ThreadID: ta.ID, Thread: ta.Key, RunID: run, Key: "k2", Text: "its footer", CreatedAt: clock.t}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("UnpostedPosts = %+v, want [%+v]", got, want)
	}
	if err := db.MarkPosted(ctx, ids[1], "1.7"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.UnpostedPosts(ctx); err != nil || len(got) != 0 {
		t.Errorf("UnpostedPosts after marking = %+v, %v; want none", got, err)
	}
}

// BenchmarkAnswerStoredAndMarked is what a run's end now writes for its
// answer: one transaction storing its messages (answer + footer), one mark
// per message when the platform answered. The baseline is the status
// message's outbound row the run end already wrote (one transaction).
func BenchmarkAnswerStoredAndMarked(b *testing.B) {
	ctx := context.Background()
	db := openAt(b, filepath.Join(b.TempDir(), storage.FileName))
	th := newThread(b, db, "slack", "1.0")
	n := 0 // keys stay unique across the sub-benchmark's rounds
	b.Run("answer+footer", func(b *testing.B) {
		for b.Loop() {
			n++
			i := n
			ids, err := db.RecordPendingPosts(ctx, []storage.PendingPost{
				{ThreadID: th.ID, Key: fmt.Sprintf("a%d", i), Text: "the answer"},
				{ThreadID: th.ID, Key: fmt.Sprintf("f%d", i), Text: "the footer"},
			})
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range ids {
				if err := db.MarkPosted(ctx, id, "1.5"); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("baseline-outbound-row", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.RecordOutbound(ctx, storage.Outbound{ThreadID: th.ID, Kind: storage.OutboundStatus, Channel: "C1", MessageID: "1.5", Text: "status"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
