package bridge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// clockTimers is a clock whose timers fire as the test moves it on.
type clockTimers struct {
	now    time.Time
	timers []*clockTimer
}

type clockTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *clockTimer) Stop() bool { t.stopped = true; return true }

func (c *clockTimers) after(d time.Duration, f func()) stopper {
	t := &clockTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// advance moves the clock on by d and fires the timers due by then.
func (c *clockTimers) advance(d time.Duration) {
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			t.f()
		}
	}
}

func TestIntakeGate(t *testing.T) {
	t.Parallel()
	const hold, linger = time.Second, 5 * time.Millisecond
	c := &clockTimers{now: time.Unix(1000, 0)}
	g := newIntakeGate(hold, linger)
	g.now = func() time.Time { return c.now }
	g.after = c.after
	shut := func(what string, want bool) {
		t.Helper()
		if g.isOpen() == want {
			t.Errorf("%s: gate shut = %v, want %v", what, !want, want)
		}
	}

	// An open gate leaves no timer behind.
	noTimers := func(what string) {
		t.Helper()
		for _, tm := range c.timers {
			if !tm.stopped {
				t.Errorf("%s: a timer due at %v is still live", what, tm.at)
			}
		}
	}

	// A lone message: its thread starts as soon as it is stored.
	g.enter()
	shut("a lone message in flight", true)
	g.leave()
	shut("a lone message stored", false)
	noTimers("a lone message stored")

	// A burst: messages overlapping, then following closely.
	c.advance(time.Second)
	g.enter()
	g.enter()
	g.leave()
	shut("one of two overlapping messages stored", true)
	g.leave()
	shut("both stored, the burst may go on", true)
	c.advance(time.Millisecond)
	quiet := c.timers[len(c.timers)-1]
	g.enter() // within linger of the last: the quiet timer is stopped
	if !quiet.stopped {
		t.Error("a Receive within linger of the last left the quiet timer running")
	}
	g.leave()
	c.advance(linger - time.Millisecond)
	shut("linger after the burst's next-to-last message", true)
	c.advance(time.Millisecond)
	shut("linger after the burst's last message", false)
	noTimers("linger after the burst's last message")

	// Messages following each other within linger, never overlapping, are
	// a burst too.
	c.advance(time.Second)
	g.enter()
	g.leave()
	shut("the first message after a quiet second", false)
	c.advance(time.Millisecond)
	g.enter()
	g.leave()
	shut("a message 1 ms after the last", true)
	c.advance(linger)
	shut("linger after it", false)

	// However long the burst, a new thread waits maxHold at most.
	c.advance(time.Second)
	g.enter()
	g.enter()
	c.advance(hold)
	shut("maxHold after the gate shut, messages still in flight", false)
	g.leave()
	g.leave()
	shut("after maxHold", false)
	noTimers("after maxHold")

	// A timer of an earlier shut does not open a later one.
	c.advance(time.Second)
	g.enter()
	g.enter()
	stale := c.timers[len(c.timers)-1]
	g.leave()
	g.leave()
	c.advance(linger)
	shut("opened by its quiet timer", false)
	c.advance(time.Second)
	g.enter()
	g.enter()
	stale.f()
	shut("a stale hold timer fired", true)
	g.leave()
	g.leave()
	c.advance(linger)

	// wait returns once open, or when the owner is stopped.
	done := make(chan struct{})
	go func() { g.wait(make(chan struct{})); close(done) }()
	<-done
	c.advance(time.Second)
	g.enter()
	g.enter()
	stopped := make(chan struct{})
	close(stopped)
	g.wait(stopped) // returns: the owner is stopping
	g.leave()
	g.leave()
	c.advance(linger)
	noTimers("the end")
}

