package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// clockRenewals is the store as a replica sees it: RenewLease counted, and
// failing as an unreachable store does (it cannot say) once cut is set.
type clockRenewals struct {
	storage.Store
	calls atomic.Int32
	cut   atomic.Bool
}

func (s *clockRenewals) RenewLease(ctx context.Context, l storage.Lease, ttl time.Duration) (storage.Lease, error) {
	s.calls.Add(1)
	if s.cut.Load() {
		return storage.Lease{}, errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
	}
	return s.Store.RenewLease(ctx, l, ttl)
}

// A replica whose clock is five minutes behind the store's holds a thread no
// longer than its TTL once it cannot renew: the lease runs out by its own
// clock, counted from when it last asked, not by the store's expiry read on
// a clock five minutes slow. It stops the thread and posts nothing more.
func TestReplicaClockBehindDoesNotKeepALapsedLease(t *testing.T) {
	t.Parallel()
	var store *clockRenewals
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Now = func() time.Time { return time.Now().Add(-5 * time.Minute) }
		store = &clockRenewals{Store: c.Store}
		c.Store = store
	})
	g := newGate(t)
	a.llm.Handle(g.holdFirst(llmfake.TextReply("STALE-ANSWER after the lease ran out")))
	th := testThread("540.1")
	a.say(th, alice, "long job", true)
	a.waitArrived(g)
	store.cut.Store(true)
	cut := time.Now()
	a.waitUntil("the replica lets the thread go", func() bool { return !a.live(th) })
	if took := time.Since(cut); took > testTTL+2*time.Second {
		t.Errorf("the replica held the thread %s after it last could renew, want within its TTL (%s)", took.Round(time.Millisecond), testTTL)
	}
	g.release()
	a.flush()
	if strings.Contains(a.chat.Transcript(th), "STALE-ANSWER") {
		t.Errorf("the replica posted after its lease ran out:\n%s", a.chat.Transcript(th))
	}
}

// A replica whose clock is five minutes ahead of the store's does not find
// every lease it renews already run out: a streamed answer of hundreds of
// posts and edits asks the store nothing beyond the keeper's renewals.
func TestReplicaClockAheadDoesNotAskTheStoreOnEveryPost(t *testing.T) {
	t.Parallel()
	var store *clockRenewals
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.TTL, c.Lease.Renew = 2*time.Minute, 0 // the keeper does not renew within the test
		c.Now = func() time.Time { return time.Now().Add(5 * time.Minute) }
		store = &clockRenewals{Store: c.Store}
		c.Store = store
	})
	chunks := make([]string, 200)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("word%d ", i)
	}
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply(chunks...) })
	th := testThread("541.1")
	a.say(th, alice, "write a long answer", true)
	a.waitRuns(th, 1)
	a.waitText(th, "word199")
	if c := store.calls.Load(); c != 0 {
		t.Errorf("RenewLease was asked %d times for one streamed answer within the lease; want none", c)
	}
	if !a.live(th) {
		t.Error("the replica let its thread go")
	}
}
