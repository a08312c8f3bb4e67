package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

func newThread(t testing.TB, db *sqlite.DB, platform, thread string) storage.Thread {
	t.Helper()
	th, _, err := db.EnsureThread(context.Background(), storage.ThreadKey{Platform: platform, Team: "T1", Channel: "C1", Thread: thread}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func accept(t testing.TB, db *sqlite.DB, in storage.Inbound) (int64, bool) {
	t.Helper()
	id, dup, err := db.AcceptInbound(context.Background(), in)
	if err != nil {
		t.Fatalf("AcceptInbound(%s/%s): %v", in.EventID, in.MessageID, err)
	}
	return id, dup
}

func TestAcceptInboundStoresEverything(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	db := openDB(t, sqlite.WithClock(clock.now))
	th := newThread(t, db, "slack", "1700000000.000100")
	in := storage.Inbound{Platform: "slack", EventID: "Ev1", Channel: "C1", MessageID: "1700000000.000200", ThreadID: th.ID,
		AuthorID: "U1", AuthorName: "Alice", AuthorEmail: "alice@example.com", Text: "fix the build",
		Attachments: json.RawMessage(`[{"name":"log.txt","size":12}]`), Mode: storage.ModePrompt}
	id, dup := accept(t, db, in)
	if dup || id == 0 {
		t.Fatalf("AcceptInbound = id %d, duplicate %v; want a new id", id, dup)
	}
	got, err := db.GetInbound(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.ID, want.State, want.ReceivedAt, want.UpdatedAt = id, storage.InboundReceived, clock.t, clock.t
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetInbound =\n %+v\nwant\n %+v", got, want)
	}
	if th, _ := db.ThreadByID(ctx, th.ID); th.LastSeenMessage != in.MessageID {
		t.Errorf("thread's LastSeenMessage = %q, want the accepted message %q", th.LastSeenMessage, in.MessageID)
	}
}

func TestAcceptInboundDeduplicates(t *testing.T) {
	db := openDB(t)
	th := newThread(t, db, "slack", "1.0")
	base := storage.Inbound{Platform: "slack", Channel: "C1", ThreadID: th.ID, Text: "hi", Mode: storage.ModePrompt}
	with := func(eventID, channel, msgID string) storage.Inbound {
		in := base
		in.EventID, in.Channel, in.MessageID = eventID, channel, msgID
		return in
	}
	first, _ := accept(t, db, with("EvMention", "C1", "1.5"))
	for _, tc := range []struct {
		name   string
		in     storage.Inbound
		dup    bool
		wantID int64 // when dup
	}{
		{"redelivery, same event id", with("EvMention", "C1", "1.5"), true, first},
		{"app_mention and message: other event id, same ts", with("EvMessage", "C1", "1.5"), true, first},
		{"same event id, ts missing", with("EvMention", "C1", ""), true, first},
		{"same ts in another channel", with("EvOther", "C2", "1.5"), false, 0},
		{"new message", with("EvNew", "C1", "1.6"), false, 0},
		{"same ids on another platform", storage.Inbound{Platform: "discord", EventID: "EvMention", Channel: "C1", MessageID: "1.5",
			ThreadID: th.ID, Mode: storage.ModePrompt}, false, 0},
	} {
		id, dup := accept(t, db, tc.in)
		if dup != tc.dup {
			t.Errorf("%s: duplicate = %v, want %v", tc.name, dup, tc.dup)
		}
		if tc.dup && id != tc.wantID {
			t.Errorf("%s: id = %d, want the first copy's %d", tc.name, id, tc.wantID)
		}
	}
	pending, err := db.PendingInbound(context.Background(), th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 4 {
		t.Errorf("stored %d inbound rows, want 4 (duplicates not stored)", len(pending))
	}
}

func TestAcceptInboundRejectsBadInput(t *testing.T) {
	db := openDB(t)
	th := newThread(t, db, "slack", "1.0")
	for name, in := range map[string]storage.Inbound{
		"no platform":    {Channel: "C", ThreadID: th.ID, Mode: storage.ModePrompt},
		"bad mode":       {Platform: "slack", Channel: "C", ThreadID: th.ID, Mode: "shout"},
		"bad json":       {Platform: "slack", Channel: "C", ThreadID: th.ID, Mode: storage.ModePrompt, Attachments: json.RawMessage("{")},
		"unknown thread": {Platform: "slack", Channel: "C", ThreadID: 4242, Mode: storage.ModePrompt},
	} {
		if _, _, err := db.AcceptInbound(context.Background(), in); err == nil {
			t.Errorf("%s: AcceptInbound succeeded, want an error", name)
		}
	}
}

func TestInboundStateMachine(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	th := newThread(t, db, "slack", "1.0")
	n := 0
	fresh := func() int64 {
		n++
		id, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "2." + strings.Repeat("0", n), ThreadID: th.ID, Mode: storage.ModePrompt})
		return id
	}
	type step struct {
		state  storage.InboundState
		detail string
		ok     bool
	}
	for name, steps := range map[string][]step{
		"queued followUp then delivered": {{storage.InboundQueued, "followUp", true}, {storage.InboundDelivered, "", true}},
		"steer then moved to followUp":   {{storage.InboundQueued, "steer", true}, {storage.InboundQueued, "followUp", true}, {storage.InboundDropped, "stopped", true}},
		"delivered directly":             {{storage.InboundDelivered, "", true}},
		"dropped directly":               {{storage.InboundDropped, "session reset", true}},
		"delivered is final":             {{storage.InboundDelivered, "", true}, {storage.InboundDropped, "late", false}, {storage.InboundQueued, "steer", false}},
		"dropped is final":               {{storage.InboundDropped, "x", true}, {storage.InboundDelivered, "", false}},
		"no way back to received":        {{storage.InboundReceived, "", false}},
		"queued needs a queue":           {{storage.InboundQueued, "later", false}},
		"dropped needs a reason":         {{storage.InboundDropped, "", false}},
	} {
		id := fresh()
		for i, s := range steps {
			err := db.MarkInbound(ctx, id, s.state, s.detail)
			if s.ok && err != nil {
				t.Errorf("%s: step %d MarkInbound(%s, %q) = %v, want ok", name, i, s.state, s.detail, err)
			}
			if !s.ok && err == nil {
				t.Errorf("%s: step %d MarkInbound(%s, %q) succeeded, want an error", name, i, s.state, s.detail)
			}
		}
	}
	// The refusal of a finished message says so in a testable way.
	id := fresh()
	if err := db.MarkInbound(ctx, id, storage.InboundDelivered, ""); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkInbound(ctx, id, storage.InboundDropped, "x"); !errors.Is(err, storage.ErrInvalidTransition) {
		t.Errorf("drop after delivery = %v, want ErrInvalidTransition", err)
	}
	if err := db.MarkInbound(ctx, 99999, storage.InboundDelivered, ""); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("MarkInbound(unknown) = %v, want ErrNotFound", err)
	}

	// What the row keeps: the queue it waited in and the drop reason.
	id = fresh()
	db.MarkInbound(ctx, id, storage.InboundQueued, "steer")
	db.MarkInbound(ctx, id, storage.InboundDropped, "run stopped")
	got, _ := db.GetInbound(ctx, id)
	if got.State != storage.InboundDropped || got.Queue != storage.QueueSteer || got.Reason != "run stopped" {
		t.Errorf("after queue+drop: state %s queue %q reason %q, want dropped, steer, \"run stopped\"", got.State, got.Queue, got.Reason)
	}
}

