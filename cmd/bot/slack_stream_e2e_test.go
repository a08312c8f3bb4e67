package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// With slack.streaming auto, a run's status streams as the model writes
// (appends, not edits), the stream ends with the run, and the answer, with
// the <!channel> the model wrote, arrives whole and notifies no one; where
// the workspace refuses streaming, the same runs edit their status, with
// one INFO line for the workspace and no WARN.
func TestSlackStreamingStatusEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fake    []slackfake.Option
		streams bool
	}{
		{"offered", nil, true},
		{"refused", []slackfake.Option{slackfake.WithoutStreaming("not_allowed")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSlackFakes(t, withFake(append(installedFrom(t, "slack-app-manifest.yaml"), tc.fake...)...),
				withConfig(func(c *config.Config) { c.Slack.Streaming = "auto" }))
			logs := e.captureLogs()
			e.start()
			root := ""
			for run := range 2 {
				half := make(chan struct{})
				e.llm.Push(llmfake.Stream(llmfake.Content(fmt.Sprintf("run %d first half <!channel>", run)), llmfake.Await(half),
					llmfake.Content(" and second half."), llmfake.Finish("stop"), llmfake.Done()))
				if run == 0 {
					root = e.slack.Mention(slackChan, aliceID, "hello", "")
				} else {
					e.slack.UserMessage(slackChan, aliceID, "again", root)
				}
				e.waitText(slackChan, root, fmt.Sprintf("run %d first half", run))
				close(half)
				e.waitText(slackChan, root, fmt.Sprintf("run %d first half <!channel> and second half.", run))
			}
			started := 0
			for _, c := range e.slack.CallsTo("chat.startStream") {
				if c.Error == "" {
					started++
				}
			}
			e.waitFor("every stream stopped", func() bool { return e.slack.StreamStops() == started },
				func() string { return fmt.Sprintf("%d of %d streams stopped", e.slack.StreamStops(), started) })
			appends := len(e.slack.CallsTo("chat.appendStream"))
			if tc.streams && (started != 2 || appends == 0) {
				t.Errorf("%d streams started, %d appends; want 2 streams (one per run) that grew", started, appends)
			}
			if !tc.streams && (len(e.slack.CallsTo("chat.startStream")) != 1 || appends != 0) {
				t.Errorf("chat.startStream called %d times, %d appends; want 1 (the refusal remembered) and none",
					len(e.slack.CallsTo("chat.startStream")), appends)
			}
			if n := e.slack.Notices(); len(n) != 0 {
				t.Errorf("notices %+v, want none", n)
			}
			out := logs()
			if strings.Contains(out, "level=WARN") {
				t.Errorf("the bot warned:\n%s", out)
			}
			if want := map[bool]int{true: 0, false: 1}[tc.streams]; strings.Count(out, "streaming refused") != want {
				t.Errorf("%d log lines about the refusal, want %d", strings.Count(out, "streaming refused"), want)
			}
		})
	}
}