// A quiet timer that fired as a Receive began (its callback waiting for the
// lock enter holds, too late for enter to stop it) does not open the gate
// under that Receive: the burst is not over.
func TestIntakeGateQuietTimerRacingAReceive(t *testing.T) {
	t.Parallel()
	const hold, linger = time.Second, 5 * time.Millisecond
	c := &clockTimers{now: time.Unix(1000, 0)}
	g := newIntakeGate(hold, linger)
	g.now = func() time.Time { return c.now }
	g.after = c.after
	g.enter()
	g.enter()
	g.leave()
	g.leave()
	quiet := c.timers[len(c.timers)-1]
	if !quiet.at.Equal(c.now.Add(linger)) {
		t.Fatalf("the newest timer is due at %v, want the quiet timer (%v)", quiet.at, c.now.Add(linger))
	}
	g.enter()
	quiet.f() // fired before enter stopped it
	if g.isOpen() {
		t.Error("a quiet timer that fired as a Receive began opened the gate while it runs")
	}
	g.leave()
	c.advance(linger)
	if !g.isOpen() {
		t.Error("the gate is not opened linger after the Receive")
	}
}

// TestIntakeGateHoldsWhileTheReaderWaitsForACPU: a burst whose messages
// reach the handler 12 ms apart (the goroutine reading them waited out
// another's 10 ms time slice) is still one burst: new threads wait until it
// is over, with the gate's defaults (a linger shorter than the gap would
// take each message for a lone one).
func TestIntakeGateHoldsWhileTheReaderWaitsForACPU(t *testing.T) {
	t.Parallel()
	c := &clockTimers{now: time.Unix(1000, 0)}
	g := newIntakeGate(intakeMaxHold, intakeLinger)
	g.now = func() time.Time { return c.now }
	g.after = c.after
	g.enter()
	g.leave() // the burst's first message: nothing before it, its thread starts
	for i := range 15 {
		c.advance(12 * time.Millisecond)
		g.enter()
		c.advance(200 * time.Microsecond)
		g.leave()
		if g.isOpen() {
			t.Fatalf("message %d of a burst, 12 ms after the last: the gate is open, want shut until the burst is over", i+2)
		}
	}
	c.advance(intakeLinger)
	if !g.isOpen() {
		t.Errorf("the gate is shut %v after the burst's last message, want open", intakeLinger)
	}
}

// acceptStore counts the writes accepting input makes, and can hold a new
// thread's first message in AcceptInboundInThread.
type acceptStore struct {
	storage.Store
	ensures, accepts, firsts, gets atomic.Int32
	getsBeforeHeld                 atomic.Int32 // GetThread calls before the held message reached the store

	holdThread string
	arrived    chan struct{}
	release    chan struct{}

	failFirsts atomic.Int32 // AcceptInboundInThread calls to fail with ErrFull
}

func (s *acceptStore) EnsureThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit) (storage.Thread, bool, error) {
	s.ensures.Add(1)
	return s.Store.EnsureThread(ctx, key, init)
}

func (s *acceptStore) GetThread(ctx context.Context, key storage.ThreadKey) (storage.Thread, error) {
	s.gets.Add(1)
	return s.Store.GetThread(ctx, key)
}

func (s *acceptStore) AcceptInbound(ctx context.Context, in storage.Inbound) (int64, bool, error) {
	s.accepts.Add(1)
	return s.Store.AcceptInbound(ctx, in)
}

func (s *acceptStore) AcceptInboundInThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit, in storage.Inbound) (storage.Accepted, error) {
	s.firsts.Add(1)
	if s.failFirsts.Add(-1) >= 0 {
		return storage.Accepted{}, storage.ErrFull
	}
	if key.Thread == s.holdThread {
		s.getsBeforeHeld.Store(s.gets.Load())
		s.arrived <- struct{}{}
		<-s.release
	}
	return s.Store.AcceptInboundInThread(ctx, key, init, in)
}

func withAcceptStore(s *acceptStore) rigOption {
	return func(c *Config, _ *Platform) {
		s.Store = c.Store
		c.Store = s
	}
}

