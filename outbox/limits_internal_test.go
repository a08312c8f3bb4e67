package outbox

import (
	"testing"
	"time"
)

// greedy takes a token from b whenever priority p may, for d, and returns when.
func greedy(b *bucket, p Priority, start time.Time, d time.Duration) []time.Time {
	var out []time.Time
	for now := start; now.Before(start.Add(d)); {
		at := b.readyAt(p)
		if at.After(now) {
			now = at
			continue
		}
		b.take(now)
		out = append(out, now)
	}
	return out
}

func maxInWindow(ts []time.Time, w time.Duration) int {
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func TestPerWindowNeverExceedsItsWindow(t *testing.T) {
	cases := []struct {
		n      int
		window time.Duration
		burst  int
	}{
		{50, time.Minute, 5},
		{50, time.Minute, 1},
		{5, 5 * time.Second, 2},
		{5, 5 * time.Second, 3},
		{50, time.Second, 10},
		{7, 3 * time.Second, 7},
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range cases {
		r := PerWindow(c.n, c.window, c.burst)
		b := newBucket(r)
		ts := greedy(&b, High, t0, 20*c.window)
		if got := maxInWindow(ts, c.window); got != c.n {
			t.Errorf("PerWindow(%d, %v, %d) = %+v: a greedy sender got %d calls into one window, want exactly %d",
				c.n, c.window, c.burst, r, got, c.n)
		}
		if got := maxInWindow(ts, time.Nanosecond); got != 1 && c.burst == 1 {
			t.Errorf("burst 1: got %d calls at one instant", got)
		}
	}
}

func TestLowLeavesTheReserve(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		r        Rate
		lowBurst int // calls Low gets from a full bucket at one instant
	}{
		{Rate{Every: time.Second, Burst: 5}, 4},
		{Rate{Every: time.Second, Burst: 10}, 8},
		{Rate{Every: time.Second, Burst: 2}, 1},
		{Rate{Every: time.Second, Burst: 1}, 1}, // nothing to reserve
	}
	for _, c := range cases {
		b := newBucket(c.r)
		n := 0
		for !b.readyAt(Low).After(t0) {
			b.take(t0)
			n++
		}
		if n != c.lowBurst {
			t.Errorf("%+v: Low took %d tokens at once, want %d", c.r, n, c.lowBurst)
		}
		if c.r.Burst > 1 && b.readyAt(High).After(t0) {
			t.Errorf("%+v: High must still find a token after Low drained the bucket", c.r)
		}
		// Over time Low keeps the bucket's full rate: the reserve costs no throughput.
		b = newBucket(c.r)
		ts := greedy(&b, Low, t0, 100*c.r.Every)
		if got, want := len(ts), 100+c.lowBurst; got < want-1 || got > want {
			t.Errorf("%+v: Low sent %d in 100 refills, want about %d", c.r, got, want)
		}
	}
}

func TestPauseHoldsEveryPriority(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newBucket(Rate{Every: time.Second, Burst: 5})
	b.pause(t0.Add(7 * time.Second))
	if got := b.readyAt(High); !got.Equal(t0.Add(7 * time.Second)) {
		t.Errorf("High ready at %v, want at the end of the pause %v", got, t0.Add(7*time.Second))
	}
	b.pause(t0.Add(time.Second)) // an earlier Retry-After does not shorten it
	if got := b.readyAt(Low); !got.Equal(t0.Add(7 * time.Second)) {
		t.Errorf("Low ready at %v, want %v", got, t0.Add(7*time.Second))
	}
}

func TestPerSecond(t *testing.T) {
	if got, want := PerSecond(0.5, 3), (Rate{Every: 2 * time.Second, Burst: 3}); got != want {
		t.Errorf("PerSecond(0.5, 3): got %+v, want %+v", got, want)
	}
	if got := PerSecond(0, 3); got.limited() {
		t.Errorf("PerSecond(0, 3): got %+v, want unlimited", got)
	}
}
