package schedule

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// Store is what the runner needs of storage: leases on firings.
type Store interface {
	ClaimFiring(ctx context.Context, schedule string, at time.Time, owner string, ttl time.Duration) (bool, error)
	FinishFiring(ctx context.Context, schedule string, at time.Time) error
	LastFiring(ctx context.Context, schedule string) (time.Time, error)
}

// Clock is the runner's time: Now, and a channel that receives once d has
// passed. Nil is the real clock.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config configures Run.
type Config struct {
	Schedules []*Schedule
	Store     Store
	// Owner names this runner in the firings' leases (the replica's lease
	// owner). Required.
	Owner string
	// Fire opens the firing's request (the bridge's Open). It must be
	// idempotent for one schedule and time: a firing whose runner died
	// after Fire and before the firing was recorded done is fired again.
	// An error leaves the firing to be tried again.
	Fire func(ctx context.Context, s *Schedule, at time.Time) error
	// LeaseTTL is how long a claimed firing is the runner's; Fire gets
	// half of it. Default 5m.
	LeaseTTL time.Duration
	// Retry is how often a firing not done (failed, or leased to another
	// runner) is tried again. Default 1m.
	Retry  time.Duration
	Clock  Clock
	Logger *slog.Logger
}

// Run fires the schedules until ctx ends.
func Run(ctx context.Context, cfg Config) {
	if len(cfg.Schedules) == 0 {
		return
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 5 * time.Minute
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &runner{cfg: cfg, log: cfg.Logger.With("component", "schedule"), from: map[string]time.Time{}, done: map[string]time.Time{}}
	r.run(ctx)
}

type runner struct {
	cfg Config
	log *slog.Logger
	// from is each schedule's earliest firing this runner may fire: the
	// start, for a schedule that never fired (a schedule just added has
	// missed nothing); none for the others.
	from map[string]time.Time
	// done is each schedule's latest firing this runner knows is done.
	done map[string]time.Time
}

func (r *runner) run(ctx context.Context) {
	start := r.cfg.Clock.Now()
	for _, s := range r.cfg.Schedules {
		_, err := r.cfg.Store.LastFiring(ctx, s.Name)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			r.from[s.Name] = start
		case err != nil:
			r.log.Warn("reading a schedule's last firing; firings missed before now are not run", "schedule", s.Name, "err", err)
			r.from[s.Name] = start
		}
		r.log.Info("schedule", "schedule", s.Name, "cron", s.Cron, "next", s.Next(start).In(s.Location()).Format(time.RFC3339))
	}
	for {
		now := r.cfg.Clock.Now()
		var wake time.Time // the earliest next firing; zero for none
		retry := false
		for _, s := range r.cfg.Schedules {
			if at, ok := s.Prev(now); ok && !at.Before(r.from[s.Name]) && at.After(r.done[s.Name]) {
				if !r.fire(ctx, s, at) {
					retry = true
				}
			}
			if ctx.Err() != nil {
				return
			}
			if n := s.Next(now); !n.IsZero() && (wake.IsZero() || n.Before(wake)) {
				wake = n
			}
		}
		// A firing to be tried again wakes the runner within Retry;
		// otherwise it sleeps until the next firing, however far.
		if retry && (wake.IsZero() || now.Add(r.cfg.Retry).Before(wake)) {
			wake = now.Add(r.cfg.Retry)
		}
		if wake.IsZero() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-r.cfg.Clock.After(wake.Sub(now)):
		}
	}
}

// fire claims s's firing at `at` and fires it. It reports whether this
// runner fired it and recorded it done; false (failed, or not claimed: done
// or leased by another runner) leaves it to be tried again.
func (r *runner) fire(ctx context.Context, s *Schedule, at time.Time) bool {
	ok, err := r.cfg.Store.ClaimFiring(ctx, s.Name, at, r.cfg.Owner, r.cfg.LeaseTTL)
	if err != nil {
		r.log.Warn("claiming a schedule's firing", "schedule", s.Name, "at", at, "err", err)
		return false
	}
	if !ok {
		// Done, or another runner's: a lapsed lease is taken over on a
		// later try.
		return false
	}
	fctx, cancel := context.WithTimeout(ctx, r.cfg.LeaseTTL/2)
	err = r.cfg.Fire(fctx, s, at)
	cancel()
	if err != nil {
		r.log.Error("a schedule's firing failed; it is tried again", "schedule", s.Name, "at", at, "err", err)
		return false
	}
	if err := r.cfg.Store.FinishFiring(ctx, s.Name, at); err != nil {
		r.log.Warn("recording a schedule's firing done; it may fire again (its thread is opened once)", "schedule", s.Name, "at", at, "err", err)
		return false
	}
	r.done[s.Name] = at
	r.log.Info("schedule fired", "schedule", s.Name, "at", at)
	return true
}
