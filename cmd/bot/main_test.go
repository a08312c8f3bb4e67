package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// env is one end-to-end setup: the program on an in-process chat platform, the
// fake LLM, a bare git remote and a real SQLite file.
type env struct {
	t      *testing.T
	m      *Main
	chat   *chatfake.Adapter
	llm    *llmfake.Server
	remote *gitremote.Repo
	cfg    config.Config
	ctx    context.Context
}

var alice = chatfake.Person{ID: "U1", Name: "Alice", Email: "alice@example.com"}

// e2eConfig is the config the end-to-end tests start from: a fresh data
// folder, the fake LLM, and the one repository "app" at remote, the default;
// no platform enabled.
func e2eConfig(t *testing.T, llm *llmfake.Server, remote *gitremote.Repo) config.Config {
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.LLM.BaseURL = llm.URL()
	cfg.LLM.APIKey = "sk-test-key"
	cfg.LLM.Model = "fake-model"
	cfg.Slack.Enabled = false
	cfg.Workspace.DefaultRepo = "app"
	cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: remote.Path, DefaultBranch: "main"}}
	return cfg
}

func newEnv(t *testing.T, tweak ...func(*config.Config)) *env {
	t.Helper()
	e := &env{t: t, chat: chatfake.New("test", 3500), llm: llmfake.New(t)}
	e.remote = gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n", "main.go": "package main\n"}})
	cfg := e2eConfig(t, e.llm, e.remote)
	cfg.ShutdownGrace = 10 * time.Second
	for _, f := range tweak {
		f(&cfg)
	}
	e.cfg = cfg
	var cancel context.CancelFunc
	e.ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	e.start()
	return e
}

// start runs a Main on the env's config and platform (again after stop).
func (e *env) start() {
	e.t.Helper()
	m := NewMain()
	cfg := e.cfg
	m.Config = &cfg
	m.Adapters = []chat.Adapter{e.chat}
	m.Logger = slog.New(slog.NewTextHandler(e.t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := m.Run(e.ctx); err != nil {
		e.t.Fatalf("Run: %v", err)
	}
	e.m = m
	e.t.Cleanup(func() { _ = m.Close() })
}

func (e *env) stop() {
	e.t.Helper()
	if err := e.m.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
}

func (e *env) say(thread chat.ThreadRef, text string, mention bool) string {
	e.t.Helper()
	id, r, err := e.chat.Say(e.ctx, thread, alice, text, mention)
	if err != nil {
		e.t.Fatalf("Say(%q): %v", text, err)
	}
	if r != chat.Accepted {
		e.t.Fatalf("Say(%q): receipt %v", text, r)
	}
	return id
}

func (e *env) waitText(thread chat.ThreadRef, s string) {
	e.t.Helper()
	if err := e.chat.WaitText(e.ctx, thread, s); err != nil {
		e.t.Fatal(err)
	}
}

func thread(n string) chat.ThreadRef {
	return chat.ThreadRef{Platform: "test", Team: "T1", Channel: "C1", Thread: n}
}

func TestMentionRunsAndPushesTheBranch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	th := thread("100.1")
	e.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "write", Args: `{"path":"hello.txt","content":"hello world\n"}`}),
		llmfake.TextReply("I wrote ", "`hello.txt`."),
	)
	e.say(th, "add a hello file", true)
	e.waitText(th, "⏳ working…")
	e.waitText(th, "pushed `bot/test-")
	e.waitText(th, "I wrote `hello.txt`.")

	branches := e.remote.Branches(t)
	var branch string
	for _, b := range branches {
		if strings.HasPrefix(b, "bot/test-") {
			branch = b
		}
	}
	if branch == "" {
		t.Fatalf("no bot branch on the remote: %v", branches)
	}
	files := e.remote.Files(t, branch)
	if files["hello.txt"] != "hello world" { // Files trims the final newline
		t.Fatalf("hello.txt on %s = %q", branch, files["hello.txt"])
	}
	commits := e.remote.Commits(t, branch)
	if commits[0].Subject() != "add a hello file" || !strings.Contains(commits[0].Message, "Co-authored-by: Alice <alice@example.com>") {
		t.Fatalf("commit = %+v", commits[0])
	}
	e.waitText(th, "✓ `write` `hello.txt`")
	tr := e.chat.Transcript(th)
	if strings.Contains(tr, "working…") {
		e.waitText(th, "✓ `write`") // the status message's final edit may trail the posts
	}
	if !strings.Contains(tr, "in /") || !strings.Contains(tr, "context") {
		t.Fatalf("no footer in the thread:\n%s", tr)
	}
	if strings.Contains(tr, "sk-test-key") {
		t.Fatal("the API key reached the chat")
	}
}
