package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

func checkConfig(t *testing.T) (config.Config, *slackfake.Server) {
	t.Helper()
	llm := llmfake.New(t)
	sl := slackfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"a.txt": "a"}})
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.LLM.BaseURL = llm.URL()
	cfg.LLM.APIKey = "sk-check"
	cfg.LLM.Model = "fake-model"
	cfg.Slack.APIURL = sl.APIURL()
	cfg.Slack.BotToken = sl.BotToken()
	cfg.Slack.AppToken = sl.AppToken()
	cfg.Workspace.DefaultRepo = "app"
	cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: remote.Path, DefaultBranch: "main"}}
	return cfg, sl
}

func runCheck(t *testing.T, cfg config.Config) (bool, string) {
	t.Helper()
	m := NewMain()
	m.Config = &cfg
	var out bytes.Buffer
	ok := m.RunCheck(context.Background(), &out)
	return ok, out.String()
}

func TestCheckPassesWhenEverythingIsReachable(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	ok, out := runCheck(t, cfg)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !ok || len(lines) != 3 || !strings.HasPrefix(lines[1], "storage: sqlite ") || lines[2] != "ok" {
		t.Fatalf("check = %v, %q; want the sandbox line, the storage line, then ok", ok, out)
	}
	// Which sandbox is active, for the operator.
	if !strings.HasPrefix(lines[0], "sandbox: namespaces (user, mount, pid, ipc, uts, net)") || !strings.Contains(lines[0], "network off") {
		t.Errorf("sandbox line %q", lines[0])
	}
}

// -check asks Discord who the token is, on the API version the bot speaks:
// the fake, as strict as Discord, answers a good token and refuses a bad one.
func TestCheckAsksDiscordAboutTheToken(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	cfg.Slack.Enabled = false
	fake := discordfake.New(t)
	cfg.Discord.Enabled = true
	cfg.Discord.APIURL = fake.URL()
	cfg.Discord.Token = fake.Token()
	if ok, out := runCheck(t, cfg); !ok || !strings.HasSuffix(strings.TrimSpace(out), "ok") {
		t.Fatalf("check with a good Discord token = %v, %q; want ok", ok, out)
	}
	cfg.Discord.Token = "not-the-token"
	ok, out := runCheck(t, cfg)
	if ok || !strings.Contains(out, "discord.token: Discord refused the token (401)") || strings.Contains(out, "not-the-token") {
		t.Fatalf("check with a bad Discord token = %v, %q; want the refusal, without the token", ok, out)
	}
}

// -check reaches an https remote as the bot's fetches and pushes do: the git
// CLI, with the token through its credential helper. A wrong token is
// reported as refused, and never printed.
func TestCheckReachesTheRemoteAsTheBotsGitDoes(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Username: "x-access-token", Password: "tok-right"})
	repo := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"a.txt": "a"}})
	cfg.Workspace.Repos[0].URL = srv.Serve(t, repo)
	cfg.Workspace.Repos[0].Token = "tok-right"
	if ok, out := runCheck(t, cfg); !ok {
		t.Fatalf("check with the right token failed:\n%s", out)
	}
	agents := srv.UserAgents()
	if len(agents) == 0 {
		t.Fatal("the remote was never asked")
	}
	for _, ua := range agents {
		if !strings.HasPrefix(ua, "git/") {
			t.Fatalf("the remote was asked by %q, not by the git CLI the bot fetches and pushes with", ua)
		}
	}
	cfg.Workspace.Repos[0].Token = "tok-wrong"
	ok, out := runCheck(t, cfg)
	if ok || !strings.Contains(out, "workspace.repos[app].url: ") || !strings.Contains(out, "refused the credentials") {
		t.Fatalf("check with a wrong token = %v, want the remote's refusal:\n%s", ok, out)
	}
	if strings.Contains(out, "tok-wrong") || strings.Contains(out, "tok-right") {
		t.Fatalf("a token was printed:\n%s", out)
	}
}

func TestCheckSaysWhenTheAgentIsUnsandboxed(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	ok, out := runCheck(t, cfg)
	if !ok || !strings.HasPrefix(out, "sandbox: none (unsandboxed") {
		t.Fatalf("check = %v, %q; want the unsandboxed line, then ok", ok, out)
	}
}

