package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// syncBuffer is a bytes.Buffer safe for the console's writer goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestConsoleRunsOnTheCurrentRepository(t *testing.T) {
	llm := llmfake.New(t)
	llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "ls", Args: `{}`}),
		llmfake.TextReply("The repository has a README."),
	)
	repo := t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=main")
	gitremote.WriteFile(t, repo, "README.md", "# demo\n")
	gitremote.GitInput(t, repo, nil, nil, "add", "-A")
	gitremote.GitInput(t, repo, nil, nil, "commit", "--quiet", "-m", "init")
	t.Chdir(repo)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())

	in, feed := io.Pipe()
	out := &syncBuffer{}
	m := NewMain()
	m.Console = true
	m.ConfigPath = filepath.Join(t.TempDir(), "absent.yaml")
	m.Env = func(k string) (string, bool) {
		switch k {
		case "OPENAI_API_KEY":
			return "sk-console", true
		case "OPENAI_BASE_URL":
			return llm.URL(), true
		case "OPENAI_MODEL":
			return "fake-model", true
		}
		return "", false
	}
	m.Stdin, m.Stdout, m.Stderr = in, out, io.Discard
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	defer m.Close()
	if _, err := io.WriteString(feed, "what is in this repository?\n"); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "The repository has a README.") || !strings.Contains(out.String(), "⏱") || !strings.Contains(out.String(), "✓ `ls`") {
		select {
		case <-ctx.Done():
			t.Fatalf("no answer on the console:\n%s", out.String())
		case <-time.After(20 * time.Millisecond): // polling a terminal's output: nothing to wait on
		}
	}
	got := out.String()
	for _, want := range []string{"threadsmith console", "bot> ⏳ working…", "bot> ✓ `ls`", "bot> The repository has a README."} {
		if !strings.Contains(got, want) {
			t.Errorf("console output lacks %q:\n%s", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "data")); err == nil {
		t.Fatal("console mode wrote its data into the repository")
	}
}
