package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// The bot's status on the strict fake Slack, installed from the repository's
// manifests: the assistant status for every app, agent sessions for an app
// declared as an agent, and a status budget of its own that no answer waits
// for.

// installedFrom returns the fake's options for an app created from a manifest
// of the repository: its scopes, its event subscriptions, and whether it is
// declared as an agent.
func installedFrom(t testing.TB, file string) []slackfake.Option {
	t.Helper()
	raw, err := os.ReadFile("../../" + file)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct {
			AgentView map[string]any `yaml:"agent_view"`
		} `yaml:"features"`
		OAuthConfig struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			EventSubscriptions struct {
				BotEvents []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	opts := []slackfake.Option{
		slackfake.WithAssistantThreads(),
		slackfake.WithScopes(m.OAuthConfig.Scopes.Bot...),
		slackfake.WithBotEvents(m.Settings.EventSubscriptions.BotEvents...),
	}
	if m.Features.AgentView != nil {
		opts = append(opts, slackfake.WithAgentSessions())
	}
	return opts
}

// captureLogs copies the bot's log lines from now on; the function returns
// them so far.
func (e *slackEnv) captureLogs() func() string {
	var buf bytes.Buffer
	e.logOut.mu.Lock()
	e.logOut.w = io.MultiWriter(e.logOut.w, &buf)
	e.logOut.mu.Unlock()
	return func() string {
		e.logOut.mu.Lock()
		defer e.logOut.mu.Unlock()
		return buf.String()
	}
}

// waitAssistantStatus waits until the thread shows the assistant status
// status (what a person sees: set, not cleared, not expired).
func (e *slackEnv) waitAssistantStatus(root, status string) {
	e.tb.Helper()
	for {
		n := len(e.slack.CallsTo("assistant.threads.setStatus"))
		if st, _ := e.slack.AssistantStatus(slackChan, root); st == status {
			return
		}
		if _, err := e.slack.WaitCalls(e.ctx, "assistant.threads.setStatus", n+1); err != nil {
			e.tb.Fatalf("waiting for the assistant status %q: %v (statuses %+v)", status, err, e.slack.Statuses())
		}
	}
}

// An app installed from slack-app-manifest.yaml shows the assistant status
// in every run, with its loading message, and logs no warning; so does one
// configured for agent sessions that Slack refuses them (the app is not
// declared as an agent), after asking once.
func TestSlackWithoutAgentDeclarationShowsTheAssistantStatusInEveryRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		agentSessions bool
		agentCalls    int
	}{
		{"default", false, 0},
		{"agent sessions refused", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newSlackFakes(t, withFake(installedFrom(t, "slack-app-manifest.yaml")...),
				withConfig(func(c *config.Config) { c.Slack.AgentSessions = tc.agentSessions }))
			logs := e.captureLogs()
			e.start()
			root := ""
			for run := range 3 {
				// The answer waits until the status shows.
				shown := make(chan struct{})
				e.llm.Push(llmfake.Stream(llmfake.Await(shown), llmfake.Content(fmt.Sprintf("answer %d", run)), llmfake.Finish("stop"), llmfake.Done()))
				if run == 0 {
					root = e.slack.Mention(slackChan, aliceID, "hello", "")
				} else {
					e.slack.UserMessage(slackChan, aliceID, "again", root)
				}
				e.waitRequests(run + 1)
				e.waitAssistantStatus(root, "is working…")
				if _, loading := e.slack.AssistantStatus(slackChan, root); !slices.Equal(loading, []string{"is working…"}) {
					t.Errorf("run %d: loading messages %q, want the status", run, loading)
				}
				close(shown)
				e.waitText(slackChan, root, fmt.Sprintf("answer %d", run))
			}
			if got := e.slack.CallsTo("agents.sessions.setStatus"); len(got) != tc.agentCalls ||
				len(got) > 0 && got[0].Error != "not_authorized" {
				t.Errorf("agents.sessions.setStatus calls %+v, want %d (not_authorized)", got, tc.agentCalls)
			}
			for _, c := range e.slack.Calls() {
				if c.Method == "assistant.threads.setStatus" && c.Error != "" {
					t.Errorf("assistant.threads.setStatus answered %s", c.Error)
				}
			}
			if out := logs(); strings.Contains(out, "level=WARN") {
				t.Errorf("the bot warned:\n%s", out)
			}
		})
	}
}

