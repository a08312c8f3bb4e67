package main

import (
	"strings"
	"testing"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A !diff whose upload times out after Slack shared the file (the answer of
// files.completeUploadExternal is lost) is retried by the outbox; the retry
// finds the file in the thread and the patch shows once.
func TestSlackDiffUploadRetriedAfterATimeoutShowsOnce(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	pushRun(e)
	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")

	e.slack.LoseResponseNext("files.completeUploadExternal")
	e.slack.UserMessage(slackChan, aliceID, "!diff", root)
	files := func() []string {
		var shared []string
		for _, m := range e.slack.Messages(slackChan, root) {
			for _, f := range m.Files {
				shared = append(shared, f.Name)
			}
		}
		return shared
	}
	e.waitFor("the patch in the thread", func() bool { return len(files()) > 0 })
	// The thread's lane keeps order: !status is answered after the upload
	// and its retry are done with.
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Last push")

	shared := files()
	if len(shared) != 1 || !strings.HasSuffix(shared[0], ".diff") {
		t.Errorf("files in the thread %q, want the patch once:\n%s", shared, e.transcript(slackChan, root))
	}
	if ups := e.slack.Uploads(); len(ups) != 1 {
		t.Errorf("%d uploads started, want 1 (the retry found the file)", len(ups))
	}
}

// The same on Discord: the upload's message was created but its answer lost;
// the retry carries the same nonce with enforce_nonce, and Discord returns
// the first message instead of creating another.
func TestDiscordDiffUploadRetriedAfterATimeoutShowsOnce(t *testing.T) {
	t.Parallel()
	e := newDiscordEnv(t)
	fake := e.fake
	e.scripts.add("notes", func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("wrote notes")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"notes.txt","content":"one\ntwo\n"}`})
	})
	th, _ := e.open("notes: write notes")
	e.waitBot(th, "⬆️ pushed")
	e.waitBot(th, "⏱")

	upload := func(r discordfake.Request) bool {
		return r.Method == "POST" && strings.Contains(r.Path, "/channels/"+th+"/messages") && len(r.Files) == 1
	}
	fake.LoseResponseWhen(upload)
	fake.SlashCommand(th, dAlice, "diff", nil)
	var attempts []discordfake.Request
	err := fake.WaitFor(e.ctx, func() bool {
		attempts = attempts[:0]
		for _, r := range fake.Requests() {
			if upload(r) {
				attempts = append(attempts, r)
			}
		}
		return len(attempts) == 2
	})
	if err != nil {
		t.Fatalf("waiting for the upload and its retry: %d attempts: %v\n%s", len(attempts), err, e.transcript(th))
	}
	if !attempts[0].Lost || attempts[1].Lost || attempts[1].Status != 200 {
		t.Errorf("attempts %+v, want the first lost and the retry answered", attempts)
	}
	files := 0
	for _, m := range fake.Messages(th) {
		files += len(m.Attachments)
	}
	if files != 1 {
		t.Errorf("%d files in the thread, want the patch once:\n%s", files, e.transcript(th))
	}
}
