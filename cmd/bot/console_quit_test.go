package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// consoleProcessEnv is the environment of a console started as a process:
// the test's, without Slack or OpenAI settings but the fake model's, and a
// cache folder of the test.
func consoleProcessEnv(t *testing.T, llmURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLACK_") && !strings.HasPrefix(kv, "OPENAI_") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CACHE_HOME="+t.TempDir(), "TERM=dumb", "USER=alice",
		"OPENAI_API_KEY=sk-console", "OPENAI_BASE_URL="+llmURL, "OPENAI_MODEL=fake-model")
}

// committedRepo is a new repository with one commit.
func committedRepo(t *testing.T) string {
	repo := t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=main")
	gitremote.WriteFile(t, repo, "README.md", "# demo\n")
	gitremote.GitInput(t, repo, nil, nil, "add", "-A")
	gitremote.GitInput(t, repo, nil, nil, "commit", "--quiet", "-m", "init")
	return repo
}

// The binary with a request piped in: it answers, and exits 0 by itself.
func TestConsolePipedToTheBinaryExitsZero(t *testing.T) {
	t.Parallel()
	bin := buildBot(t)
	llm := llmfake.New(t)
	llm.Handle(func(r llmfake.Request) llmfake.Response {
		return llmfake.TextReply("answer to: " + lastUserText(r))
	})
	repo := committedRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-console")
	cmd.Dir, cmd.Env = repo, consoleProcessEnv(t, llm.URL())
	cmd.Stdin = strings.NewReader("hello there\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the console with piped input: %v (want exit 0)\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "bot> answer to: hello there") {
		t.Fatalf("the piped request was not answered:\n%s", out.String())
	}
	// The shell's prompt that follows starts on a line of its own.
	if !strings.HasSuffix(out.String(), "\n") {
		t.Errorf("the console's output does not end its last line: %q", out.String()[max(0, out.Len()-80):])
	}
}

// Ctrl-D while the answer streams: the bot quits, saying the run stopped
// because the person quit (not that it restarts), once, with the partial
// answer shown once.
func TestConsoleQuitMidAnswerSaysYouQuit(t *testing.T) {
	t.Parallel()
	bin := buildBot(t)
	llm := llmfake.New(t)
	llm.Push(llmfake.Stream(llmfake.Content("Partial ", "answer so far"), llmfake.Hang()))
	repo := committedRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	term := startTerminal(t, bin, repo, consoleProcessEnv(t, llm.URL()), "-console")
	at := term.waitFor(ctx, 0, "new session ")
	term.typeText("tell me slowly\n")
	term.waitFor(ctx, at, "answer so far")
	term.typeText("\x04")
	select {
	case <-term.exited:
	case <-ctx.Done():
		t.Fatal("the bot did not quit on Ctrl-D")
	}
	if term.err != nil {
		t.Fatalf("the bot quit with %v, want exit 0", term.err)
	}
	got := term.output()
	if !strings.Contains(got, "stopped: you quit") || strings.Contains(got, "restarting") {
		t.Errorf("quitting is not reported as the person's:\n%s", got)
	}
	if n := strings.Count(got, "⏹"); n != 1 {
		t.Errorf("%d stop notices, want one:\n%s", n, got)
	}
	if n := strings.Count(got, "Partial answer so far"); n != 1 {
		t.Errorf("the partial answer shows %d times, want once:\n%s", n, got)
	}
}