func TestPendingInbound(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	a := newThread(t, db, "slack", "1.0")
	b := newThread(t, db, "slack", "2.0")
	var ids []int64
	for i, th := range []storage.Thread{a, b, a, a, b} {
		id, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "3." + strings.Repeat("1", i+1), ThreadID: th.ID,
			Text: string(rune('a' + i)), Mode: storage.ModePrompt})
		ids = append(ids, id)
	}
	mark := func(id int64, s storage.InboundState, d string) {
		if err := db.MarkInbound(ctx, id, s, d); err != nil {
			t.Fatal(err)
		}
	}
	mark(ids[0], storage.InboundDelivered, "")
	mark(ids[2], storage.InboundQueued, "followUp")
	mark(ids[3], storage.InboundQueued, "steer")
	mark(ids[4], storage.InboundDropped, "thread closed")

	idsOf := func(ins []storage.Inbound) []int64 {
		var out []int64
		for _, in := range ins {
			out = append(out, in.ID)
		}
		return out
	}
	pa, err := db.PendingInbound(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := idsOf(pa), []int64{ids[2], ids[3]}; !reflect.DeepEqual(got, want) {
		t.Errorf("PendingInbound(a) = %v, want %v (queued, in arrival order)", got, want)
	}
	if pa[0].Queue != storage.QueueFollowUp || pa[1].Queue != storage.QueueSteer {
		t.Errorf("pending queues = %s, %s; want followUp, steer", pa[0].Queue, pa[1].Queue)
	}
	all, err := db.AllPendingInbound(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := idsOf(all), []int64{ids[1], ids[2], ids[3]}; !reflect.DeepEqual(got, want) {
		t.Errorf("AllPendingInbound = %v, want %v", got, want)
	}
}

// A full disk must make AcceptInbound fail, so the adapter does not acknowledge
// and the platform redelivers. max_page_count caps the file like a full disk.
func TestAcceptInboundFailsWhenFull(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db := openAt(t, path)
	th := newThread(t, db, "slack", "1.0")
	db.Close()

	var pages int
	if err := rawDB(t, path).QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, sqlite.WithExtraPragmas("max_page_count("+strconv.Itoa(pages)+")"))
	big := strings.Repeat("a long message that needs new pages ", 2000)
	_, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: "EvFull", Channel: "C1", MessageID: "1.1",
		ThreadID: th.ID, Text: big, Mode: storage.ModePrompt})
	if !errors.Is(err, storage.ErrFull) {
		t.Fatalf("AcceptInbound on a full database = %v, want ErrFull", err)
	}
	if strings.Contains(err.Error(), "a long message") {
		t.Errorf("error %q carries the message text", err)
	}
	db.Close()

	// Nothing half-stored: once there is room, the redelivery is new input.
	db = openAt(t, path)
	id, dup := accept(t, db, storage.Inbound{Platform: "slack", EventID: "EvFull", Channel: "C1", MessageID: "1.1",
		ThreadID: th.ID, Text: big, Mode: storage.ModePrompt})
	if dup || id == 0 {
		t.Errorf("redelivery after the failure = id %d duplicate %v, want stored as new", id, dup)
	}
}
