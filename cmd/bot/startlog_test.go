package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/ops/opstest"
)

// The start line names the version and none of the configured secrets; the shutdown is logged twice: when it
// begins, with why, and when it is done, with how long it took.
func TestStartAndShutdownAreLogged(t *testing.T) {
	t.Parallel()
	llm := llmfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}})
	cfg := e2eConfig(t, llm, remote)
	// Configured, not enabled: the start line writes the config out all the same.
	cfg.Slack.BotToken, cfg.Slack.AppToken = "xoxb-startlog-bot-token", "xapp-startlog-app-token"
	cfg.Discord.Token = "startlog-discord-token"
	cfg.Workspace.Repos[0].Token = "ghp_startlogrepotoken"
	secrets := []string{cfg.LLM.APIKey, cfg.Slack.BotToken, cfg.Slack.AppToken, cfg.Discord.Token, cfg.Workspace.Repos[0].Token}
	var logs syncBuffer
	m := NewMain()
	m.Config = &cfg
	m.Adapters = []chat.Adapter{chatfake.New("test", 3500)}
	m.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.CloseBecause("terminated signal received"); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	start := lineWith(out, "starting threadsmith")
	if !strings.Contains(start, "version="+buildInfo().Version) {
		t.Errorf("the start line has no version:\n%s", start)
	}
	if !strings.Contains(start, "BotToken:***") {
		t.Errorf("the start line shows no redacted secret:\n%s", start)
	}
	for _, secret := range secrets {
		if secret == "" || strings.Contains(out, secret) {
			t.Errorf("the logs have the secret %q (or it is unset):\n%s", secret, out)
		}
	}
	if l := lineWith(out, "msg=\"shutting down\""); !strings.Contains(l, `reason="terminated signal received"`) {
		t.Errorf("the shutdown's start is not logged with its reason:\n%s", out)
	}
	if l := lineWith(out, "msg=\"shut down\""); !strings.Contains(l, "took=") || !strings.Contains(l, "reason=") {
		t.Errorf("the shutdown's end is not logged with its reason and duration:\n%s", out)
	}
}

// A second bot on a data_dir stops with the lock's error before it logs
// anything: its config is not written out beside the first bot's.
func TestASecondBotLogsNothingBeforeTheLockError(t *testing.T) {
	t.Parallel()
	llm := llmfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}})
	cfg := e2eConfig(t, llm, remote)
	held, err := lockDataDir(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	var logs syncBuffer
	m := NewMain()
	m.Config = &cfg
	m.Adapters = []chat.Adapter{chatfake.New("test", 3500)}
	m.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	err = m.Run(context.Background())
	if !errors.Is(err, errDataDirInUse) {
		t.Fatalf("Run: %v, want the data_dir in use", err)
	}
	if out := logs.String(); out != "" {
		t.Errorf("the second bot logged before its lock error:\n%s", out)
	}
}

// lineWith is the first line of out containing s ("" when none does).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// Logs go to stderr, and the README and the example config say so; stdout
// is for what the operator asked for (-check's lines, -version).
func TestLogsGoToStderrAsDocumented(t *testing.T) {
	t.Parallel()
	llm := llmfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}})
	cfg := e2eConfig(t, llm, remote)
	var stdout, stderr syncBuffer
	m := NewMain()
	m.Config = &cfg
	m.Adapters = []chat.Adapter{chatfake.New("test", 3500)}
	m.Stdout, m.Stderr = &stdout, &stderr
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "starting threadsmith") || stdout.String() != "" {
		t.Errorf("logs: stderr %q, stdout %q; want them all on stderr", stderr.String(), stdout.String())
	}
	for _, doc := range []string{"../../README.md", "../../config.example.yaml"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "stdout is not a terminal") || !strings.Contains(string(b), "stderr") {
			t.Errorf("%s does not say that logs go to stderr", doc)
		}
	}
}

// The configured models' series are scraped at 0 from the start.
func TestModelSeriesExistAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0" })
	fams := opstest.Scrape(t, "http://"+e.m.HTTPAddr())
	for _, name := range []string{"threadsmith_llm_requests_total", "threadsmith_llm_errors_total", "threadsmith_llm_tokens_total"} {
		if v, found := metricValue(fams, name, map[string]string{"model": "fake-model"}); !found || v != 0 {
			t.Errorf("%s{model=fake-model} = %v (present %v) before any call, want 0", name, v, found)
		}
	}
}
