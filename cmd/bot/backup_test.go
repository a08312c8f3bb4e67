package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// A backup taken with -backup while a run is in progress, restored into a
// fresh data_dir, starts a bot that resumes the thread: the next prompt in
// it reaches the model with the conversation before the backup.
func TestBackupDuringARunRestoresToABotThatResumesTheThread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := newGate()
	var n atomic.Int32
	var resumed atomic.Bool
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
			return llmfake.TextReply("the word is noted")
		}
		for _, msg := range r.Messages {
			if strings.Contains(msg.Content, "remember the word pineapple") {
				resumed.Store(true)
			}
		}
		return llmfake.TextReply("answer to: " + lastUserText(r))
	})
	th := thread("300.1")
	e.say(th, "remember the word pineapple", true)
	e.waitArrived(g)

	backup := filepath.Join(t.TempDir(), "threadsmith-backup.db")
	b := NewMain()
	cfg := e.cfg
	b.Config, b.Backup = &cfg, backup
	var out bytes.Buffer
	if err := b.RunBackup(e.ctx, &out); err != nil {
		t.Fatalf("-backup during a run: %v", err)
	}
	if !strings.Contains(out.String(), "backed up ") {
		t.Errorf("-backup said %q", out.String())
	}
	if err := b.RunBackup(e.ctx, &out); !errors.Is(err, os.ErrExist) {
		t.Errorf("a second -backup to the same file: %v, want it refused", err)
	}
	close(g.open)
	e.waitText(th, "the word is noted")
	e.stop()

	// Restore: the backup becomes the database of a fresh data_dir.
	e.cfg.DataDir = filepath.Join(t.TempDir(), "restored")
	if err := os.MkdirAll(e.cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.cfg.DataDir, sqlite.FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.say(th, "which word?", false)
	e.waitText(th, "answer to: which word?")
	if !resumed.Load() {
		t.Error("the restored bot's model call lacked the conversation from before the backup")
	}
}

// -backup with PostgreSQL says to use pg_dump, as a config error.
func TestBackupOfPostgresIsRefused(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Storage.Driver = "postgres"
	cfg.Storage.DSN = "postgres://u@127.0.0.1:1/db"
	m := NewMain()
	m.Config, m.Backup = &cfg, filepath.Join(t.TempDir(), "b.db")
	err := m.RunBackup(context.Background(), &bytes.Buffer{})
	if !errors.As(err, new(configError)) || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("-backup with postgres: %v, want a config error naming pg_dump", err)
	}
}

// -backup never writes through a symlink at FILE: one that dangles (the
// backup would land where it points) and one to the live database (the
// copy would overwrite it) are both refused, their targets untouched. With
// no database yet, -backup fails and creates nothing: no data_dir, no file.
func TestBackupRefusesSymlinksAndCreatesNothingWithoutADatabase(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	dir := t.TempDir()
	backup := func(file string) error {
		m := NewMain()
		c := cfg
		m.Config, m.Backup = &c, file
		return m.RunBackup(context.Background(), &bytes.Buffer{})
	}

	if err := backup(filepath.Join(dir, "none.db")); err == nil {
		t.Error("-backup with no database succeeded")
	}
	if _, err := os.Lstat(cfg.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-backup with no database created data_dir: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "none.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-backup with no database created its FILE: %v", err)
	}

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), sqlitePath(&cfg))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	live, err := os.ReadFile(sqlitePath(&cfg))
	if err != nil {
		t.Fatal(err)
	}

	elsewhere := filepath.Join(dir, "elsewhere.db")
	dangling := filepath.Join(dir, "dangling.db")
	toLive := filepath.Join(dir, "live.db")
	if err := os.Symlink(elsewhere, dangling); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sqlitePath(&cfg), toLive); err != nil {
		t.Fatal(err)
	}
	if err := backup(dangling); !errors.Is(err, os.ErrExist) {
		t.Errorf("-backup to a dangling symlink: %v, want it refused", err)
	}
	if _, err := os.Lstat(elsewhere); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-backup wrote through a dangling symlink: %v", err)
	}
	if err := backup(toLive); !errors.Is(err, os.ErrExist) {
		t.Errorf("-backup to a symlink to the database: %v, want it refused", err)
	}
	if after, err := os.ReadFile(sqlitePath(&cfg)); err != nil || !bytes.Equal(after, live) {
		t.Errorf("-backup to a symlink changed the live database (err %v)", err)
	}
	if err := backup(filepath.Join(dir, "ok.db")); err != nil {
		t.Errorf("-backup beside the refused ones: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*partial*"))
	if len(left) != 0 {
		t.Errorf("-backup left partial files: %v", left)
	}
}

// The binary's -backup, as the README has it: a private file (0600) and
// exit 0 beside a running bot; 1 when FILE exists (never overwritten); 2
// combined with -check.
func TestBackupFlagExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBot(t)
	config := filepath.Join(t.TempDir(), "config.yaml")
	yaml := fmt.Sprintf("data_dir: %q\nllm: {base_url: %q, api_key: sk-x}\nsandbox: {mode: none}\nslack: {enabled: false}\nworkspace:\n  default_repo: app\n  repos: [{name: app, url: %q}]\n",
		e.cfg.DataDir, e.llm.URL(), e.remote.Path)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "b.db")
	exitCode := func(args ...string) (int, string) {
		out, err := exec.CommandContext(ctx, bin, append([]string{"-config", config}, args...)...).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return 0, string(out)
	}
	if code, out := exitCode("-backup", file); code != 0 || !strings.Contains(out, "backed up ") {
		t.Fatalf("-backup beside a running bot: exit %d\n%s", code, out)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the backup: %v, mode %v, want 0600", err, st)
	}
	before, _ := os.ReadFile(file)
	if code, out := exitCode("-backup", file); code != 1 || !strings.Contains(out, "never overwrites") {
		t.Errorf("-backup to an existing file: exit %d, want 1\n%s", code, out)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, before) {
		t.Error("-backup overwrote an existing file")
	}
	if code, out := exitCode("-backup", file+".2", "-check"); code != 2 {
		t.Errorf("-backup with -check: exit %d, want 2\n%s", code, out)
	}
}
