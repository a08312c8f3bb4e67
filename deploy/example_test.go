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

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// config.example.yaml copied as it is passes -check with the variables its
// header names: every live entry in it works. The fakes stand for OpenAI
// (listing the models the example names), Slack (slack.api_url is the one
// line changed: the example has no variable for it) and the repository.
func TestExampleConfigPassesCheckAfterCopy(t *testing.T) {
	bin := buildBot(t)
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if header, _, _ := strings.Cut(string(example), "\n\n"); strings.Contains(header, "go run") {
		t.Error("config.example.yaml's header says go run: the README runs the built binary (go run makes every exit code 1)")
	}
	llm := llmfake.New(t)
	llm.SetModels("gpt-4.1", "gpt-4.1-mini")
	sl := slackfake.New(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README": "app"}})

	const apiURL = "\n  api_url: \"\"                     # override of https://slack.com/api/"
	text := string(example)
	if !strings.Contains(text, apiURL) {
		t.Fatalf("config.example.yaml has no %q to point at the fake Slack", apiURL)
	}
	text = strings.Replace(text, apiURL, "\n  api_url: "+sl.APIURL()+" #", 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-config", "config.yaml", "-check")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"OPENAI_BASE_URL=" + llm.URL(), "OPENAI_API_KEY=sk-example",
		"SLACK_BOT_TOKEN=" + sl.BotToken(), "SLACK_APP_TOKEN=" + sl.AppToken(),
		"REPO_URL=" + remote.Path,
	}
	// The README's "Slack in five minutes" exports exactly these variables.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, steps, _ := strings.Cut(string(readme), "\n## Slack in five minutes\n")
	_, export, ok := strings.Cut(steps, "export ")
	export, _, _ = strings.Cut(export, "\n")
	var named []string
	for _, f := range strings.Fields(export) {
		named = append(named, strings.SplitN(f, "=", 2)[0])
	}
	if want := []string{"OPENAI_API_KEY", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "REPO_URL"}; !ok || !slices.Equal(named, want) {
		t.Errorf("the README's Slack in five minutes exports %q, want %q", named, want)
	}
	out, err := cmd.CombinedOutput()
	if err != nil && strings.HasPrefix(string(out), "sandbox: ") && strings.Count(strings.TrimSpace(string(out)), "\n") == 0 && os.Getenv("THREADSMITH_REQUIRE_SANDBOX") != "1" {
		t.Skipf("no sandbox on this machine (the example's sandbox.mode is auto): %s", out)
	}
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "\nok") {
		t.Fatalf("-check of the copied example: %v\n%s", err, out)
	}
}
