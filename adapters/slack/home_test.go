package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// lister is a recorder that lists sessions per user, as the bridge's
// handler does.
type lister struct {
	*recorder
	lists map[string][]chat.SessionSummary
}

func (l *lister) Sessions(_ context.Context, user string) ([]chat.SessionSummary, error) {
	return l.lists[user], nil
}

// Opening the Home tab is acknowledged at once and publishes the person's
// own sessions there, over Socket Mode and over the HTTP Events API; it is
// never input.
func TestHomeTabShowsTheOpenersSessions(t *testing.T) {
	for _, mode := range []string{"socket", "http"} {
		t.Run(mode, func(t *testing.T) {
			srv := slackfake.New(t)
			h := &lister{recorder: newRecorder(), lists: map[string][]chat.SessionSummary{
				"U0ALICE": {{State: "running", Repo: "app", Branch: "bot/a", LastActivity: time.Now(), Cost: 0.5,
					ThreadURL: "https://fake.slack.com/archives/C0DEV/p1", PageURL: "https://bot.example.com/s/1"}},
				"U0BOB": {{State: "idle", Repo: "secret-repo", Branch: "bot/b"}},
			}}
			if mode == "socket" {
				startSocket(t, srv, h)
			} else {
				startHTTP(t, srv, h, signingSecret, slackfake.TamperNone)
			}
			ctx := testContext(t)
			ev := srv.OpenHome("U0ALICE")
			if _, err := srv.WaitEventAck(ctx, ev); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.WaitCalls(ctx, "views.publish", 1); err != nil {
				t.Fatal(err)
			}
			v, ok := srv.HomeView("U0ALICE")
			var view struct {
				Type   string `json:"type"`
				Blocks []struct {
					Type string                `json:"type"`
					Text struct{ Text string } `json:"text"`
				} `json:"blocks"`
			}
			if !ok || json.Unmarshal(v, &view) != nil || view.Type != "home" || len(view.Blocks) != 2 {
				t.Fatalf("Home view = %s, want a header and alice's one session", v)
			}
			line := view.Blocks[1].Text.Text
			for _, want := range []string{"running", "`app`", "`bot/a`", "$0.50", "<https://fake.slack.com/archives/C0DEV/p1|thread>", "<https://bot.example.com/s/1|page>"} {
				if !strings.Contains(line, want) {
					t.Errorf("alice's line %q lacks %q", line, want)
				}
			}
			if strings.Contains(string(v), "secret-repo") {
				t.Errorf("alice's Home shows bob's session: %s", v)
			}
			if n := len(h.Calls()); n != 0 {
				t.Errorf("opening the Home tab reached Receive %d times, want 0", n)
			}
		})
	}
}

// A session's repository and branch names are the model's to choose (it
// names its branches): on the Home tab they stay text, never a mention,
// a channel link or a broadcast, even when they close their code span.
func TestHomeTabNamesMentionNobody(t *testing.T) {
	srv := slackfake.New(t)
	h := &lister{recorder: newRecorder(), lists: map[string][]chat.SessionSummary{
		"U0ALICE": {{State: "idle", Repo: "r`<!channel>`", LastActivity: time.Now(),
			Branch: "b`<!here> <@U0BOB> <#C0DEV> <!subteam^S1>`&lt;!everyone&gt;"}},
	}}
	startSocket(t, srv, h)
	ctx := testContext(t)
	if _, err := srv.WaitEventAck(ctx, srv.OpenHome("U0ALICE")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitCalls(ctx, "views.publish", 1); err != nil {
		t.Fatal(err)
	}
	v, ok := srv.HomeView("U0ALICE")
	var view struct {
		Blocks []struct {
			Text struct{ Text string } `json:"text"`
		} `json:"blocks"`
	}
	if !ok || json.Unmarshal(v, &view) != nil || len(view.Blocks) != 2 {
		t.Fatalf("Home view = %s, want a header and one session", v)
	}
	line := view.Blocks[1].Text.Text
	for _, bad := range []string{"<!", "<@", "<#"} {
		if strings.Contains(line, bad) {
			t.Errorf("Home line %q holds %q: a mention or link from a name", line, bad)
		}
	}
	if !strings.Contains(line, "&lt;!channel&gt;") || !strings.Contains(line, "&lt;@U0BOB&gt;") {
		t.Errorf("Home line %q lost the names' text", line)
	}
}

// A session's line is published in verbatim sections, so that Slack parses
// no "@channel" or "#channel" of a name, and a line longer than a section
// holds (a branch name of nested folders) is split, not refused.
func TestHomeTabSectionsAreVerbatimAndFit(t *testing.T) {
	srv := slackfake.New(t)
	long := "bot/" + strings.Repeat("deep/", 700) + "@channel"
	h := &lister{recorder: newRecorder(), lists: map[string][]chat.SessionSummary{
		"U0ALICE": {{State: "idle", Repo: "@here #general", Branch: long, LastActivity: time.Now()}},
	}}
	startSocket(t, srv, h)
	ctx := testContext(t)
	if _, err := srv.WaitEventAck(ctx, srv.OpenHome("U0ALICE")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitCalls(ctx, "views.publish", 1); err != nil {
		t.Fatal(err)
	}
	v, ok := srv.HomeView("U0ALICE")
	if !ok {
		t.Fatal("views.publish was refused: the Home tab shows nothing")
	}
	var view struct {
		Blocks []struct {
			Type string `json:"type"`
			Text struct {
				Text     string `json:"text"`
				Verbatim bool   `json:"verbatim"`
			} `json:"text"`
		} `json:"blocks"`
	}
	if json.Unmarshal(v, &view) != nil || len(view.Blocks) < 3 {
		t.Fatalf("Home view = %.300s…, want a header and the line in two sections or more", v)
	}
	var all strings.Builder
	for _, b := range view.Blocks[1:] {
		if b.Type != "section" || !b.Text.Verbatim {
			t.Errorf("block %s %.60q… is not a verbatim section", b.Type, b.Text.Text)
		}
		all.WriteString(b.Text.Text)
	}
	for _, want := range []string{"@here #general", "@channel"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the sections lost %q", want)
		}
	}
}
