package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// A resume reads the session's snapshot, not its rows: a snapshot changed
// behind the store's back is what LoadLiveEntries gives. A damaged one is
// passed over for the rows, and the next SnapshotSession replaces it.
func TestResumeReadsTheSnapshot(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db := openAt(t, path)
	s := newSession(t, db, "1.0")
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{
		transcript.MessageEntry(0, llm.UserText("from the rows")),
		transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, StopReason: llm.StopReasonStop}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
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

	planted, err := backend.EncodeSnapshot([]transcript.Entry{
		transcript.MessageEntry(0, llm.UserText("from the snapshot")),
		transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, StopReason: llm.StopReasonStop}),
	})
	if err != nil {
		t.Fatal(err)
	}
	setSnapshot := func(b []byte) {
		t.Helper()
		if _, err := raw.Exec(`UPDATE session_snapshots SET snapshot = ?`, b); err != nil {
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
	if err := raw.QueryRow(`SELECT snapshot FROM session_snapshots`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if _, err := backend.DecodeSnapshot(stored); err != nil {
		t.Fatalf("the damaged snapshot was not replaced: %v", err)
	}

	// A snapshot said to hold more (as one another writer took after
	// entries this one has not read) is never replaced by one holding less,
	// even when this one cannot use it.
	if _, err := raw.Exec(`UPDATE session_snapshots SET upto = upto + 100, snapshot = ?`, damaged); err != nil {
		t.Fatal(err)
	}
	if err := db.SnapshotSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	var upto int64
	if err := raw.QueryRow(`SELECT upto, snapshot FROM session_snapshots`).Scan(&upto, &stored); err != nil {
		t.Fatal(err)
	}
	if upto != 101 || string(stored) != string(damaged) {
		t.Fatalf("a snapshot up to seq %d replaced one up to seq 101", upto)
	}
}

// The driver hands each blob it returns in a slice of its own that it never
// writes again, which lets the store keep a snapshot read into sql.RawBytes
// without copying it (liveFromSnapshot). A driver that reused its buffer
// would fail here, not in a resumed conversation.
func TestDriverBlobsAreFresh(t *testing.T) {
	raw := rawDB(t, filepath.Join(t.TempDir(), "blobs.db"))
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec(`CREATE TABLE b (id INTEGER PRIMARY KEY, v BLOB); INSERT INTO b VALUES (1, zeroblob(9000)), (2, randomblob(9000)), (3, randomblob(100))`); err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for range 3 {
		rows, err := raw.Query(`SELECT v FROM b ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v sql.RawBytes
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, v)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range kept {
		if i%3 != 0 {
			continue
		}
		for j, c := range v {
			if c != 0 {
				t.Fatalf("blob %d changed at byte %d after later reads", i, j)
			}
		}
	}
}
