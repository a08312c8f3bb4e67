package bridge

import (
	"sync"
	"time"
)

// intakeGate holds back new thread owners while a burst of input is being
// accepted (200 mentions at once): the burst's acknowledgements would
// otherwise wait for the CPU behind the session starts the burst itself set
// off (status posts, leases, checkouts), and each waits on the platform's
// side. The gate shuts while a Receive is in flight. A lone message (no
// Receive in flight or just ended) opens it again as its Receive ends, so
// its thread starts at once; in a burst (Receives overlapping or following
// each other within linger) it opens once no Receive has run for linger:
// the next message of a burst is usually still being read when the previous
// one is stored. A new owner waits at most maxHold, so that a steady stream
// of input cannot starve new threads.
//
// Only new owners wait: input for a thread that has an owner goes to it at
// once. The input is durable before the gate is asked (accept stores it,
// then dispatches), so a wait changes when its thread starts, nothing else.
type intakeGate struct {
	maxHold, linger time.Duration
	now             func() time.Time
	after           func(time.Duration, func()) stopper

	mu       sync.Mutex
	inflight int           // Receive calls in flight
	last     time.Time     // when a Receive last started or ended
	burst    bool          // Receives overlapped or followed closely since the gate shut
	opened   chan struct{} // closed while the gate is open
	hold     stopper       // opens the gate maxHold after it shut
	quiet    stopper       // opens the gate linger after the last Receive of a burst
}

// stopper is a timer as the gate uses it.
type stopper interface{ Stop() bool }

// The intake gate's defaults: a new thread waits a quarter second at most.
// A burst's messages are read a fraction of a millisecond apart, but the one
// goroutine that reads and decodes them (slack-go's) can wait for a CPU
// longer than that: the Go scheduler lets a busy goroutine run 10 ms before
// it preempts it, and on shared cores the process itself waits its turn. The
// linger outlasts two such time slices, so that a burst read by a goroutine
// that waited for a CPU is still one burst (the figures are in
// BENCHMARKS.md, "Slack ack").
const (
	intakeMaxHold = 250 * time.Millisecond
	intakeLinger  = 25 * time.Millisecond
)

func newIntakeGate(maxHold, linger time.Duration) *intakeGate {
	g := &intakeGate{
		maxHold: maxHold, linger: linger, now: time.Now,
		after:  func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) },
		opened: make(chan struct{}),
	}
	close(g.opened)
	return g
}

// enter counts a Receive in flight; leave ends it.
func (g *intakeGate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.inflight++
	stop(&g.quiet)
	if g.isOpen() {
		g.burst = !g.last.IsZero() && now.Sub(g.last) < g.linger
		g.opened = make(chan struct{})
		g.arm(&g.hold, g.maxHold)
	} else {
		g.burst = true // overlapping, or within the linger of the last
	}
	g.last = now
}

func (g *intakeGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	g.last = g.now()
	if g.inflight > 0 || g.isOpen() {
		return
	}
	if !g.burst {
		g.openLocked()
		return
	}
	g.arm(&g.quiet, g.linger)
}

// arm sets *slot to a timer that opens the gate after d if it is still
// *slot then. One stopped too late (it fired as enter, leave or an opening
// took the lock, and waits for it) finds *slot cleared or re-armed and
// leaves the gate as it is: a stale quiet timer would open the gate under a
// Receive that has just begun, a stale hold timer a later shut's gate.
func (g *intakeGate) arm(slot *stopper, d time.Duration) {
	var t stopper
	t = g.after(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if *slot == t {
			g.openLocked()
		}
	})
	*slot = t
}

func (g *intakeGate) openLocked() {
	if g.isOpen() {
		return
	}
	close(g.opened)
	stop(&g.hold)
	stop(&g.quiet)
}

func stop(t *stopper) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

func (g *intakeGate) isOpen() bool {
	select {
	case <-g.opened:
		return true
	default:
		return false
	}
}

// wait returns when the gate is open or stop is closed.
func (g *intakeGate) wait(stop <-chan struct{}) {
	g.mu.Lock()
	ch := g.opened
	g.mu.Unlock()
	select {
	case <-ch:
	case <-stop:
	}
}
