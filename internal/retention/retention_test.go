package retention_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	"github.com/threadsmith/threadsmith/internal/retention"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/workspace"
)

const day = 24 * time.Hour

type env struct {
	db    *sqlite.DB
	ws    *workspace.Manager
	clock *clock.Manual
	data  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "hi\n"}})
	c := clock.NewManual(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	data := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(data, sqlite.FileName), sqlite.WithClock(c.Now), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ws, err := workspace.New(workspace.Config{
		DataDir: data, Repos: []workspace.Repo{{Name: "app", URL: remote.Path}}, BranchPrefix: "bot/",
		Author: workspace.Identity{Name: "bot", Email: "bot@x.test"}, GitTimeout: 20 * time.Second,
		CleanupInterval: -1, Now: c.Now, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close(context.Background()) })
	return &env{db: db, ws: ws, clock: c, data: data}
}

// thread stores a Slack thread with a session and delivered input, opens its
// workspace and writes a file in its scratch folder.
func (e *env) thread(t *testing.T, ts string) (storage.Thread, *workspace.Workspace) {
	t.Helper()
	ctx := context.Background()
	key := storage.ThreadKey{Platform: "slack", Team: "T", Channel: "C1", Thread: ts}
	a, err := e.db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "app"},
		storage.Inbound{Platform: "slack", Channel: "C1", MessageID: ts, Mode: storage.ModePrompt, Text: "fix it"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.MarkInbound(ctx, a.ID, storage.InboundDropped, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.CreateSession(ctx, a.Thread.ID, storage.SessionInit{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	w, err := e.ws.Open(ctx, "app", retention.Key(a.Thread))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.ScratchDir(), "out.log"), []byte(strings.Repeat("x", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return a.Thread, w
}

// An old thread's records, worktree and scratch go; a recent thread's stay;
// a link the agent planted in the old scratch toward a file outside the
// data dir leaves that file whole. The sweep runs again after Interval.
func TestSweepDeletesOldThreadsOnly(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	old, oldWS := e.thread(t, "1.0")
	outside := filepath.Join(t.TempDir(), "operator.txt")
	if err := os.WriteFile(outside, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(oldWS.ScratchDir(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(oldWS.ScratchDir(), "dirlink")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(100 * day)
	recent, recentWS := e.thread(t, "2.0")

	rep, err := retention.Plan(ctx, e.db, e.data, 90*day, e.clock.Now())
	if err != nil || rep.Threads != 1 || rep.Bytes < 1000 {
		t.Fatalf("Plan = %+v, %v; want 1 thread of at least 1000 bytes", rep, err)
	}
	if _, err := e.db.ThreadByID(ctx, old.ID); err != nil {
		t.Fatalf("Plan deleted: %v", err)
	}

	after := make(chan time.Time)
	s := &retention.Sweeper{Store: e.db, Files: e.ws, Age: 90 * day, Batch: 1, Now: e.clock.Now,
		After: func(d time.Duration) <-chan time.Time {
			if d != 24*time.Hour {
				t.Errorf("interval %s, want a day", d)
			}
			return after
		}}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(rctx) }()
	after <- time.Time{} // the first sweep ended: Run waits for the interval
	_, err = e.db.ThreadByID(ctx, old.ID)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("old thread after the sweep: %v", err)
	}
	for _, dir := range []string{oldWS.Root(), oldWS.ScratchDir()} {
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", dir, err)
		}
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep\n" {
		t.Errorf("file outside data_dir = %q, %v", b, err)
	}
	if _, err := e.db.ThreadByID(ctx, recent.ID); err != nil {
		t.Errorf("recent thread: %v", err)
	}
	if _, err := os.Stat(filepath.Join(recentWS.ScratchDir(), "out.log")); err != nil {
		t.Errorf("recent scratch: %v", err)
	}
	// A day later the recent thread is still recent; the second sweep ran.
	e.clock.Advance(day)
	after <- time.Time{}
	cancel()
	<-done
	if _, err := e.db.ThreadByID(ctx, recent.ID); err != nil {
		t.Errorf("recent thread after a second sweep: %v", err)
	}
	if got := (retention.Report{Threads: 12, Bytes: 3_400_000}).String(); got != "12 threads, 3.4 MB" {
		t.Errorf("Report = %q", got)
	}
}
