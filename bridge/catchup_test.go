package bridge

import (
	"slices"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// A reconnect catches up on the threads someone wrote in within the window,
// not on the dormant ones, and a thread the platform no longer has is closed
// for good (until someone writes in it).
func TestActiveThreadsAreTheRecentOnesAndGoneOnesClose(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	h := r.b.Handler("test")

	// Dormant: a session two days old, written through a second handle on
	// the same file whose clock says so.
	then := time.Now().Add(-48 * time.Hour)
	old, err := sqlite.Open(r.ctx, r.db.Path(), sqlite.WithClock(func() time.Time { return then }))
	if err != nil {
		t.Fatal(err)
	}
	th, _, err := old.EnsureThread(r.ctx, storeKey(testThread("1.1")), storage.ThreadInit{Repo: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.CreateSession(r.ctx, th.ID, storage.SessionInit{Model: mainModel}); err != nil {
		t.Fatal(err)
	}
	old.Close()

	recent := testThread("2.1")
	r.say(recent, alice, "hello", true)
	r.waitRuns(recent, 1)

	refs := func() []chat.ThreadRef {
		cs, err := h.ActiveThreads(r.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []chat.ThreadRef
		for _, c := range cs {
			out = append(out, c.Thread)
		}
		return out
	}
	if got := refs(); !slices.Equal(got, []chat.ThreadRef{recent}) {
		t.Errorf("ActiveThreads = %v, want only %v (1.1 is dormant)", got, recent)
	}

	closer := h.(chat.ThreadCloser)
	if err := closer.CloseThread(r.ctx, recent); err != nil {
		t.Fatal(err)
	}
	if got := refs(); len(got) != 0 {
		t.Errorf("ActiveThreads after closing = %v, want none", got)
	}
	// Without a mention, a closed thread's message is not input any more…
	if rc, err := h.Receive(r.ctx, chat.Inbound{Thread: recent, EventID: "e-closed", MessageID: "2.5", Author: alice, Text: "anyone?"}); err != nil || rc != chat.Ignored {
		t.Errorf("Receive in a closed thread = %v, %v; want ignored", rc, err)
	}
	// …and a mention opens it again.
	r.say(recent, alice, "back again", true)
	if got := refs(); !slices.Equal(got, []chat.ThreadRef{recent}) {
		t.Errorf("ActiveThreads after a new mention = %v, want %v", got, recent)
	}
}
