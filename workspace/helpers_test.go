package workspace

import (
	"bytes"
	"context"
	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

var bot = Identity{Name: "threadsmith", Email: "bot@threadsmith.test"}

// newFakeClock is the test's manual clock.
func newFakeClock() *clock.Manual {
	return clock.NewManual(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
}

// logBuffer collects a test's logs so tests can assert what they do not
// contain, and echoes them to the test output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out io.Writer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	return l.out.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type env struct {
	t     *testing.T
	m     *Manager
	cfg   Config
	clock *clock.Manual
	logs  *logBuffer
}

// newEnv starts a Manager over repos in a fresh data dir; the janitor is off
// (tests call Cleanup) and the clock is fake.
func newEnv(t *testing.T, repos ...Repo) *env {
	t.Helper()
	return newEnvIn(t, t.TempDir(), newFakeClock(), repos...)
}

func newEnvIn(t *testing.T, dataDir string, clock *clock.Manual, repos ...Repo) *env {
	t.Helper()
	logs := &logBuffer{out: t.Output()}
	cfg := Config{
		DataDir:         dataDir,
		Repos:           repos,
		BranchPrefix:    "bot/",
		Author:          bot,
		GitTimeout:      20 * time.Second,
		CleanupInterval: -1,
		Logger:          slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:             clock.Now,
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &env{t: t, m: m, cfg: cfg, clock: clock, logs: logs}
}

func (e *env) open(repo, key string) *Workspace {
	e.t.Helper()
	w, err := e.m.Open(context.Background(), repo, ThreadKey{Platform: "slack", Key: key})
	if err != nil {
		e.t.Fatalf("Open(%s, %s): %v", repo, key, err)
	}
	return w
}

func seedFiles() map[string]string {
	return map[string]string{
		"README.md":   "# demo\n",
		"src/main.go": "package main\n\nfunc main() {}\n",
	}
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	gitremote.WriteFile(t, dir, rel, content)
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

func mustCommit(t *testing.T, w *Workspace, req string) string {
	t.Helper()
	sha, err := w.Commit(context.Background(), CommitRequest{Request: req})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if sha == "" {
		t.Fatalf("Commit made no commit, want one")
	}
	return sha
}

func mustPush(t *testing.T, w *Workspace) PushResult {
	t.Helper()
	res, err := w.Push(context.Background())
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	return res
}
