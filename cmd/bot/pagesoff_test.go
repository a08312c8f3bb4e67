package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The console starts with a team bot's config file, http.* and all: it
// ignores http.*, says so once in its banner, and !link says what is true
// of the console. (Not parallel: it changes the working directory.)
func TestTheConsoleIgnoresHTTPAndLinkSaysWhy(t *testing.T) {
	llm := llmfake.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	repo := t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=main")
	gitremote.WriteFile(t, repo, "README.md", "# demo\n")
	gitremote.GitInput(t, repo, nil, nil, "add", "-A")
	gitremote.GitInput(t, repo, nil, nil, "commit", "--quiet", "-m", "init")
	t.Chdir(repo)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "config.yaml")
	yaml := fmt.Sprintf("llm: {base_url: %q, api_key: sk-console, model: fake-model}\nsandbox: {mode: none}\nhttp:\n  listen: 127.0.0.1:0\n  public_url: https://bot.example.com\n  session_key: %s\n",
		llm.URL(), strings.Repeat("k", 40))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	in, feed := io.Pipe()
	out := &syncBuffer{}
	m := NewMain()
	m.Console, m.ConfigPath, m.Env = true, path, envOf()
	m.Stdin, m.Stdout, m.Stderr = in, out, io.Discard
	if err := m.Run(ctx); err != nil {
		t.Fatalf("the console refused a config file with http.*: %v", err)
	}
	defer m.Close()
	if m.HTTPAddr() != "" {
		t.Errorf("the console listens on %s", m.HTTPAddr())
	}
	llm.Push(llmfake.TextReply("hello there"))
	if _, err := io.WriteString(feed, "hello\n"); err != nil {
		t.Fatal(err)
	}
	waitConsole(t, ctx, out, "hello there", "⏱")
	if _, err := io.WriteString(feed, "!link\n"); err != nil {
		t.Fatal(err)
	}
	got := waitConsole(t, ctx, out, consolePagesOff)
	if strings.Count(got, consoleHTTPNote) != 1 {
		t.Errorf("the banner does not say once that http.* is ignored:\n%s", got)
	}
	if strings.Contains(got, "the operator sets") {
		t.Errorf("!link asks for keys the console cannot use:\n%s", got)
	}
}
