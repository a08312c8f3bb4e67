package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// BenchmarkBudgetReads are the reads a budget check makes before a run and
// between its model calls: a person's day (AuthorSpend) and a thread's cost
// (ThreadSpend; ThreadUsage, which sums the entries, for comparison), on a
// thread whose session has 5,000 realistic entries from one ended run, with
// a run of the person going in it and 1,000 ended runs of 50 people today.
func BenchmarkBudgetReads(b *testing.B) {
	ctx := context.Background()
	db := openDB(b)
	id := sessionWith5000(b, db)
	s, err := db.GetSession(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	first, err := db.StartRun(ctx, s.ThreadID, id, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := db.FinishRun(ctx, first, storage.RunDone); err != nil {
		b.Fatal(err)
	}
	// 1,000 ended runs of 50 people in other threads, one reply each.
	for i := range 1000 {
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T", Channel: "C2", Thread: fmt.Sprint(i)}, storage.ThreadInit{Repo: "app"})
		if err != nil {
			b.Fatal(err)
		}
		ss, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		in, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", Channel: "C2", ThreadID: th.ID, EventID: fmt.Sprint("E", i),
			AuthorID: fmt.Sprint("U", i%50), Text: "go", Mode: storage.ModePrompt})
		if err != nil {
			b.Fatal(err)
		}
		run, err := db.StartRun(ctx, th.ID, ss.ID, in)
		if err != nil {
			b.Fatal(err)
		}
		cost := &llm.Cost{Total: 0.01}
		if err := db.AppendEntries(ctx, ss.ID, []transcript.Entry{
			transcript.MessageEntry(0, llm.Message{Role: llm.RoleUser, InputID: fmt.Sprint(in), Content: []llm.Content{llm.Text("go")}}),
			transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop, Content: []llm.Content{llm.Text("ok")}, Usage: &llm.Usage{Input: 10, Cost: cost}}),
		}); err != nil {
			b.Fatal(err)
		}
		if err := db.FinishRun(ctx, run, storage.RunDone); err != nil {
			b.Fatal(err)
		}
	}
	// The person's run going on in the long session: its input is the
	// session's last user message.
	in, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", Channel: "C1", ThreadID: s.ThreadID, EventID: "E-long",
		AuthorID: "U7", Text: "go on", Mode: storage.ModePrompt})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.StartRun(ctx, s.ThreadID, id, in); err != nil {
		b.Fatal(err)
	}
	if err := db.AppendEntries(ctx, id, []transcript.Entry{transcript.MessageEntry(5000,
		llm.Message{Role: llm.RoleUser, InputID: fmt.Sprint(in), Content: []llm.Content{llm.Text("go on")}})}); err != nil {
		b.Fatal(err)
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	b.Run("AuthorSpend", func(b *testing.B) {
		for b.Loop() {
			if u, err := db.AuthorSpend(ctx, "slack", "U7", day); err != nil || u.Replies != 20 {
				b.Fatalf("AuthorSpend = %+v, %v; want 20 replies", u, err)
			}
		}
	})
	b.Run("ThreadSpend", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.ThreadSpend(ctx, s.ThreadID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ThreadUsage", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.ThreadUsage(ctx, s.ThreadID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
