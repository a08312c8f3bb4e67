package main

import (
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// A schedule configured as an operator writes it: at its time the bot
// opens a thread at the channel's top level titled with the schedule's
// name, the prompt is the session's request, the bot answers there, a
// person's reply there is a follow-up as in any thread, and !schedules
// lists the schedule.
func TestSlackScheduleOpensAThreadAndAnswers(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t, withConfig(func(c *config.Config) {
		c.Schedules = []config.Schedule{{Name: "nightly", Cron: "0 9 * * *", Channel: slackChan, Prompt: "check the nightly build"}}
	}))
	e.slack.AddChannel(slackfake.Channel{ID: slackChan, Name: "e2e"})
	clk := clock.NewManual(time.Date(2026, 3, 2, 8, 59, 0, 0, time.UTC))
	e.scheduleClock = clk
	e.llm.Push(llmfake.TextReply("The nightly build is green."), llmfake.TextReply("You're welcome."))
	e.start()

	// Nothing the fake Slack sees announces it: poll.
	for clk.Waiting() == 0 {
		select {
		case <-e.ctx.Done():
			t.Fatal("the schedules never waited for their time")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if top := e.slack.Messages(slackChan, ""); len(top) != 0 {
		t.Fatalf("messages before the schedule's time: %+v", top)
	}
	clk.Advance(time.Minute)
	var root string
	e.waitFor("the schedule's thread", func() bool {
		for _, m := range e.slack.Messages(slackChan, "") {
			if m.User == e.slack.BotUserID() && strings.HasPrefix(m.Text, "⏰ nightly") {
				root = m.TS
				return true
			}
		}
		return false
	})
	e.waitText(slackChan, root, "The nightly build is green.")
	reqs := e.waitRequests(1)
	if got := userTexts(reqs[0]); len(got) != 1 || !strings.Contains(got[0], "check the nightly build") {
		t.Errorf("the model was asked %q, want the schedule's prompt", got)
	}

	e.slack.UserMessage(slackChan, aliceID, "thanks", root)
	e.waitText(slackChan, root, "You're welcome.")
	e.slack.UserMessage(slackChan, aliceID, "!schedules", root)
	e.waitText(slackChan, root, "nightly_ `0 9 * * *` (UTC) · slack C0E2E0001 · a new thread each time · next ")
	if top := e.slack.Messages(slackChan, ""); len(top) != 1 {
		t.Errorf("%d top-level messages, want the one thread", len(top))
	}
}
