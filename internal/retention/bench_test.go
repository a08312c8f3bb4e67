package retention_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	"github.com/threadsmith/threadsmith/internal/retention"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// BenchmarkSweep deletes b.N expired threads of a SQLite store, each with a
// session of 20 entries, a delivered input and a run (records only; the
// files' deletion is the file system's time). ns/op is per thread.
func BenchmarkSweep(b *testing.B) {
	ctx := context.Background()
	c := clock.NewManual(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), sqlite.FileName), sqlite.WithClock(c.Now), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := range b.N + 1 {
		ts := fmt.Sprint(i)
		a, err := db.AcceptInboundInThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C", Thread: ts}, storage.ThreadInit{Repo: "app"},
			storage.Inbound{Platform: "slack", Channel: "C", MessageID: ts, Mode: storage.ModePrompt, Text: "hi"})
		if err != nil {
			b.Fatal(err)
		}
		ss, err := db.CreateSession(ctx, a.Thread.ID, storage.SessionInit{Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		run, err := db.StartRun(ctx, a.Thread.ID, ss.ID, a.ID)
		if err != nil {
			b.Fatal(err)
		}
		es := make([]transcript.Entry, 20)
		for j := range es {
			m := llm.UserText("a message of some length, as a prompt or a tool result would be")
			if j == 0 {
				m.InputID = fmt.Sprint(a.ID)
			}
			es[j] = transcript.Entry{Seq: int64(j), Type: transcript.EntryMessage, Message: &m}
		}
		if err := db.AppendEntries(ctx, ss.ID, es); err != nil {
			b.Fatal(err)
		}
		if err := db.FinishRun(ctx, run, storage.RunDone); err != nil {
			b.Fatal(err)
		}
	}
	c.Advance(100 * 24 * time.Hour)
	s := &retention.Sweeper{Store: db, Age: 90 * 24 * time.Hour, Now: c.Now}
	b.ResetTimer()
	n, err := s.Sweep(ctx)
	b.StopTimer()
	if err != nil || n != b.N {
		b.Fatalf("Sweep = %d, %v; want %d", n, err, b.N)
	}
}