// A new thread's first message is stored with its thread in one write (one
// commit before the platform's acknowledgement), the next ones in theirs.
func TestNewThreadsFirstMessageIsOneWrite(t *testing.T) {
	t.Parallel()
	s := &acceptStore{}
	r := newRig(t, withAcceptStore(s))
	th := testThread("1.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	if e, a, f := s.ensures.Load(), s.accepts.Load(), s.firsts.Load(); e != 0 || a != 0 || f != 1 {
		t.Errorf("first message: %d EnsureThread, %d AcceptInbound, %d AcceptInboundInThread; want 0, 0, 1", e, a, f)
	}
	r.say(th, alice, "and again", false)
	r.waitRuns(th, 2)
	if a, f := s.accepts.Load(), s.firsts.Load(); a != 1 || f != 1 {
		t.Errorf("second message: %d AcceptInbound, %d AcceptInboundInThread in all; want 1, 1", a, f)
	}
}

// While other input is still being stored (a burst), a new thread's owner
// waits: its status post and session start come after, so that they do not
// take the CPU from the acknowledgements still to be sent.
func TestNewThreadStartsAfterTheInputInFlightIsStored(t *testing.T) {
	t.Parallel()
	s := &acceptStore{holdThread: "1.1", arrived: make(chan struct{}, 1), release: make(chan struct{})}
	r := newRig(t, withAcceptStore(s))
	r.b.intake = newIntakeGate(time.Minute, intakeLinger) // no maxHold in this test
	held, other := testThread("1.1"), testThread("2.1")
	first := r.sayLater(held, alice, "first", true)
	recv(r, "the held message in the store", s.arrived)
	if n := s.getsBeforeHeld.Load(); n != 0 {
		t.Errorf("a mention in a new thread looked its thread up %d times before storing it; want 0 (the write creates or finds it)", n)
	}
	r.say(other, alice, "second", true) // stored and accepted meanwhile
	wctx, cancel := context.WithTimeout(r.ctx, 300*time.Millisecond)
	defer cancel()
	if err := r.chat.WaitFor(wctx, func() bool { return len(r.chat.BotTexts(other)) > 0 }); err == nil {
		t.Errorf("the new thread posted while other input was still being stored: %q", r.chat.BotTexts(other))
	}
	close(s.release)
	if got := recv(r, "the held message's receipt", first); got.err != nil || got.rc != chat.Accepted {
		t.Fatalf("held message: %v, %v", got.rc, got.err)
	}
	r.waitRuns(other, 1)
	r.waitRuns(held, 1)
}

// A mention in an old thread this process has not seen (stored before a
// restart, or by another replica) goes into that thread, whose repository
// stays as it was: the mention's repository (here the default, app) is for
// a new thread, it does not move one. One naming a repository that does not
// resolve is still input of the old thread, not an error.
func TestMentionInAnOldThreadKeepsItsRepository(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# tools\n"}})
	r := newRig(t, func(c *Config, _ *Platform) {
		wsm, err := workspace.New(workspace.Config{
			DataDir:         filepath.Join(t.TempDir(), "workspaces"),
			Repos:           []workspace.Repo{{Name: "app", URL: remote.Path, DefaultBranch: "main"}, {Name: "tools", URL: remote.Path, DefaultBranch: "main"}},
			CleanupInterval: -1,
			Logger:          c.Logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wsm.Close(context.Background()) })
		c.Workspaces = wsm
	})
	// Two old threads: after its first message a thread is known here.
	for i, text := range []string{"more please", "and repo=nope too"} {
		th := testThread(fmt.Sprint(7+i, ".1"))
		old, _, err := r.db.EnsureThread(r.ctx, storeKey(th), storage.ThreadInit{Repo: "tools", Branch: r.cfg.Workspaces.BranchFor(wsKey(th))})
		if err != nil {
			t.Fatal(err)
		}
		r.say(th, alice, text, true)
		got, err := r.thread(th)
		if err != nil || got.ID != old.ID || got.Repo != "tools" {
			t.Errorf("after mention %q: thread %+v, %v; want thread %d on tools", text, got, err, old.ID)
		}
		ins, err := r.db.ThreadInbound(r.ctx, old.ID)
		if err != nil || len(ins) != 1 || ins[0].Text != text {
			t.Errorf("after mention %q: the old thread's input is %+v, %v; want it alone", text, ins, err)
		}
		r.waitRuns(th, 1)
		if s := r.chat.Transcript(th); strings.Contains(s, "unknown repository") {
			t.Errorf("a mention in an existing thread was refused for its repository:\n%s", s)
		}
		if w := r.chat.Whispers(); len(w) != 0 {
			t.Errorf("a mention in an existing thread was refused: %q", w)
		}
	}
}

