package slackfake_test

import (
	"slices"
	"testing"
	"time"

	"github.com/slack-go/slack"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// Only an app declared as an agent may create agent sessions; the others
// get not_authorized, as on Slack.
func TestAgentSessionsOnlyForAgents(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	_, err := api.SetAgentSessionStatus(slack.AgentSessionSetStatusParameters{Status: "processing", ChannelID: "C0DEV", ThreadTS: root})
	if slackError(err) != "not_authorized" {
		t.Errorf("agents.sessions.setStatus of an app not declared as agent: %v, want not_authorized", err)
	}
	if got := srv.StopAgentSession("C0DEV", root, "U0ALICE"); got != "" {
		t.Errorf("a stop button was clicked on a thread without a session (event %s)", got)
	}
}

// A session takes its title when it is created, shows the stop button while
// it is processing, and warns an app not subscribed to agent_session_stopped
// (whose session then has no stop button).
func TestAgentSessionTitleAndStopButton(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAgentSessions())
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	set := func(status, title string) *slack.AgentSessionSetStatusResponse {
		t.Helper()
		res, err := api.SetAgentSessionStatus(slack.AgentSessionSetStatusParameters{Status: status, ChannelID: "C0DEV", ThreadTS: root, Title: title})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := set("processing", "Fix the build"); res.Title != "Fix the build" || res.Warning != "" {
		t.Errorf("created session: title %q warning %q, want the title and no warning", res.Title, res.Warning)
	}
	if ev := srv.StopAgentSession("C0DEV", root, "U0ALICE"); ev == "" {
		t.Error("no stop button on a processing session")
	}
	set("closed", "")
	if ev := srv.StopAgentSession("C0DEV", root, "U0ALICE"); ev != "" {
		t.Error("a stop button on a closed session")
	}
	set("processing", "Another title")
	if s, _ := srv.AgentSessionOf("C0DEV", root); s.Title != "Fix the build" || s.Status != "processing" {
		t.Errorf("session %+v, want the title of its creation, processing again", s)
	}
	if _, err := api.SetAgentSessionStatus(slack.AgentSessionSetStatusParameters{Status: "busy", ChannelID: "C0DEV", ThreadTS: root}); slackError(err) != "invalid_arguments" {
		t.Errorf("status busy: %v, want invalid_arguments", err)
	}

	unsub := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAgentSessions(), slackfake.WithBotEvents("app_mention", "message.channels"))
	root = unsub.Mention("C0DEV", "U0ALICE", "go", "")
	res, err := newAPI(unsub).SetAgentSessionStatus(slack.AgentSessionSetStatusParameters{Status: "processing", ChannelID: "C0DEV", ThreadTS: root})
	if err != nil || res.Warning != "missing_agent_session_stopped_event_subscription" {
		t.Errorf("without the subscription: %+v, %v, want ok with the missing_agent_session_stopped_event_subscription warning", res, err)
	}
	if ev := unsub.StopAgentSession("C0DEV", root, "U0ALICE"); ev != "" {
		t.Error("a stop button for an app not subscribed to agent_session_stopped")
	}
}

// The assistant status shows until it is cleared or two minutes pass without
// a message in its thread; it takes at most 10 loading messages.
func TestAssistantStatusExpires(t *testing.T) {
	clock := slackfake.NewManualClock(time.Unix(1_800_000_000, 0))
	srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithAssistantThreads(), slackfake.WithClock(clock.Now))
	api := newAPI(srv)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	set := func(status string, loading ...string) error {
		return api.SetAssistantThreadsStatus(slack.AssistantThreadsSetStatusParameters{ChannelID: "C0DEV", ThreadTS: root, Status: status, LoadingMessages: loading})
	}
	if err := set("is working…", "reading", "testing"); err != nil {
		t.Fatal(err)
	}
	if st, loading := srv.AssistantStatus("C0DEV", root); st != "is working…" || !slices.Equal(loading, []string{"reading", "testing"}) {
		t.Errorf("status %q %v, want it shown with its loading messages", st, loading)
	}
	clock.Advance(90 * time.Second)
	srv.UserMessage("C0DEV", "U0ALICE", "still there?", root)
	clock.Advance(90 * time.Second)
	if st, _ := srv.AssistantStatus("C0DEV", root); st != "is working…" {
		t.Errorf("status %q 90 s after a message, want still shown", st)
	}
	clock.Advance(30 * time.Second)
	if st, _ := srv.AssistantStatus("C0DEV", root); st != "" {
		t.Errorf("status %q two minutes after the last message, want gone", st)
	}
	if err := set("is working…"); err != nil {
		t.Fatal(err)
	}
	if err := set(""); err != nil {
		t.Fatal(err)
	}
	if st, _ := srv.AssistantStatus("C0DEV", root); st != "" {
		t.Errorf("status %q after clearing, want none", st)
	}
	eleven := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}
	if err := set("is working…", eleven...); slackError(err) != "invalid_arguments" {
		t.Errorf("11 loading messages: %v, want invalid_arguments", err)
	}
}
