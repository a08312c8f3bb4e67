package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

var consoleEnv = envOf("OPENAI_API_KEY", "sk-local", "OPENAI_MODEL", "local-model")

// An empty repository (git init, nothing committed) gets "make a first
// commit", not a missing branch.
func TestConsoleAsksForAFirstCommit(t *testing.T) {
	repo, cache := t.TempDir(), t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=master")
	t.Chdir(repo)
	t.Setenv("XDG_CACHE_HOME", cache)
	_, err := consoleConfig(filepath.Join(repo, "absent.yaml"), "", consoleEnv)
	if err == nil || !strings.Contains(err.Error(), "make a first commit") || strings.Contains(err.Error(), "no branch") {
		t.Fatalf("consoleConfig in an empty repository: %v, want it to ask for a first commit", err)
	}
}

// A repository another user owns: the console says what git says and how
// to fix it, whether or not the user's own git config trusts it, and sets
// no safe.directory itself.
func TestConsoleRefusesARepositoryOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a repository to another user")
	}
	repo, cache := t.TempDir(), t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=main")
	gitremote.GitInput(t, repo, nil, nil, "commit", "--quiet", "--allow-empty", "-m", "init")
	if err := filepath.Walk(repo, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	t.Chdir(repo)
	t.Setenv("XDG_CACHE_HOME", cache)
	global := filepath.Join(t.TempDir(), "gitconfig")
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")

	_, err := consoleConfig(filepath.Join(repo, "absent.yaml"), "", consoleEnv)
	if err == nil {
		t.Fatal("the console took a repository git refuses")
	}
	for _, want := range []string{"dubious ownership", repo, "another user", "chown", "safe.directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "not one") {
		t.Errorf("refusal %q says this is not a git repository", err)
	}
	if _, statErr := os.Stat(global); !os.IsNotExist(statErr) {
		t.Errorf("the console wrote a git config (%v): trusting the repository is the user's call", statErr)
	}

	// The user's git trusts it: the bot's own git would still refuse it.
	if err := os.WriteFile(global, []byte("[safe]\n\tdirectory = *\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = consoleConfig(filepath.Join(repo, "absent.yaml"), "", consoleEnv)
	if err == nil || !strings.Contains(err.Error(), "belongs to nobody") && !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("with safe.directory = *: %v, want the refusal naming the owner", err)
	}
}

// Changes not committed in the repository are not in the session: the
// console says so at start, with the commit it works on; a clean
// repository gets no such line.
func TestConsoleSaysUncommittedChangesAreLeftOut(t *testing.T) {
	llm := llmfake.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	repo, m, _, out := startConsole(t, ctx, "sk-console", llm.URL())
	waitConsole(t, ctx, out, "new session ")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Contains(got, "uncommitted") {
		t.Fatalf("a clean repository is said to have uncommitted changes:\n%s", got)
	}
	gitremote.WriteFile(t, repo, "README.md", "# changed\n")
	gitremote.WriteFile(t, repo, "new.txt", "new\n")
	head := strings.TrimSpace(gitremote.Git(t, repo, "rev-parse", "--short", "HEAD"))
	m, _, out = runConsole(t, ctx, "sk-console", llm.URL())
	defer m.Close()
	got := waitConsole(t, ctx, out, "new session ", "uncommitted")
	if want := "you have uncommitted changes in 2 files: I work on the last commit `" + head + "`"; !strings.Contains(got, want) {
		t.Fatalf("the console does not say %q:\n%s", want, got)
	}
}
