package main

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The buttons of a run's status message, clicked in the fake Discord: an
// INTERACTION_CREATE of type 3 that the bot answers with a deferred update
// and takes as the command the button stands for.

func discordButtonIDs(bs []discordfake.Button) []string {
	var ids []string
	for _, b := range bs {
		ids = append(ids, b.CustomID+b.URL)
	}
	return ids
}

// statusMessage waits for the bot's first message in a session thread.
func (e *discordEnv) statusMessage(th string) discordfake.Message {
	e.t.Helper()
	m, err := e.fake.WaitForMessage(e.ctx, th, func(m discordfake.Message) bool { return m.AuthorBot })
	if err != nil {
		e.t.Fatalf("no status message in %s: %v", th, err)
	}
	return m
}

// waitButtons waits until a message's buttons are want (by custom_id).
func (e *discordEnv) waitButtons(msg string, want ...string) []discordfake.Button {
	e.t.Helper()
	var got []discordfake.Button
	err := e.fake.WaitFor(e.ctx, func() bool {
		got = e.fake.Buttons(msg)
		return slices.Equal(discordButtonIDs(got), want)
	})
	if err != nil {
		e.t.Fatalf("buttons of %s: got %v, want %v: %v", msg, discordButtonIDs(got), want, err)
	}
	return got
}

func TestDiscordButtons(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	env := newDiscordEnv(t)
	t.Run("stop", func(t *testing.T) {
		e := env.with(t)
		started := make(chan struct{}, 1)
		var n atomic.Int32
		e.scripts.add("bstop", func(r llmfake.Request) llmfake.Response {
			if n.Add(1) == 1 {
				started <- struct{}{}
				return llmfake.Stream(llmfake.Content("thinking about it"), llmfake.Hang())
			}
			return answerPrompt(r)
		})
		th, _ := e.open("bstop: do a long thing")
		select {
		case <-started:
		case <-e.ctx.Done():
			t.Fatal("the model request never arrived")
		}
		status := e.statusMessage(th)
		bs := e.waitButtons(status.ID, "stop")
		if bs[0].Style != 4 || bs[0].Label != "Stop" {
			t.Errorf("Stop = %+v, want a red (danger) Stop", bs[0])
		}
		begin := time.Now()
		id := e.fake.Click(th, status.ID, dAlice, "stop")
		e.waitBot(th, "stopped")
		if d := time.Since(begin); d > time.Second {
			t.Errorf("the thread said stopped %v after the click, want within 1s", d)
		}
		ia, err := e.fake.WaitForInteractionResponse(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ia.ResponseType != discordfake.ResponseDeferredMessageUpdate || ia.Latency >= 3*time.Second {
			t.Errorf("click answered with type %d after %v, want a deferred update (6) within 3s", ia.ResponseType, ia.Latency)
		}
		// The run is over: Stop no longer applies.
		e.waitButtons(status.ID)
		e.fake.UserMessage(th, dAlice, "go on")
		e.waitBot(th, "answer to: go on")
		if got := len(e.requestsFor("bstop")); got != 2 {
			t.Errorf("model requests: got %d, want 2", got)
		}
	})
	t.Run("diff, and a refused click", func(t *testing.T) {
		e := env.with(t)
		e.scripts.add("bdiff", func(r llmfake.Request) llmfake.Response {
			if r.LastMessage().Role == "tool" {
				return llmfake.TextReply("wrote notes")
			}
			return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"notes.txt","content":"one\ntwo\n"}`})
		})
		th, _ := e.open("bdiff: write notes")
		e.waitBot(th, "⬆️ pushed")
		status := e.statusMessage(th)
		// A local remote has no pull requests: Diff alone.
		e.waitButtons(status.ID, "diff")

		// bob lacks the role: an ephemeral note through the click's token,
		// and nothing runs.
		id := e.fake.Click(th, status.ID, dBob, "diff")
		ia, err := e.fake.WaitForInteractionResponse(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !ia.Ephemeral || ia.Original == nil || !strings.Contains(ia.Original.Content, "not allowed") || ia.Latency >= 3*time.Second {
			t.Errorf("bob's click: got ephemeral %v %+v after %v, want an ephemeral refusal within 3s", ia.Ephemeral, ia.Original, ia.Latency)
		}

		id = e.fake.Click(th, status.ID, dAlice, "diff")
		up, err := e.fake.WaitForMessage(e.ctx, th, func(m discordfake.Message) bool { return m.AuthorBot && len(m.Attachments) == 1 })
		if err != nil {
			t.Fatal(err)
		}
		if f := up.Attachments[0]; !strings.HasSuffix(f.Filename, ".diff") || !strings.Contains(string(f.Data), "+two") {
			t.Errorf("the patch: %s %q", f.Filename, f.Data)
		}
		if ia, _ := e.fake.Interaction(id); ia.ResponseType != discordfake.ResponseDeferredMessageUpdate {
			t.Errorf("alice's click answered with type %d, want 6", ia.ResponseType)
		}
		uploads := 0
		for _, m := range e.fake.Messages(th) {
			if m.AuthorBot && len(m.Attachments) > 0 {
				uploads++
			}
		}
		if uploads != 1 {
			t.Errorf("patches uploaded: %d, want 1 (bob's click ran nothing)", uploads)
		}
		if got := len(e.requestsFor("bdiff")); got != 2 {
			t.Errorf("model requests: got %d, want 2 (clicks are commands)", got)
		}
	})
}
