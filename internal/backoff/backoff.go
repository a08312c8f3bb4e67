// Package backoff is the reconnect schedule every platform connection uses:
// from a second, doubling to two minutes, each wait jittered to between half
// and all of its step, so that many bots (or threads) cut off together do not
// come back together.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// The schedule's bounds.
const (
	Min = time.Second
	Max = 2 * time.Minute
)

// Backoff is one connection's schedule. The zero value starts at Min.
type Backoff struct {
	step time.Duration
}

// Next returns the wait before the next attempt and doubles the step.
func (b *Backoff) Next() time.Duration {
	if b.step < Min {
		b.step = Min
	}
	wait := b.step/2 + rand.N(b.step/2+1)
	b.step = min(2*b.step, Max)
	return wait
}

// Reset starts the schedule again from Min (a connection that held a while
// and then broke is a new outage).
func (b *Backoff) Reset() { b.step = Min }

// Sleep waits d or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
