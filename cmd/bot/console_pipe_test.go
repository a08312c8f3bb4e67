package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// Requests piped to -console (input that is not a terminal, ending after
// them) are answered, their work committed and pushed, and then the bot
// stops by itself, cleanly. The commit names the session, not its key.
func TestConsolePipedRequestsAreAnsweredThenItQuits(t *testing.T) {
	llm := llmfake.New(t)
	llm.Handle(func(r llmfake.Request) llmfake.Response {
		asked := false
		for _, msg := range r.Messages {
			asked = asked || msg.Role == "user" && strings.Contains(msg.Content, "write a file")
		}
		switch {
		case r.LastMessage().Role == "tool":
			return llmfake.TextReply("wrote f.txt")
		case asked:
			return llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "bash", Args: `{"command":"echo hi > f.txt"}`})
		}
		return llmfake.TextReply("answer to: " + lastUserText(r))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	repo, m, feed, out := startConsole(t, ctx, "sk-console", llm.URL())
	defer m.Close()
	if _, err := io.WriteString(feed, "write a file\nand then?\n"); err != nil {
		t.Fatal(err)
	}
	if err := feed.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatalf("the bot did not stop after the piped requests:\n%s", out.String())
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.Err(); err != nil {
		t.Fatalf("the bot stopped with %v, want a clean stop", err)
	}
	got := out.String()
	// The second line reached the model (with the first, or in a run
	// of its own) before the bot quit.
	seen := false
	for _, r := range llm.Requests() {
		for _, msg := range r.Messages {
			seen = seen || msg.Role == "user" && strings.Contains(msg.Content, "and then?")
		}
	}
	if !seen {
		t.Errorf("the second piped line never reached the model")
	}
	for _, want := range []string{"bot> wrote f.txt", "⬆️ pushed"} {
		if !strings.Contains(got, want) {
			t.Errorf("the console did not show %q before quitting:\n%s", want, got)
		}
	}
	if strings.Contains(got, "interrupted") {
		t.Errorf("a run was cut off:\n%s", got)
	}
	// No one typed: the bot's lines are not run together.
	if strings.Contains(got, "_bot> ") || strings.Contains(got, "ms bot> ") {
		t.Errorf("lines run together:\n%s", got)
	}
	branch := strings.TrimSpace(gitremote.Git(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/bot/"))
	body := gitremote.Git(t, repo, "log", "-1", "--format=%B", branch)
	session := strings.TrimPrefix(branch, "bot/console-")
	if !strings.Contains(body, "Thread: console session "+session) || strings.Contains(body, "console//") {
		t.Errorf("the commit on %q names the thread as:\n%s\nwant Thread: console session %s", branch, body, session)
	}
}
