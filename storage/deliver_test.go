package storage_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

func userEntry(seq int64, text string, inbound int64) transcript.Entry {
	m := llm.UserText(text)
	m.InputID = strconv.FormatInt(inbound, 10)
	return transcript.Entry{Seq: seq, Type: transcript.EntryMessage, Timestamp: 1, Message: &m}
}

func inboundState(t *testing.T, db *storage.DB, id int64) storage.InboundState {
	t.Helper()
	in, err := db.GetInbound(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return in.State
}

// D1 (issue 14): an input is delivered exactly when the user message made
// from it is stored, in one commit. Before, the bridge marked it delivered
// first, and a crash before the append lost the message.
func TestAppendingTheUserMessageDeliversItsInput(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	th := newThread(t, db, "slack", "1700000000.000100")
	other := newThread(t, db, "slack", "1700000000.000900")
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	received, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "1.1", ThreadID: th.ID, Text: "a", Mode: storage.ModePrompt})
	queued, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "1.2", ThreadID: th.ID, Text: "b", Mode: storage.ModePrompt})
	if err := db.MarkInbound(ctx, queued, storage.InboundQueued, string(storage.QueueFollowUp)); err != nil {
		t.Fatal(err)
	}
	foreign, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "9.1", ThreadID: other.ID, Text: "x", Mode: storage.ModePrompt})

	// Stored, not yet appended: still pending, so a restart replays it.
	if got := inboundState(t, db, received); got != storage.InboundReceived {
		t.Fatalf("state before the append = %s, want received", got)
	}
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{userEntry(0, "a", received)}); err != nil {
		t.Fatal(err)
	}
	if got := inboundState(t, db, received); got != storage.InboundDelivered {
		t.Fatalf("state after the append = %s, want delivered", got)
	}

	// An append that fails stores nothing and delivers nothing.
	err = db.AppendEntries(ctx, s.ID, []transcript.Entry{userEntry(1, "b", queued), userEntry(0, "dup", queued)})
	if !errors.Is(err, storage.ErrDuplicateEntry) {
		t.Fatalf("append with a duplicate seq: err = %v, want ErrDuplicateEntry", err)
	}
	if got := inboundState(t, db, queued); got != storage.InboundQueued {
		t.Fatalf("state after a failed append = %s, want still queued", got)
	}
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{userEntry(1, "b", queued)}); err != nil {
		t.Fatal(err)
	}
	if got := inboundState(t, db, queued); got != storage.InboundDelivered {
		t.Fatalf("queued input after its append = %s, want delivered", got)
	}

	// Another thread's input is not this session's to deliver.
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{userEntry(2, "x", foreign)}); err != nil {
		t.Fatal(err)
	}
	if got := inboundState(t, db, foreign); got != storage.InboundReceived {
		t.Fatalf("other thread's input = %s, want untouched", got)
	}
	pending, err := db.PendingInbound(ctx, th.ID)
	if err != nil || len(pending) != 0 {
		t.Fatalf("pending input of the thread = %v, %v; want none", pending, err)
	}
}
