package bridge

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/outbox"
)

// The lease keeper that finds a thread's lease lost tells the owner through
// its inbox; the thread's posts are refused at once, while the owner is busy
// and has not heard yet, and the owner ends the thread when it does.
func TestLeaseLostWhileTheOwnerIsBusyRefusesPostsAtOnce(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"))
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("first answer") })
	th := testThread("520.1")
	a.say(th, alice, "hello", true)
	a.waitRuns(th, 1)
	owner := a.owner(th)
	busy, held := make(chan struct{}), make(chan struct{})
	owner.post(ownerFunc(func() { close(held); <-busy }))
	recv(a, "the owner to be busy", held)
	release := sync.OnceFunc(func() { close(busy) })
	defer release()
	a.lapse(*owner.lease.Load(), "replica-b")
	a.waitUntil("the keeper finds the lease lost", func() bool { return owner.postGuard.lost() })
	sent := make(chan error, 1)
	owner.p.Outbox.Post(th, "STALE-POST of a busy owner", outbox.High, func(_ string, err error) { sent <- err })
	if err := recv(a, "the post's outcome", sent); !errors.Is(err, outbox.ErrWithdrawn) {
		t.Errorf("a post after the lease was lost, before the owner heard: %v, want %v", err, outbox.ErrWithdrawn)
	}
	if !a.live(th) {
		t.Fatal("the owner ended the thread while it was busy: the refusal did not wait for it")
	}
	release()
	a.waitUntil("the owner lets the thread go", func() bool { return !a.live(th) })
	a.flush()
	if tr := a.chat.Transcript(th); strings.Contains(tr, "STALE-POST") {
		t.Errorf("the owner that lost the thread posted:\n%s", tr)
	}
}

// The lease keeper renews the leases of idle threads without waking their
// owners: an idle thread is evicted (and its lease given up) after
// IdleEvict, however often its lease is renewed meanwhile.
func TestIdleThreadIsEvictedWhileItsLeaseIsRenewed(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"), func(c *Config, _ *Platform) {
		c.Lease.Renew = testTTL / 10
		c.IdleEvict = 5 * c.Lease.Renew
	})
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("done") })
	th := testThread("521.1")
	a.say(th, alice, "a request", true)
	a.waitRuns(th, 1)
	rec, _ := a.thread(th)
	owner := a.owner(th)
	first := owner.lease.Load()
	a.waitUntil("the lease is renewed", func() bool {
		l := owner.lease.Load()
		return l == nil || l.Expires.After(first.Expires)
	})
	a.waitUntil("the idle thread is evicted", func() bool { return !a.live(th) })
	if l, ok, err := a.db.AcquireLease(a.ctx, rec.ID, "replica-b", time.Hour); err != nil || !ok {
		t.Errorf("another replica could not take the evicted thread: %+v, %v, %v", l, ok, err)
	}
}

// News of input that comes after the owner looked at the store has it look
// again: the input it tells of may have been stored after that look.
func TestNewsOfInputAfterTheOwnersLookQueuesAnother(t *testing.T) {
	t.Parallel()
	var store *pendingCounter
	a := newRig(t, func(c *Config, p *Platform) {
		leased("replica-a")(c, p)
		c.Lease.Poll = time.Hour // only the news below nudges the owner
		store = &pendingCounter{Store: c.Store}
		c.Store = store
	})
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("522.1")
	a.say(th, alice, "hello", true)
	a.waitRuns(th, 1)
	rec, _ := a.thread(th)
	owner := a.owner(th)
	looked := func() {
		done := make(chan struct{})
		owner.post(ownerFunc(func() { close(done) }))
		recv(a, "the owner to take the news", done)
	}
	looked()
	before := store.calls.Load()
	a.b.nudge(rec.ID)
	looked()
	a.b.nudge(rec.ID)
	looked()
	if n := store.calls.Load() - before; n != 2 {
		t.Errorf("two pieces of news, one after the other's look, made %d PendingInbound queries, want 2", n)
	}
}