func TestCheckReportsOneLinePerProblem(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.LLM.Model = "no-such-model"
	cfg.Slack.BotToken = "xoxb-wrong"
	cfg.Workspace.Repos[0].DefaultBranch = "trunk"
	cfg.Workspace.Repos = append(cfg.Workspace.Repos, config.Repo{Name: "gone", URL: filepath.Join(t.TempDir(), "missing.git"), DefaultBranch: "main"})
	ok, out := runCheck(t, cfg)
	if ok {
		t.Fatalf("check passed:\n%s", out)
	}
	want := []string{
		`llm.model: "no-such-model"`,
		`slack.bot_token: rejected by Slack: "invalid_auth"`,
		`workspace.repos[app].default_branch: the remote has no branch "trunk"`,
		`workspace.repos[gone].url: Could not fetch from repository "gone": the remote repository was not found`,
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want)+2 || !strings.HasPrefix(lines[0], "sandbox: ") || !strings.HasPrefix(lines[1], "storage: ") {
		t.Fatalf("check printed %d lines, want the sandbox and storage lines and %d problems:\n%s", len(lines), len(want), out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
	if strings.Contains(out, "xoxb-wrong") || strings.Contains(out, "sk-check") {
		t.Fatal("a secret was printed")
	}
}

func TestCheckReportsInvalidConfigKeys(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.LLM.ContextWindow = 10
	cfg.Workspace.DefaultRepo = "nope"
	ok, out := runCheck(t, cfg)
	if ok || !strings.Contains(out, "llm.context_window") || !strings.Contains(out, "workspace.default_repo") {
		t.Fatalf("check = %v:\n%s", ok, out)
	}
}

// -check beside a running bot on SQLite does not open its database (which
// would bring the schema of an older running build up to date under it):
// the storage line says who holds it, and that is no problem.
func TestCheckLeavesARunningBotsDatabaseAlone(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	held, err := lockDataDir(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	ok, out := runCheck(t, cfg)
	want := fmt.Sprintf("storage: sqlite %s in use by another threadsmith (pid %d): not opened", filepath.Join(cfg.DataDir, "threadsmith.db"), os.Getpid())
	if !ok || !strings.Contains(out, want+"\n") {
		t.Fatalf("check = %v, %q; want ok with %q", ok, out, want)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "threadsmith.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-check created or opened the running bot's database: %v", err)
	}
}

// A key in llm.base_url (a proxy's ?key=) is not printed when the endpoint
// cannot be reached: Go's transport error quotes the URL, query and all.
func TestCheckDoesNotPrintTheBaseURLKey(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	const key = "proxy-key-0123456789abcdef"
	cfg.LLM.BaseURL = "http://127.0.0.1:1/v1?key=" + key
	ok, out := runCheck(t, cfg)
	if ok || !strings.Contains(out, "llm") {
		t.Fatalf("check of an unreachable endpoint passed or named no llm problem:\n%s", out)
	}
	if strings.Contains(out, key) {
		t.Fatalf("the base_url key was printed:\n%s", out)
	}
}

// -check validates the schedules: a bad cron expression and an unknown
// repository are reported with their keys and lines in the file.
func TestCheckReportsBadSchedulesWithTheirLines(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	src := fmt.Sprintf(`data_dir: %s
llm: {base_url: %q, api_key: sk-check, model: fake-model}
slack: {api_url: %q, bot_token: %q, app_token: %q}
workspace: {default_repo: app, repos: [{name: app, url: %q}]}
schedules:
  - name: nightly
    cron: "0 25 * * *"
    channel: C1
    prompt: check the build
  - name: weekly
    cron: "@weekly"
    channel: C1
    repo: nope
    prompt: sum up the week
`, cfg.DataDir, cfg.LLM.BaseURL, cfg.Slack.APIURL, cfg.Slack.BotToken, cfg.Slack.AppToken, cfg.Workspace.Repos[0].URL)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	m.ConfigPath = path
	var out bytes.Buffer
	ok := m.RunCheck(context.Background(), &out)
	for _, want := range []string{`schedules[0].cron: "0 25 * * *": `, "(line 7)", `schedules[1].repo: unknown repository "nope"`, "(line 13)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-check output lacks %q:\n%s", want, out.String())
		}
	}
	if ok {
		t.Error("-check passed a config with bad schedules")
	}
}
