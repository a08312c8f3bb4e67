// Package clock is a manual clock for tests: it reads the same time until a
// test advances it, so rate windows, idle timeouts and deadlines can be crossed
// without sleeping. It is safe for concurrent use.
package clock

import (
	"sync"
	"time"
)

// Manual is a clock that moves only when told.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []timer
}

// timer is a channel After handed out, and when it receives.
type timer struct {
	at time.Time
	ch chan time.Time
}

// NewManual returns a clock that reads start until advanced.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d; the channels of After that are
// due receive the new time.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now // buffered: never blocks
	}
	c.timers = kept
}

// After returns a channel that receives the clock's time once Advance has
// moved it d past now (at once for d <= 0).
func (c *Manual) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, timer{at: c.now.Add(d), ch: ch})
	return ch
}

// Waiting reports how many channels of After have not received yet.
func (c *Manual) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
