package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// BenchmarkSlackStreamingEightRuns measures what a person sees of 8 runs at
// once in 8 channels, each streaming its answer for streamWindow (a word
// every 100 ms), on the fake Slack with Slack's rate limits: the status
// message's visible updates per run and minute (successful chat.update and
// chat.appendStream calls), the 429s and the API calls, with
// slack.streaming off (edits) and auto (streams), in the same run; and
// auto where Slack would allow chat.appendStream only Tier 2 (20 a minute),
// as its start and stop, since its tier is not documented. Run it
// once: go test -run '^$' -bench BenchmarkSlackStreamingEightRuns -benchtime 1x ./cmd/bot
func BenchmarkSlackStreamingEightRuns(b *testing.B) {
	tier2 := slackfake.SlackRateLimits()
	tier2.Methods["chat.appendStream"] = slackfake.Tier2
	for _, c := range []struct {
		name, mode string
		limits     slackfake.RateLimits
	}{
		{"off", "off", slackfake.SlackRateLimits()},
		{"auto", "auto", slackfake.SlackRateLimits()},
		{"auto-appends-tier2", "auto", tier2},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				eightStreamingRuns(b, c.mode, c.limits)
			}
		})
	}
}

const streamWindow = 30 * time.Second

func eightStreamingRuns(b *testing.B, mode string, limits slackfake.RateLimits) {
	e := newSlackEnv(b, quietLogs(),
		withFake(append(installedFrom(b, "slack-app-manifest.yaml"), slackfake.WithRateLimits(limits))...),
		withConfig(func(c *config.Config) { c.Slack.Streaming = mode }))
	words := int(streamWindow / (100 * time.Millisecond))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		steps := []llmfake.Step{llmfake.Content("answer to " + lastUserText(r) + ":")}
		for range words {
			steps = append(steps, llmfake.Delay(100*time.Millisecond), llmfake.Content(" word"))
		}
		return llmfake.Stream(append(steps, llmfake.Content(" end."), llmfake.Finish("stop"), llmfake.Done())...)
	})
	var chans, roots []string
	begin := time.Now()
	for i := range 8 {
		chans = append(chans, fmt.Sprintf("C0E2E02%02d", i))
		roots = append(roots, e.slack.Mention(chans[i], aliceID, fmt.Sprintf("task %d", i), ""))
	}
	for i, root := range roots {
		e.waitText(chans[i], root, fmt.Sprintf("answer to task %d:", i))
		e.waitText(chans[i], root, strings.Repeat(" word", words)+" end.")
	}
	end := time.Now()
	minutes := end.Sub(begin).Minutes()
	// Every stream ends with its run: the status's last edit stops it.
	started := 0
	for _, c := range e.slack.CallsTo("chat.startStream") {
		if c.Error == "" && c.Status == 200 {
			started++
		}
	}
	e.waitFor("every stream stopped", func() bool { return e.slack.StreamStops() == started },
		func() string { return fmt.Sprintf("%d of %d streams stopped", e.slack.StreamStops(), started) })
	visible, calls := 0, 0
	// Counted up to the moment every answer showed; the status's last
	// edits come after.
	for _, c := range e.slack.Calls() {
		if c.Time.After(end) {
			continue
		}
		calls++
		if c.Error == "" && c.Status == 200 && (c.Method == "chat.update" || c.Method == "chat.appendStream") {
			visible++
		}
	}
	b.ReportMetric(float64(visible)/8/minutes, "updates/run/min")
	b.ReportMetric(float64(e.slack.RateLimited()), "429s")
	b.ReportMetric(float64(calls), "calls")
	b.ReportMetric(float64(len(e.slack.CallsTo("chat.appendStream"))), "appends")
	b.ReportMetric(float64(len(e.slack.CallsTo("chat.update"))), "updates")
	b.ReportMetric(float64(started), "streams")
	b.ReportMetric(minutes*60, "s")
}