// Receive shuts the intake gate while it runs and leaves it on every return:
// a lone mention's thread starts as its Receive ends (no maxHold nor linger
// in this test to open it otherwise), and a message ignored opens it again.
func TestReceiveLeavesTheIntakeGateOnEveryReturn(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.b.intake = newIntakeGate(time.Hour, time.Hour)
	th := testThread("1.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)

	open := func(g *intakeGate) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.isOpen() && g.inflight == 0
	}
	for _, m := range []struct {
		text    string
		mention bool
	}{{"not for the bot", false}, {"  ", true}} {
		g := newIntakeGate(time.Hour, time.Hour)
		r.b.intake = g
		if _, rc, err := r.chat.Say(r.ctx, testThread("2.1"), alice, m.text, m.mention); err != nil || rc != chat.Ignored {
			t.Fatalf("Say(%q): %v, %v; want ignored", m.text, rc, err)
		}
		if !open(g) {
			t.Errorf("after %q was ignored the intake gate is shut", m.text)
		}
	}
}

// A new thread's first message the store refuses (full) is not acknowledged
// and leaves nothing behind, not even in the bridge's recent deliveries: the
// platform's redelivery is taken as a first delivery.
func TestFirstMessageRefusedByTheStoreIsTakenWhenRedelivered(t *testing.T) {
	t.Parallel()
	s := &acceptStore{}
	s.failFirsts.Store(1)
	r := newRig(t, withAcceptStore(s))
	th := testThread("1.1")
	id, rc, err := r.chat.Say(r.ctx, th, alice, "hello", true)
	if !errors.Is(err, storage.ErrFull) || rc == chat.Accepted {
		t.Fatalf("first message with the store full: %v, %v; want ErrFull, not acknowledged", rc, err)
	}
	if _, err := r.thread(th); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the refused message's thread: %v; want none", err)
	}
	if rc, err := r.chat.Redeliver(r.ctx, id, true); err != nil || rc != chat.Accepted {
		t.Fatalf("redelivery: %v, %v; want accepted", rc, err)
	}
	r.waitRuns(th, 1)
}

// shutGate gives r's bridge an intake gate held shut by a Receive in flight
// until the end of the test, with no timer to open it.
func shutGate(t *testing.T, r *rig) *intakeGate {
	g := newIntakeGate(time.Hour, time.Hour)
	r.b.intake = g
	g.enter()
	t.Cleanup(func() {
		g.leave()
		g.mu.Lock()
		g.openLocked()
		g.mu.Unlock()
	})
	return g
}

// Shutdown does not wait for the intake gate: a new owner waiting at a shut
// gate (here a Receive that never ends, and no timer to open it) stops
// without starting a run; its input stays in the store for the next start.
func TestShutdownDoesNotWaitForTheIntakeGate(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	shutGate(t, r)
	// Several owners: each one's select would start its run half the time.
	var threads []chat.ThreadRef
	for i := range 8 {
		th := testThread(fmt.Sprint(i+1, ".1"))
		r.say(th, alice, "hello", true)
		threads = append(threads, th)
	}
	done := make(chan error, 1)
	go func() { done <- r.stop(5 * time.Second) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Shutdown waited for the intake gate")
	}
	for _, th := range threads {
		if len(r.chat.BotTexts(th)) != 0 {
			t.Errorf("held thread %s started: %q", th.Thread, r.chat.BotTexts(th))
		}
	}
}

// Only a new owner waits at the intake gate: input for a thread whose owner
// runs goes to it at once, however long the gate stays shut (here a Receive
// that never ends, and no timer to open it).
func TestIntakeGateDoesNotHoldARunningOwner(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	th := testThread("1.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	g := shutGate(t, r)
	r.say(th, alice, "and again", false)
	r.waitRuns(th, 2)
	if g.isOpen() {
		t.Fatal("the gate opened: the test shows nothing")
	}
}
