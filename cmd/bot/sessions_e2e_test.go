package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// !sessions and the Home tab on Slack, through Main on the fakes, an app
// installed from slack-app-manifest.yaml: alice asked in eleven threads and
// bob in one; her list, in a note only she sees and on her Home tab, is her
// ten newest threads, newest first, each with its state, repository,
// branch, cost, thread link and page link, and nothing of bob's.
func TestSlackSessionsListsTheAskersTenNewest(t *testing.T) {
	t.Parallel()
	const bobID = "U0BOB0001"
	e := newSlackEnv(t, withFake(installedFrom(t, "slack-app-manifest.yaml")...), withConfig(func(c *config.Config) {
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = "e2e-session-key-0123456789abcdef0123"
	}))
	e.slack.AddUser(slackfake.User{ID: bobID, Name: "bob", RealName: "Bob"})
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })
	// The threads are spread over four channels: Slack's budget for posts
	// is a channel's, and one channel would set the pace of every answer.
	chanOf := map[string]string{}
	ask := func(user, ch, text string) string {
		root := e.slack.Mention(ch, user, text, "")
		e.waitText(ch, root, "answer to: "+text)
		e.waitText(ch, root, "⏱")
		chanOf[root] = ch
		return root
	}
	var alice []string // newest first
	for i := range 11 {
		ch := slackChan
		if i%4 != 0 {
			ch = fmt.Sprintf("C0SESSIONS%d", i%4)
		}
		alice = append([]string{ask(aliceID, ch, fmt.Sprintf("look at part %d", i))}, alice...)
	}
	bob := ask(bobID, slackChan, "look at the secret part")
	threadLink := func(root string) string {
		return "https://fake.slack.test/archives/" + chanOf[root] + "/p" + strings.ReplaceAll(root, ".", "")
	}
	// checkList holds alice's list (one line a session) to her ten newest.
	checkList := func(where string, lines []string) {
		t.Helper()
		if len(lines) != 10 {
			t.Fatalf("%s: %d sessions, want 10:\n%s", where, len(lines), strings.Join(lines, "\n"))
		}
		for i, l := range lines {
			for _, want := range []string{threadLink(alice[i]), "http://pages.test/s/", "`app`", "`bot/slack-", "$0.00"} {
				if !strings.Contains(l, want) {
					t.Errorf("%s: line %d = %q, want %q in it", where, i, l, want)
				}
			}
		}
		all := strings.Join(lines, "\n")
		if strings.Contains(all, threadLink(alice[10])) || strings.Contains(all, threadLink(bob)) {
			t.Errorf("%s shows alice's oldest or bob's session:\n%s", where, all)
		}
	}

	// !sessions in a new message of the channel: a note to alice alone.
	root := e.slack.Mention(slackChan, aliceID, "!sessions", "")
	var note slackfake.Ephemeral
	e.waitFor("the sessions note", func() bool {
		for _, eph := range e.slack.Ephemerals() {
			if eph.User == aliceID && strings.Contains(eph.Text, "Your sessions") {
				note = eph
				return true
			}
		}
		return false
	})
	if !note.Visible || note.Channel != slackChan {
		t.Errorf("note = %+v, want it visible to alice in %s", note, slackChan)
	}
	checkList("!sessions", strings.Split(note.Text, "\n")[1:])
	if got := e.botMessages(slackChan, root); len(got) != 0 {
		t.Errorf("the list was posted for all to see: %+v", got)
	}
	if n := len(e.llm.Requests()); n != 12 {
		t.Errorf("LLM requests = %d, want 12 (!sessions makes none)", n)
	}

	// The Home tab: published when alice opens it, with the same list.
	e.slack.OpenHome(aliceID)
	if _, err := e.slack.WaitCalls(e.ctx, "views.publish", 1); err != nil {
		t.Fatal(err)
	}
	raw, ok := e.slack.HomeView(aliceID)
	var view struct {
		Blocks []struct {
			Type string
			Text struct{ Text string }
		}
	}
	if !ok || json.Unmarshal(raw, &view) != nil || len(view.Blocks) == 0 || view.Blocks[0].Type != "header" {
		t.Fatalf("alice's Home tab = %s, %v; want a header and her sessions", raw, ok)
	}
	var lines []string
	for _, b := range view.Blocks[1:] {
		lines = append(lines, b.Text.Text)
	}
	checkList("the Home tab", lines)

	// Bob's list is his one thread.
	e.slack.Mention(slackChan, bobID, "!sessions", bob)
	e.waitFor("bob's note", func() bool {
		for _, eph := range e.slack.Ephemerals() {
			if eph.User == bobID && strings.Contains(eph.Text, "Your sessions") {
				if lines := strings.Split(eph.Text, "\n")[1:]; len(lines) != 1 || !strings.Contains(lines[0], threadLink(bob)) {
					t.Errorf("bob's list = %q, want his one thread", eph.Text)
				}
				return true
			}
		}
		return false
	})
	if err := e.slack.WaitAllAcked(e.ctx); err != nil {
		t.Fatal(err)
	}
	// One note for alice's !sessions, though Slack delivered the mention
	// twice (app_mention and message).
	n := 0
	for _, eph := range e.slack.Ephemerals() {
		if eph.User == aliceID && strings.Contains(eph.Text, "Your sessions") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("alice got %d sessions notes, want 1", n)
	}
}
