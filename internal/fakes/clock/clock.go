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
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a clock that reads start until advanced.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
