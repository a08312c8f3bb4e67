package slack

import (
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// manifest is the part of slack-app-manifest.yaml the adapter depends on.
type manifest struct {
	Features struct {
		AppHome struct {
			HomeTabEnabled             bool `yaml:"home_tab_enabled"`
			MessagesTabEnabled         bool `yaml:"messages_tab_enabled"`
			MessagesTabReadOnlyEnabled bool `yaml:"messages_tab_read_only_enabled"`
		} `yaml:"app_home"`
		BotUser struct {
			DisplayName string `yaml:"display_name"`
		} `yaml:"bot_user"`
		// AgentView declares the app as an agent (agent sessions).
		AgentView *struct {
			AgentDescription string `yaml:"agent_description"`
		} `yaml:"agent_view"`
	} `yaml:"features"`
	OAuthConfig struct {
		Scopes struct {
			Bot  []string `yaml:"bot"`
			User []string `yaml:"user"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		EventSubscriptions struct {
			BotEvents []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			IsEnabled bool `yaml:"is_enabled"`
		} `yaml:"interactivity"`
		SocketModeEnabled bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

// methodScopes are the bot scopes each Web API method the adapter calls needs
// (all of them), from Slack's method reference. A method the adapter starts
// calling must be added here, which makes its scope a conscious decision.
var methodScopes = map[string][]string{
	"auth.test":             nil,
	"apps.connections.open": nil, // the app-level token's connections:write, not a bot scope
	"chat.postMessage":      {"chat:write"},
	"chat.update":           {"chat:write"},
	"chat.postEphemeral":    {"chat:write"},
	"chat.startStream":      {"chat:write"},
	"chat.appendStream":     {"chat:write"},
	"chat.stopStream":       {"chat:write"},
	// Since 2026-03 setStatus accepts chat:write, so channel apps need neither
	// assistant:write nor the assistant view.
	"assistant.threads.setStatus":  {"chat:write"},
	"agents.sessions.setStatus":    {"chat:write"},
	"reactions.add":                {"reactions:write"},
	"reactions.remove":             {"reactions:write"},
	"conversations.replies":        {"channels:history", "groups:history", "im:history", "mpim:history"},
	"users.info":                   {"users:read", "users:read.email"},
	"files.getUploadURLExternal":   {"files:write"},
	"files.completeUploadExternal": {"files:write"},
	"views.publish":                nil, // the Home tab
}

// eventScopes are the bot events the adapter subscribes to and their scopes.
var eventScopes = map[string]string{
	"app_mention":      "app_mentions:read",
	"message.channels": "channels:history",
	"message.groups":   "groups:history",
	"message.im":       "im:history",
	"message.mpim":     "mpim:history",
	// Slack's stop button on an agent session; it needs no scope.
	"agent_session_stopped": "",
	// The Home tab was opened; it needs no scope.
	"app_home_opened": "",
}

// manifests are the app manifests the README offers: the app, and the app
// declared as an agent (for slack.agent_sessions).
var manifests = []struct {
	file  string
	agent bool
}{
	{"slack-app-manifest.yaml", false},
	{"slack-app-manifest-agent.yaml", true},
}

// agentScope is the scope that declaring the app as an agent adds.
const agentScope = "assistant:write"

func readManifest(t *testing.T, file string) manifest {
	t.Helper()
	raw, err := os.ReadFile("../../" + file)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// TestManifestScopesCoverEveryCall drives every capability of the adapter against
// the fake, then checks that each manifest grants exactly the scopes of the
// methods called and the events subscribed (and, declared as an agent, the
// scope that comes with it), and that the two manifests differ only by the
// agent declaration.
func TestManifestScopesCoverEveryCall(t *testing.T) {
	for _, mf := range manifests {
		t.Run(mf.file, func(t *testing.T) { checkManifest(t, mf.file, mf.agent) })
	}
	plain, agent := readManifest(t, manifests[0].file), readManifest(t, manifests[1].file)
	agent.Features.AgentView = nil
	agent.OAuthConfig.Scopes.Bot = slices.DeleteFunc(agent.OAuthConfig.Scopes.Bot, func(s string) bool { return s == agentScope })
	if !reflect.DeepEqual(plain, agent) {
		t.Errorf("the agent manifest differs from the plain one beyond the agent declaration:\n%+v\n%+v", plain, agent)
	}
}

func checkManifest(t *testing.T, path string, agent bool) {
	m := readManifest(t, path)
	if (m.Features.AgentView != nil) != agent {
		t.Fatalf("%s declares an agent: %v, want %v", path, m.Features.AgentView != nil, agent)
	}
	// The fake grants what the manifest grants and subscribes what it
	// subscribes, and answers missing_scope for anything else, as Slack
	// does for an app installed from it; only an app declared as an agent
	// has agent sessions.
	opts := []slackfake.Option{slackfake.WithAssistantThreads(), slackfake.WithScopes(m.OAuthConfig.Scopes.Bot...),
		slackfake.WithBotEvents(m.Settings.EventSubscriptions.BotEvents...)}
	if agent {
		opts = append(opts, slackfake.WithAgentSessions())
	}
	if !m.Features.AppHome.HomeTabEnabled {
		opts = append(opts, slackfake.WithoutHomeTab())
	}
	srv := slackfake.New(t, opts...)
	h := &lister{recorder: newRecorder(), lists: map[string][]chat.SessionSummary{"U0ALICE": {{State: "idle", Repo: "app"}}}}
	r := startSocket(t, srv, h, func(c *Config, _ *Options) { c.AgentSessions, c.Streaming = agent, true })
	ctx := testContext(t)

	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	h.nextFor(t, root)
	th := chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
	_, file := srv.ShareFile("C0DEV", "U0ALICE", root, "notes.txt", "text/plain", []byte("notes"))
	id, err := r.Post(ctx, th, "working…")
	must(t, err)
	must(t, r.Edit(ctx, th, id, "done"))
	streamed, err := r.PostOnce(ctx, th, "working…", chat.PostKey{ID: "k1", Stream: true})
	must(t, err)
	must(t, r.Edit(ctx, th, streamed, "working… more"))
	must(t, r.Edit(ctx, th, streamed, "done"))
	must(t, r.SetActions(ctx, th, id, "done", []chat.Action{{ID: "diff", Label: "Diff"}}))
	must(t, r.React(ctx, th, root, "eyes", true))
	must(t, r.React(ctx, th, root, "eyes", false))
	must(t, r.Upload(ctx, th, "change.diff", []byte("+x\n"), "patch"))
	must(t, r.SetStatus(ctx, th, "is working…"))
	must(t, r.Whisper(ctx, chat.Inbound{Thread: th, MessageID: root, Author: chat.Author{ID: "U0ALICE"}}, "not allowed"))
	_, err = r.History(ctx, th, id)
	must(t, err)
	body, err := r.Download(ctx, file.URLPrivate)
	must(t, err)
	_, _ = io.Copy(io.Discard, body)
	body.Close()
	// The Home tab: published when opened, which needs the event and the
	// tab.
	if srv.OpenHome("U0ALICE") == "" {
		t.Error("the manifest does not subscribe to app_home_opened: the Home tab stays empty")
	} else if calls, err := srv.WaitCalls(ctx, "views.publish", 1); err != nil || calls[0].Error != "" {
		t.Errorf("views.publish = %+v, %v; want the Home tab published", calls, err)
	}

	if got := srv.AgentStatuses(); agent && (len(got) != 1 || got[0].Warning != "") {
		t.Errorf("agent session statuses %+v, want one, without a warning", got)
	}
	limits := slackfake.SlackRateLimits()
	needed := map[string]bool{}
	if agent {
		needed[agentScope] = true
	}
	for _, c := range srv.Calls() {
		if c.Error == "missing_scope" {
			t.Errorf("%s answered missing_scope under the manifest's scopes", c.Method)
		}
		// The strict fake limits every method the adapter calls, so that
		// tests see a 429 wherever Slack would answer one.
		if _, ok := limits.Methods[c.Method]; !ok && c.Method != "chat.postMessage" && c.Method != "chat.update" {
			t.Errorf("the adapter calls %s, which slackfake.SlackRateLimits does not limit: add its tier", c.Method)
		}
		scopes, ok := methodScopes[c.Method]
		if !ok {
			t.Errorf("the adapter calls %s, which methodScopes does not list: add it with its scopes", c.Method)
		}
		for _, s := range scopes {
			needed[s] = true
		}
	}
	if len(srv.Downloads()) > 0 {
		needed["files:read"] = true // url_private
	}
	for _, ev := range m.Settings.EventSubscriptions.BotEvents {
		s, ok := eventScopes[ev]
		if !ok {
			t.Errorf("manifest subscribes to %s, which the adapter does not handle", ev)
		}
		if s != "" {
			needed[s] = true
		}
	}
	if got, want := slices.Sorted(slices.Values(m.Settings.EventSubscriptions.BotEvents)), slices.Sorted(maps.Keys(eventScopes)); !slices.Equal(got, want) {
		t.Errorf("bot_events = %v, want %v", got, want)
	}
	granted := slices.Sorted(slices.Values(m.OAuthConfig.Scopes.Bot))
	if want := slices.Sorted(maps.Keys(needed)); !slices.Equal(granted, want) {
		t.Errorf("bot scopes = %v, want exactly %v", granted, want)
	}
	if len(m.OAuthConfig.Scopes.User) != 0 {
		t.Errorf("user scopes = %v, want none", m.OAuthConfig.Scopes.User)
	}
	if !m.Settings.SocketModeEnabled {
		t.Error("socket_mode_enabled is false, want Socket Mode on (the default mode)")
	}
	if !m.Settings.Interactivity.IsEnabled {
		t.Error("interactivity is off, want it on: the status messages' buttons need it")
	}
	if !m.Features.AppHome.MessagesTabEnabled || m.Features.AppHome.MessagesTabReadOnlyEnabled {
		t.Error("the App Home messages tab is off or read-only, want DMs enabled")
	}
	if !m.Features.AppHome.HomeTabEnabled {
		t.Error("the App Home's Home tab is off, want it on: it lists the person's sessions")
	}
	if m.Features.BotUser.DisplayName == "" {
		t.Error("no bot user: app_mention needs one")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
