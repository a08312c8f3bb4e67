package sqlite_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// 50 sessions write at once, as 50 busy threads would: entries, inbound input,
// status edits. Nothing may fail (no SQLITE_BUSY), and every session reads back
// exactly what it wrote.
func TestConcurrentSessions(t *testing.T) {
	const sessions, perSession = 50, 20
	ctx := context.Background()
	db := openDB(t)
	type sess struct {
		s       storage.Session
		thread  storage.Thread
		entries []transcript.Entry
	}
	all := make([]sess, sessions)
	for i := range all {
		th := newThread(t, db, "slack", fmt.Sprintf("%d.0", i))
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{})
		if err != nil {
			t.Fatal(err)
		}
		all[i] = sess{s: s, thread: th, entries: genEntries(uint64(i), perSession)}
	}

	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range all {
		wg.Go(func() {
			x := all[i]
			status, err := db.RecordOutbound(ctx, storage.Outbound{ThreadID: x.thread.ID, Kind: storage.OutboundStatus, Channel: "C1", MessageID: fmt.Sprintf("9.%d", i)})
			if err != nil {
				errs <- err
				return
			}
			for j, e := range x.entries {
				if err := db.AppendEntries(ctx, x.s.ID, []transcript.Entry{e}); err != nil {
					errs <- fmt.Errorf("session %d seq %d: %w", i, e.Seq, err)
					return
				}
				if j%10 == 0 {
					if _, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: fmt.Sprintf("Ev%d-%d", i, j),
						Channel: "C1", MessageID: fmt.Sprintf("%d.%d", i, j+1), ThreadID: x.thread.ID, Mode: storage.ModePrompt}); err != nil {
						errs <- fmt.Errorf("session %d inbound %d: %w", i, j, err)
						return
					}
					if err := db.UpdateOutbound(ctx, status, fmt.Sprint("step ", j)); err != nil {
						errs <- err
						return
					}
					// Reads interleave with the writes.
					if _, err := db.PendingInbound(ctx, x.thread.ID); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, x := range all {
		got := transcript.WithoutUnits(load(t, db, x.s.ID))
		if !reflect.DeepEqual(got, x.entries) {
			t.Errorf("session %d: read back %d entries that differ from the %d written", i, len(got), len(x.entries))
		}
		pending, _ := db.PendingInbound(ctx, x.thread.ID)
		if len(pending) != perSession/10 {
			t.Errorf("session %d: %d inbound rows, want %d", i, len(pending), perSession/10)
		}
	}
	if err := db.Check(ctx); err != nil {
		t.Error(err)
	}
}
