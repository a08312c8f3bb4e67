package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/workspace"
)

// seededThread is a thread seedRetention stored, and its scratch folder.
type seededThread struct {
	id      int64
	scratch string
}

// seedRetention stores, in cfg's data_dir, a thread last used 100 days ago
// and one used yesterday, each with 300 kB in its scratch folder; the old
// one's scratch also holds the agent's link to a file outside data_dir,
// which it returns.
func seedRetention(t *testing.T, cfg config.Config) (old, recent seededThread, outside string) {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.New(workspaceConfig(&cfg, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(ctx)
	seed := func(ts string, at time.Time) seededThread {
		db, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, sqlite.FileName), sqlite.WithClock(func() time.Time { return at }))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		key := storage.ThreadKey{Platform: "test", Channel: "C1", Thread: ts}
		a, err := db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "app"},
			storage.Inbound{Platform: "test", Channel: "C1", MessageID: ts, Mode: storage.ModePrompt, Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.MarkInbound(ctx, a.ID, storage.InboundDropped, "seeded"); err != nil {
			t.Fatal(err)
		}
		_, scratch := ws.ThreadDirs("app", workspace.ChatThreadKey("test", "C1", ts))
		if err := os.MkdirAll(scratch, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scratch, "out.log"), make([]byte, 300_000), 0o644); err != nil {
			t.Fatal(err)
		}
		return seededThread{a.Thread.ID, scratch}
	}
	old = seed("1.0", time.Now().Add(-100*24*time.Hour))
	recent = seed("2.0", time.Now().Add(-24*time.Hour))
	outside = filepath.Join(t.TempDir(), "operator.txt")
	if err := os.WriteFile(outside, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(old.scratch, "link")); err != nil {
		t.Fatal(err)
	}
	return old, recent, outside
}

// -check says what retention would delete, and deletes nothing.
func TestCheckReportsWhatRetentionWouldDelete(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	cfg.Storage.Retention = config.Days(90 * 24 * time.Hour)
	old, _, _ := seedRetention(t, cfg)
	ok, out := runCheck(t, cfg)
	if !ok || !strings.Contains(out, "\nretention 90d: 1 thread, 0.3 MB would be deleted\n") {
		t.Fatalf("check = %v, %q; want the retention line", ok, out)
	}
	if _, err := os.Stat(filepath.Join(old.scratch, "out.log")); err != nil {
		t.Errorf("-check deleted the old scratch: %v", err)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(cfg.DataDir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ThreadByID(context.Background(), old.id); err != nil {
		t.Errorf("-check deleted the old thread: %v", err)
	}
}

// At start the bot deletes the thread idle past storage.retention, records
// and scratch, and keeps the recent one; the file behind the agent's link
// stays.
func TestStartDeletesThreadsPastRetention(t *testing.T) {
	t.Parallel()
	llm := llmfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}})
	cfg := e2eConfig(t, llm, remote)
	cfg.Storage.Retention = config.Days(90 * 24 * time.Hour)
	old, recent, outside := seedRetention(t, cfg)
	m := NewMain()
	m.Config = &cfg
	m.Adapters = []chat.Adapter{chatfake.New("test", 3500)}
	m.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The sweep the bot started deletes the record, then the files: poll
	// for both.
	for {
		_, err := m.DB.ThreadByID(ctx, old.id)
		_, serr := os.Lstat(old.scratch)
		if errors.Is(err, storage.ErrNotFound) && os.IsNotExist(serr) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the old thread is still there: record %v, scratch %v", err, serr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep\n" {
		t.Errorf("file outside data_dir = %q, %v", b, err)
	}
	if _, err := m.DB.ThreadByID(ctx, recent.id); err != nil {
		t.Errorf("recent thread: %v", err)
	}
	if _, err := os.Stat(filepath.Join(recent.scratch, "out.log")); err != nil {
		t.Errorf("recent scratch: %v", err)
	}
}
