package storage_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
)

func TestPendingInboundCountsIsTheQueueDepth(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	th := newThread(t, db, "slack", "1.1")
	var ids []int64
	for i := range 4 {
		id, _ := accept(t, db, storage.Inbound{Platform: "slack", EventID: "Ev" + strconv.Itoa(i), Channel: "C1",
			MessageID: "1." + strconv.Itoa(i+2), ThreadID: th.ID, AuthorID: "U1", Text: "hi", Mode: storage.ModePrompt})
		ids = append(ids, id)
	}
	for _, m := range []struct {
		id     int64
		state  storage.InboundState
		detail string
	}{{ids[0], storage.InboundDelivered, ""}, {ids[1], storage.InboundQueued, string(storage.QueueFollowUp)}, {ids[2], storage.InboundDropped, "too many"}} {
		if err := db.MarkInbound(ctx, m.id, m.state, m.detail); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.PendingInboundCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"received": 1, "queued": 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PendingInboundCounts = %v, want %v", got, want)
	}
	db.Close()
	if err := db.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed database succeeded")
	}
}
