package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

func postgresConfig(t *testing.T) func(*config.Config) {
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	return func(c *config.Config) {
		c.Storage.Driver = config.StoragePostgres
		c.Storage.DSN = dsn
	}
}

func TestCheckReachesTheSQLiteDatabase(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	db, err := sqlite.Open(t.Context(), filepath.Join(cfg.DataDir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ok, out := runCheck(t, cfg)
	want := "storage: sqlite " + filepath.Join(cfg.DataDir, sqlite.FileName) + " reachable"
	if !ok || !strings.Contains(out, want) {
		t.Fatalf("check = %v, %q; want a line %q", ok, out, want)
	}
}

func TestCheckReachesPostgres(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	postgresConfig(t)(&cfg)
	ok, out := runCheck(t, cfg)
	if !ok || !strings.Contains(out, "storage: postgres 127.0.0.1:") || !strings.Contains(out, " reachable (schema version ") {
		t.Fatalf("check = %v, %q; want the PostgreSQL database reachable", ok, out)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, sqlite.FileName)); err == nil {
		t.Error("-check on PostgreSQL created a SQLite file")
	}
}

// An unreachable database fails the check, naming the key, and the DSN's
// password is not shown.
func TestCheckSaysWhenPostgresIsUnreachable(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	cfg.Storage.Driver = config.StoragePostgres
	cfg.Storage.DSN = "postgres://bot:pw-s3cret-value@127.0.0.1:1/ts?sslmode=disable&connect_timeout=5"
	ok, out := runCheck(t, cfg)
	if ok || !strings.Contains(out, "storage.dsn: ") {
		t.Fatalf("check = %v, %q; want a storage.dsn problem", ok, out)
	}
	if strings.Contains(out, "pw-s3cret-value") {
		t.Fatalf("the DSN's password is in the check's output: %q", out)
	}
}

// The bot on PostgreSQL: a conversation is stored there and continues
// across a restart, and no SQLite file is made.
func TestBotRunsOnPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, postgresConfig(t), func(c *config.Config) { c.ShutdownGrace = 2 * time.Second })
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("reply to: " + lastUserText(r)) })
	th := thread("7000.1")
	e.say(th, "my name is Ada", true)
	e.waitText(th, "reply to: my name is Ada")
	e.stop()
	// A new platform connection: Say waits until the restarted bot listens.
	// Its message ids continue where the old one's stopped.
	old := e.chat
	e.chat = chatfake.New("test", 3500)
	for range old.Messages(th) {
		e.chat.Post(e.ctx, thread("0.0"), "id filler")
	}
	e.start()
	e.say(th, "what is my name?", false)
	e.waitText(th, "reply to: what is my name?")
	reqs := e.llm.Requests()
	if joined := strings.Join(userTexts(reqs[len(reqs)-1]), "|"); !strings.HasPrefix(joined, "my name is Ada|") {
		t.Fatalf("context after restart = %q, want the earlier message first", joined)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.DataDir, sqlite.FileName)); err == nil {
		t.Error("the bot on PostgreSQL made a SQLite file")
	}
}
