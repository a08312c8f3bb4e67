package postgres_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// A resume reads the session's snapshot, not its rows (as SQLite's
// TestResumeReadsTheSnapshot); a damaged one is passed over for the rows and
// replaced by the next SnapshotSession.
func TestResumeReadsTheSnapshot(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	db, err := postgres.Open(ctx, dsn, postgres.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	answer := transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, StopReason: llm.StopReasonStop})
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{transcript.MessageEntry(0, llm.UserText("from the rows")), answer}); err != nil {
		t.Fatal(err)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	raw, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	firstText := func() string {
		t.Helper()
		es, err := db.LoadLiveEntries(ctx, s.ID)
		if err != nil || len(es) != 2 {
			t.Fatalf("LoadLiveEntries = %d entries, %v", len(es), err)
		}
		return es[0].Message.Content[0].Text
	}
	if got := firstText(); got != "from the rows" {
		t.Fatalf("resumed text %q", got)
	}
	planted, err := backend.EncodeSnapshot([]transcript.Entry{transcript.MessageEntry(0, llm.UserText("from the snapshot")), answer})
	if err != nil {
		t.Fatal(err)
	}
	setSnapshot := func(b []byte) {
		t.Helper()
		if _, err := raw.Exec(ctx, `UPDATE session_snapshots SET snapshot = $1`, b); err != nil {
			t.Fatal(err)
		}
	}
	setSnapshot(planted)
	if got := firstText(); got != "from the snapshot" {
		t.Fatalf("resumed text %q: the snapshot was not read", got)
	}
	damaged := append([]byte(nil), planted...)
	damaged[len(damaged)/2] ^= 0xff
	setSnapshot(damaged)
	if got := firstText(); got != "from the rows" {
		t.Fatalf("resumed text %q with a damaged snapshot; want the rows'", got)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := raw.QueryRow(ctx, `SELECT snapshot FROM session_snapshots`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if _, err := backend.DecodeSnapshot(stored); err != nil {
		t.Fatalf("the damaged snapshot was not replaced: %v", err)
	}
}
