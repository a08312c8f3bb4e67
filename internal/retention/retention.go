// Package retention deletes the threads nobody used for longer than
// storage.retention: their records (storage.RetentionStore) and then their
// files (workspace.Manager.Forget). It sweeps at start and then every
// Interval, a batch of threads at a time, each deleted in a transaction of
// its own, so the bot's own writes interleave. Among replicas of one
// database one sweeps at a time (TryRetentionLock).
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// Files deletes a thread's files; *workspace.Manager is one.
type Files interface {
	Forget(ctx context.Context, repo string, key workspace.ThreadKey) error
}

// Sweeper deletes expired threads.
type Sweeper struct {
	Store storage.RetentionStore
	// Files deletes a deleted thread's workspace and scratch; nil deletes
	// records only.
	Files Files
	// Age is storage.retention: threads inactive longer are deleted.
	Age time.Duration
	// Interval between sweeps (default a day); Batch threads are listed at
	// a time (default 50).
	Interval time.Duration
	Batch    int
	// Now is the clock (default time.Now); After waits (default time.After).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	Log   *slog.Logger
}

func (s *Sweeper) defaults() {
	if s.Interval <= 0 {
		s.Interval = 24 * time.Hour
	}
	if s.Batch <= 0 {
		s.Batch = 50
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.After == nil {
		s.After = time.After
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
}

// Key is the workspace key of a stored thread.
func Key(t storage.Thread) workspace.ThreadKey {
	return workspace.ChatThreadKey(t.Key.Platform, t.Key.Channel, t.Key.Thread)
}

// Run sweeps now and then every Interval until ctx ends. A failed sweep is
// logged and tried again at the next.
func (s *Sweeper) Run(ctx context.Context) {
	s.defaults()
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("retention sweep failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.After(s.Interval):
		}
	}
}

// Sweep deletes every thread expired now, unless another replica is
// sweeping, and returns how many it deleted. A thread's records go first:
// its files go only once the store deleted it (a thread used again
// meanwhile keeps both).
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	s.defaults()
	release, ok, err := s.Store.TryRetentionLock(ctx)
	if err != nil || !ok {
		return 0, err
	}
	defer release()
	start := s.Now()
	cutoff := start.Add(-s.Age)
	deleted := 0
	for {
		batch, err := s.Store.ExpiredThreads(ctx, cutoff, s.Batch)
		if err != nil {
			return deleted, err
		}
		progress := false
		for _, t := range batch {
			ok, err := s.Store.DeleteThread(ctx, t.ID, cutoff)
			if err != nil {
				return deleted, err
			}
			if !ok {
				continue // used again since it was listed
			}
			progress = true
			deleted++
			if s.Files != nil && t.Repo != "" {
				if err := s.Files.Forget(ctx, t.Repo, Key(t)); err != nil {
					s.Log.Warn("retention: a deleted thread's files stay", "thread", t.ID, "repo", t.Repo, "err", err)
				}
			}
		}
		if len(batch) < s.Batch || !progress {
			break
		}
	}
	if deleted > 0 {
		s.Log.Info("retention sweep", "deleted_threads", deleted, "older_than", s.Age, "took", s.Now().Sub(start).Round(time.Millisecond))
	}
	return deleted, nil
}

// Report is what a sweep would delete now: threads and the bytes of their
// files under dataDir.
type Report struct {
	Threads int
	Bytes   int64
}

// Plan lists what a sweep at now would delete, changing nothing.
func Plan(ctx context.Context, store storage.RetentionStore, dataDir string, age time.Duration, now time.Time) (Report, error) {
	threads, err := store.ExpiredThreads(ctx, now.Add(-age), 1<<30)
	if err != nil {
		return Report{}, err
	}
	r := Report{Threads: len(threads)}
	for _, t := range threads {
		if t.Repo == "" {
			continue
		}
		n, err := workspace.ThreadFilesSize(ctx, dataDir, t.Repo, Key(t))
		if err != nil {
			return r, err
		}
		r.Bytes += n
	}
	return r, nil
}

// String is the -check line: "12 threads, 3.4 MB".
func (r Report) String() string {
	unit := "threads"
	if r.Threads == 1 {
		unit = "thread"
	}
	return fmt.Sprintf("%d %s, %.1f MB", r.Threads, unit, float64(r.Bytes)/1e6)
}
