package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// checkExample copies config.example.yaml with the given line changes, runs
// the bot's -check on it with env (besides PATH and HOME) and fails t
// unless it passes. A machine without a sandbox (the example's
// sandbox.mode is auto) skips, unless THREADSMITH_REQUIRE_SANDBOX=1.
func checkExample(t *testing.T, changes map[string]string, env []string) {
	t.Helper()
	bin := buildBot(t)
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(example)
	for old, repl := range changes {
		if !strings.Contains(text, old) {
			t.Fatalf("config.example.yaml has no %q to change", old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-config", "config.yaml", "-check")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil && strings.HasPrefix(string(out), "sandbox: ") && strings.Count(strings.TrimSpace(string(out)), "\n") == 0 && os.Getenv("THREADSMITH_REQUIRE_SANDBOX") != "1" {
		t.Skipf("no sandbox on this machine (the example's sandbox.mode is auto): %s", out)
	}
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "\nok") {
		t.Fatalf("-check of the copied example: %v\n%s", err, out)
	}
}

// exampleLLM is a fake OpenAI listing the models the example names.
func exampleLLM(t *testing.T) *llmfake.Server {
	llm := llmfake.New(t)
	llm.SetModels("gpt-4.1", "gpt-4.1-mini")
	return llm
}

// readmeExports returns the variable names of the first line starting with
// "export " (a shell command) in the README's section titled title.
func readmeExports(t *testing.T, title string) []string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## "+title+"\n")
	if !ok {
		t.Fatalf("the README has no section %q", title)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, line := range strings.Split(section, "\n") {
		export, ok := strings.CutPrefix(strings.TrimSpace(line), "export ")
		if !ok {
			continue
		}
		var named []string
		for _, f := range strings.Fields(export) {
			if name, _, ok := strings.Cut(f, "="); ok {
				named = append(named, name)
			}
		}
		return named
	}
	return nil
}

// config.example.yaml copied as it is passes -check with the variables its
// header and the README's "Slack in five minutes" name: every live entry in
// it works. The fakes stand for OpenAI (listing the models the example
// names), Slack (slack.api_url is the one line changed: the example has no
// variable for it) and the repository. Its header says no "go run".
func TestExampleConfigPassesCheckAfterCopy(t *testing.T) {
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if header, _, _ := strings.Cut(string(example), "\n\n"); strings.Contains(header, "go run") {
		t.Error("config.example.yaml's header says go run: the README runs the built binary (go run makes every exit code 1)")
	}
	if got, want := readmeExports(t, "Slack in five minutes"), []string{"OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "REPO_URL"}; !slices.Equal(got, want) {
		t.Errorf("the README's Slack in five minutes exports %q, want %q", got, want)
	}
	llm := exampleLLM(t)
	sl := slackfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README": "app"}})
	checkExample(t, map[string]string{
		"\n  api_url: \"\"                     # override of https://slack.com/api/": "\n  api_url: " + sl.APIURL() + " #",
	}, []string{
		"OPENAI_BASE_URL=" + llm.URL(), "OPENAI_API_KEY=sk-example",
		"SLACK_BOT_TOKEN=" + sl.BotToken(), "SLACK_APP_TOKEN=" + sl.AppToken(),
		"REPO_URL=" + remote.Path,
	})
}

// "Discord in five minutes": the example with Slack off and Discord on is
// valid with DISCORD_BOT_TOKEN instead of the Slack tokens. (Its -check is
// not run here: -check asks Discord's API v10, the fake serves v9.)
func TestExampleConfigOnDiscordIsValid(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, steps, _ := strings.Cut(string(readme), "\n## Discord in five minutes\n")
	steps, _, _ = strings.Cut(steps, "\n## ")
	for _, s := range []string{"`slack.enabled: false`", "`discord.enabled: true`", "`export DISCORD_BOT_TOKEN=…`"} {
		if !strings.Contains(steps, s) {
			t.Errorf("the README's Discord in five minutes does not say %s", s)
		}
	}
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(example)
	for old, repl := range map[string]string{
		"\nslack:\n  enabled: true ":    "\nslack:\n  enabled: false ",
		"\ndiscord:\n  enabled: false ": "\ndiscord:\n  enabled: true ",
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("config.example.yaml has no %q to change", old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-example", "DISCORD_BOT_TOKEN": "discord-token", "REPO_URL": "/srv/app.git"}
	cfg, err := config.Parse(strings.NewReader(text), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the example on Discord is invalid: %v", err)
	}
	if cfg.Slack.Enabled || !cfg.Discord.Enabled || cfg.Discord.Token != "discord-token" || cfg.Workspace.DefaultRepo != "app" {
		t.Fatalf("config: slack %v, discord %v %q, default_repo %q", cfg.Slack.Enabled, cfg.Discord.Enabled, cfg.Discord.Token, cfg.Workspace.DefaultRepo)
	}
}
