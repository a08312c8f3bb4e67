package main

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// offsetClock is the bridge's clock in the notification tests: real time
// plus what the test added, so that a run can take two minutes in no time
// while everything else keeps its pace.
type offsetClock struct{ d atomic.Int64 }

func (c *offsetClock) Now() time.Time          { return time.Now().Add(time.Duration(c.d.Load())) }
func (c *offsetClock) Advance(d time.Duration) { c.d.Add(int64(d)) }

// notifyScript answers a prompt holding "slow" after moving the clock two
// minutes, any other at once; every answer names <@other> as a model may.
func notifyScript(clk *offsetClock, other string) func(llmfake.Request) llmfake.Response {
	return func(r llmfake.Request) llmfake.Response {
		if strings.Contains(lastUserText(r), "slow") {
			clk.Advance(2 * time.Minute)
			return llmfake.TextReply("slow one done, ask <@" + other + ">")
		}
		return llmfake.TextReply("quick one done, ask <@" + other + ">")
	}
}

// A Slack run that took longer than agent.notify_after ends with an answer
// that mentions the requester, once, with the bot's own <@…> on the posted
// answer (not an edit); the model's <@OTHER> notifies nobody; a short run
// mentions nobody, and notify_after 0s turns the mention off.
func TestSlackLongRunMentionsTheRequester(t *testing.T) {
	t.Parallel()
	const other = "U0OTHER01"
	run := func(t *testing.T, notifyAfter time.Duration) *slackEnv {
		clk := &offsetClock{}
		e := newSlackFakes(t, withConfig(func(c *config.Config) { c.Agent.NotifyAfter = notifyAfter }))
		e.now = clk.Now
		e.start()
		e.llm.Handle(notifyScript(clk, other))
		return e
	}
	t.Run("on", func(t *testing.T) {
		e := run(t, time.Minute)
		slow := e.slack.Mention(slackChan, aliceID, "a slow one", "")
		e.waitText(slackChan, slow, "slow one done")
		notices := e.slack.Notices()
		if len(notices) != 1 {
			t.Fatalf("notices = %+v, want one, for alice", notices)
		}
		n := notices[0]
		if n.Method != "chat.postMessage" || !slices.Equal(n.Users, []string{aliceID}) || len(n.Special) > 0 || len(n.Groups) > 0 ||
			!strings.HasPrefix(n.Text, "<@"+aliceID+"> ") || !strings.Contains(n.Text, "slow one done") {
			t.Errorf("the notice is %s %+v %q, want the posted answer starting with <@%s> and notifying only them", n.Method, n.Mentioned, n.Text, aliceID)
		}
		if !strings.Contains(n.Text, "&lt;@"+other+"&gt;") {
			t.Errorf("the model's mention is not shown inert: %q", n.Text)
		}

		quick := e.slack.Mention(slackChan, aliceID, "a quick one", "")
		e.waitText(slackChan, quick, "quick one done")
		if got := e.slack.Notices(); len(got) != 1 {
			t.Errorf("after a short run, notices = %+v, want still the one", got)
		}
	})
	t.Run("off", func(t *testing.T) {
		e := run(t, 0)
		slow := e.slack.Mention(slackChan, aliceID, "a slow one", "")
		e.waitText(slackChan, slow, "slow one done")
		if got := e.slack.Notices(); len(got) != 0 {
			t.Errorf("with notify_after 0s, notices = %+v, want none", got)
		}
	})
}

// The same on Discord: the answer of a long run holds the bot's <@requester>
// with allowed_mentions.users = [requester]; the model's <@bob> pings
// nobody; a short run or notify_after 0s pings nobody.
func TestDiscordLongRunMentionsTheRequester(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, notifyAfter time.Duration) *discordEnv {
		clk := &offsetClock{}
		e := newDiscordEnv(t, func(c *config.Config, e *discordEnv) {
			c.Agent.NotifyAfter = notifyAfter
			e.now = clk.Now
		})
		e.llm.Handle(notifyScript(clk, dBob))
		return e
	}
	// answerBody is the allowed_mentions of the POST that made the message.
	allowed := func(t *testing.T, e *discordEnv, content string) *discordfake.AllowedMentions {
		t.Helper()
		for _, r := range e.fake.Requests() {
			if r.Method != "POST" || !strings.HasSuffix(r.Route, "/messages") {
				continue
			}
			var body struct {
				Content         string                       `json:"content"`
				AllowedMentions *discordfake.AllowedMentions `json:"allowed_mentions"`
			}
			if json.Unmarshal(r.Body, &body) == nil && body.Content == content {
				return body.AllowedMentions
			}
		}
		t.Fatalf("no POST made the message %q", content)
		return nil
	}
	t.Run("on", func(t *testing.T) {
		e := run(t, time.Minute)
		th, _ := e.open("a slow one")
		m := e.waitBot(th, "slow one done")
		if !strings.HasPrefix(m.Content, "<@"+dAlice+"> ") {
			t.Errorf("the answer %q does not start with the bot's mention of alice", m.Content)
		}
		if am := allowed(t, e, m.Content); am == nil || !slices.Equal(am.Users, []string{dAlice}) || len(am.Parse) > 0 || len(am.Roles) > 0 {
			t.Errorf("allowed_mentions = %+v, want users [%s] only", am, dAlice)
		}
		notices := e.fake.Notices()
		if len(notices) != 1 || notices[0].Edit || !slices.Equal(notices[0].Users, []string{dAlice}) || notices[0].Everyone || len(notices[0].Roles) > 0 {
			t.Fatalf("notices = %+v, want one post pinging alice only", notices)
		}

		th2, _ := e.open("a quick one")
		m2 := e.waitBot(th2, "quick one done")
		if strings.HasPrefix(m2.Content, "<@") {
			t.Errorf("a short run's answer %q mentions someone", m2.Content)
		}
		if got := e.fake.Notices(); len(got) != 1 {
			t.Errorf("after a short run, notices = %+v, want still the one", got)
		}
	})
	t.Run("off", func(t *testing.T) {
		e := run(t, 0)
		th, _ := e.open("a slow one")
		m := e.waitBot(th, "slow one done")
		if strings.HasPrefix(m.Content, "<@") {
			t.Errorf("with notify_after 0s the answer %q mentions someone", m.Content)
		}
		if got := e.fake.Notices(); len(got) != 0 {
			t.Errorf("with notify_after 0s, notices = %+v, want none", got)
		}
	})
}