// A status refused with 429 and Retry-After: 30 is dropped: the answer
// arrives at once after the model's last token, and the status is not asked
// again ahead of it.
func TestSlackRateLimitedStatusDoesNotDelayTheAnswer(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	e := newSlackEnv(t, withFake(installedFrom(t, "slack-app-manifest.yaml")...))
	e.slack.RateLimitNext("assistant.threads.setStatus", 30*time.Second)
	last := make(chan struct{})
	e.llm.Push(llmfake.Stream(llmfake.Content("thinking"), llmfake.Await(last), llmfake.Content(" and done"), llmfake.Finish("stop"), llmfake.Done()))
	root := e.slack.Mention(slackChan, aliceID, "hello", "")
	calls, err := e.slack.WaitCalls(e.ctx, "assistant.threads.setStatus", 1)
	if err != nil {
		t.Fatal(err)
	}
	if calls[0].Status != 429 || calls[0].Error != "ratelimited" {
		t.Fatalf("the first status call answered %d %s, want the injected 429", calls[0].Status, calls[0].Error)
	}
	e.waitRequests(1)
	begin := time.Now()
	close(last)
	e.waitText(slackChan, root, "thinking and done")
	if d := time.Since(begin); d > time.Second {
		t.Errorf("the answer arrived %v after the last token, want under 1s", d)
	}
	if got := e.slack.CallsTo("assistant.threads.setStatus"); len(got) != 1 {
		t.Errorf("status calls %+v before the answer, want only the refused one", got)
	}
}

// With 8 runs at once, status calls stay within slack.rate.status_per_minute
// (a burst of 5 here, then one per 30 s), and every answer arrives all the
// same.
func TestSlackEightRunsKeepStatusCallsInTheirBudget(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	e := newSlackEnv(t, withFake(installedFrom(t, "slack-app-manifest.yaml")...),
		withConfig(func(c *config.Config) {
			c.Slack.Rate.StatusPerMinute = 6
			// At shutdown the threads' status clears wait on this budget
			// (one per 10 s) and are not what is measured: a short grace
			// drops them instead of waiting it out.
			c.ShutdownGrace = 2 * time.Second
		}))
	gate := make(chan struct{})
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		return llmfake.Stream(llmfake.Await(gate), llmfake.Content("answer to "+lastUserText(r)), llmfake.Finish("stop"), llmfake.Done())
	})
	// One channel each: the channels' post budgets are not what is measured.
	var chans, roots []string
	for i := range 8 {
		chans = append(chans, fmt.Sprintf("C0E2E01%02d", i))
		roots = append(roots, e.slack.Mention(chans[i], aliceID, fmt.Sprintf("task %d", i), ""))
	}
	e.waitRequests(8)
	if _, err := e.slack.WaitCalls(e.ctx, "assistant.threads.setStatus", 5); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	close(gate)
	for i, root := range roots {
		e.waitText(chans[i], root, fmt.Sprintf("answer to task %d", i))
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("8 answers took %v, want them at once", d)
	}
	st := e.slack.CallsTo("assistant.threads.setStatus")
	t.Logf("8 answers in %v after the model answered; %d status calls in %v", time.Since(begin), len(st), time.Since(st[0].Time))
	if elapsed := time.Since(st[0].Time); len(st) > 5+int(elapsed/(30*time.Second)) {
		t.Errorf("%d status calls in %v, want at most the burst of 5 and one per 30 s", len(st), elapsed)
	}
}
