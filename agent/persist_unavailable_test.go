package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

var errStoreDown = errors.New("store down")

func withStoreUnavailable(c *agent.Config) {
	c.StoreUnavailable = func(err error) bool { return errors.Is(err, errStoreDown) }
}

// An append the store was unavailable for is repeated, pausing 250 ms and
// doubling, until the store takes it: nothing is lost and nothing reported.
func TestPersistWaitsForAnUnavailableStore(t *testing.T) {
	h := newHarness(t, withStoreUnavailable)
	h.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	h.store.mu.Lock()
	h.store.fail = errStoreDown
	h.store.mu.Unlock()
	pauses := 0
	h.sleep = func(ctx context.Context, d time.Duration) error {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		if pauses++; pauses == 2 { // the store comes back in the second pause
			h.store.fail = nil
		}
		return nil
	}
	h.prompt("hello")
	if n := count[agent.PersistFailed](h.recorded()); n != 0 {
		t.Errorf("%d persist failures reported for a store that came back", n)
	}
	if got := len(h.store.all()); got != 2 {
		t.Errorf("stored %d entries, want 2 (prompt and reply)", got)
	}
	if got := h.sleepsSeen(); len(got) < 2 || got[0] != 250*time.Millisecond || got[1] != 500*time.Millisecond {
		t.Errorf("pauses %v, want 250ms then 500ms", got)
	}
}

// A store that stays unavailable is given up on after about 20 s of pauses
// an append, and each failure is reported; an error that does not say unavailable is
// not waited for at all.
func TestPersistGivesUpOnAStoreThatStaysDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		wait bool
	}{{"unavailable", errStoreDown, true}, {"other error", errors.New("disk full"), false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withStoreUnavailable)
			h.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
			h.store.mu.Lock()
			h.store.fail = tc.err
			h.store.mu.Unlock()
			h.sleep = func(context.Context, time.Duration) error { return nil }
			h.prompt("hello")
			failed := count[agent.PersistFailed](h.recorded())
			if failed == 0 {
				t.Fatal("no persist failure reported")
			}
			var waited time.Duration
			for _, d := range h.sleepsSeen() {
				waited += d
			}
			if per := waited / time.Duration(failed); tc.wait && (per < 20*time.Second || per > 30*time.Second) {
				t.Errorf("waited %v an append before giving up, want 20–30 s", per)
			}
			if !tc.wait && waited != 0 {
				t.Errorf("waited %v for an error that is not unavailability", waited)
			}
		})
	}
}
