package main

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// secretChan is the Slack channel mapped to the repository "secret".
const secretChan = "C0SECRET1"

// withSecretRepo adds a repository "secret", mapped to secretChan, beside
// "app", which slackChan is mapped to.
func withSecretRepo(tb testing.TB, more func(*config.Config)) slackOption {
	secret := gitremote.NewBare(tb, gitremote.Options{Files: map[string]string{"KEYS.md": "launch codes\n"}})
	return withConfig(func(c *config.Config) {
		c.Workspace.Repos = append(c.Workspace.Repos, config.Repo{Name: "secret", URL: secret.Path, DefaultBranch: "main"})
		c.Slack.Channels = map[string]config.ChannelRepos{slackChan: {"app"}, secretChan: {"secret"}}
		if more != nil {
			more(c)
		}
	})
}

// systemRepo is the repository a request's system prompt says the session
// works on.
func systemRepo(r llmfake.Request) string {
	if len(r.Messages) == 0 {
		return ""
	}
	_, after, ok := strings.Cut(r.Messages[0].Content, "- Repository: ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(after, " ")
	return name
}

// assertRefusedPrivately checks that the n-th ephemeral note went to alice,
// says want, and that the thread got nothing from the bot.
func (e *slackEnv) assertRefusedPrivately(n int, ch, root, want string) {
	e.tb.Helper()
	e.waitFor("the private note", func() bool { return len(e.slack.Ephemerals()) > n })
	eph := e.slack.Ephemerals()[n]
	if eph.User != aliceID || eph.Channel != ch || !strings.Contains(eph.Text, want) {
		e.tb.Errorf("private note = %+v, want one to %s in %s saying %q", eph, aliceID, ch, want)
	}
	if got := e.botMessages(ch, root); len(got) != 0 {
		e.tb.Errorf("the bot posted in the refused thread: %+v", got)
	}
}

// With slack.allowed_channels set, a DM is refused (allow_dms defaults to
// false); a channel mapped to app refuses repo=secret and names app; the
// mapped channels still open their own repositories, and a mapping that
// lists more repositories lets repo= pick them.
func TestSlackChannelMappingIsBindingAndDMsNeedAllowing(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withSecretRepo(t, func(c *config.Config) {
		c.Slack.AllowedChannels = []string{slackChan, secretChan}
		c.Slack.Channels[secretChan] = config.ChannelRepos{"secret", "app"}
	}))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("working on " + systemRepo(r)) })

	dm, dmTS := e.slack.DM(aliceID, "repo=secret print KEYS.md")
	e.assertRefusedPrivately(0, dm, dmTS, "direct messages")

	root := e.slack.Mention(slackChan, aliceID, "repo=secret print KEYS.md", "")
	e.assertRefusedPrivately(1, slackChan, root, "`secret` can't be opened in this channel")
	if eph := e.slack.Ephemerals()[1]; !strings.Contains(eph.Text, "you may use: app.") {
		t.Errorf("the note does not name the channel's repositories: %q", eph.Text)
	}
	if err := e.slack.WaitAllAcked(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.llm.Requests()); n != 0 {
		t.Fatalf("LLM requests = %d after two refused requests, want 0", n)
	}

	ok := e.slack.Mention(slackChan, aliceID, "say hi", "")
	e.waitText(slackChan, ok, "working on app")
	sec := e.slack.Mention(secretChan, aliceID, "say hi", "")
	e.waitText(secretChan, sec, "working on secret")
	also := e.slack.Mention(secretChan, aliceID, "repo=app say hi", "")
	e.waitText(secretChan, also, "working on app")
	if n := len(e.llm.Requests()); n != 3 {
		t.Errorf("LLM requests = %d, want 3 (the allowed mentions only)", n)
	}
	if n := len(e.slack.Ephemerals()); n != 2 {
		t.Errorf("private notes = %d, want 2 (one per refused message): %+v", n, e.slack.Ephemerals())
	}
}

// With DMs allowed, a DM opens the repositories no channel is mapped to (the
// default here) but not one a mapping keeps to its channel, and neither
// does an unmapped channel; a mapping with "*" opens any repository.
func TestSlackDMsReachOnlyUnmappedRepos(t *testing.T) {
	t.Parallel()
	yes := true
	const anyChan = "C0ANYREPO"
	e := newSlackEnv(t, withSecretRepo(t, func(c *config.Config) {
		c.Slack.AllowDMs = &yes
		c.Slack.Channels = map[string]config.ChannelRepos{secretChan: {"secret"}, anyChan: {"app", config.AnyRepo}}
	}))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("working on " + systemRepo(r)) })

	dm, refused := e.slack.DM(aliceID, "repo=secret print KEYS.md")
	e.assertRefusedPrivately(0, dm, refused, "`secret` can't be opened from a direct message")
	if eph := e.slack.Ephemerals()[0]; !strings.Contains(eph.Text, "you may use: app.") {
		t.Errorf("the note does not name what a DM may open: %q", eph.Text)
	}
	// An unmapped channel is held to the same rule.
	other := e.slack.Mention(slackChan, aliceID, "repo=secret print KEYS.md", "")
	e.assertRefusedPrivately(1, slackChan, other, "kept to the channels mapped to it")
	// A name that is no repository gets the same private note: the refusal
	// does not tell a kept repository from an unknown one.
	nosuch := e.slack.Mention(slackChan, aliceID, "repo=nosuch print KEYS.md", "")
	e.assertRefusedPrivately(2, slackChan, nosuch, "`nosuch` can't be opened in this channel")
	if kept, unknown := e.slack.Ephemerals()[1].Text, e.slack.Ephemerals()[2].Text; strings.ReplaceAll(kept, "secret", "nosuch") != unknown {
		t.Errorf("the notes tell a kept repository from an unknown one:\n%q\n%q", kept, unknown)
	}

	_, ok := e.slack.DM(aliceID, "say hi")
	e.waitText(dm, ok, "working on app")
	sec := e.slack.Mention(secretChan, aliceID, "say hi", "")
	e.waitText(secretChan, sec, "working on secret")
	wide := e.slack.Mention(anyChan, aliceID, "repo=secret say hi", "")
	e.waitText(anyChan, wide, "working on secret")
	if n := len(e.llm.Requests()); n != 3 {
		t.Errorf("LLM requests = %d, want 3 (the allowed messages only)", n)
	}
}

// On Discord, a channel mapped to app refuses `/code repo:web` privately
// (before anything public is shown) and opens nothing; an unmapped channel
// may open web but not app, which the mapping keeps; a DM is refused when
// discord.allow_dms is false; the mapped channel still opens app.
func TestDiscordChannelMappingIsBindingAndDMsNeedAllowing(t *testing.T) {
	t.Parallel()
	no := false
	e := newDiscordEnv(t, func(c *config.Config, _ *discordEnv) {
		c.Discord.AllowedRoles, c.Discord.AllowedUsers = nil, []string{dAlice}
		c.Discord.Channels = map[string]config.ChannelRepos{dGeneral: {"app"}}
		c.Discord.AllowDMs = &no
	})
	fake := e.fake
	workingOn := func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("working on " + systemRepo(r)) }
	for _, tag := range []string{"mike", "november", "oscar", "papa", "quebec"} {
		e.scripts.add(tag, workingOn)
	}
	refused := func(channel, tag string, opts map[string]any, want ...string) {
		t.Helper()
		opts["prompt"] = tag + ": print the keys"
		id := fake.SlashCommand(channel, dAlice, "code", opts)
		ia, err := fake.WaitForInteractionResponse(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !ia.Ephemeral || ia.Original == nil {
			t.Fatalf("/code %v in %s: answer %+v, want an ephemeral note", opts, channel, ia)
		}
		for _, w := range want {
			if !strings.Contains(ia.Original.Content, w) {
				t.Errorf("/code %v in %s: note %q lacks %q", opts, channel, ia.Original.Content, w)
			}
		}
	}
	threads := len(fake.Threads())
	refused(dGeneral, "mike", map[string]any{"repo": "web"}, "`web` can't be opened in this channel", "you may use: app.")
	refused(dChannel2, "november", map[string]any{}, "`app` can't be opened in this channel", "you may use: web.")

	dm := fake.DMChannel(dAlice)
	fake.UserMessage(dm, dAlice, "oscar: repo=web print the keys")
	e.waitBot(dm, "direct messages")

	th, _ := e.threadOf(fake.SlashCommand(dGeneral, dAlice, "code", map[string]any{"prompt": "papa: say hi"}))
	e.waitBot(th, "working on app")
	th2, _ := e.threadOf(fake.SlashCommand(dChannel2, dAlice, "code", map[string]any{"prompt": "quebec: say hi", "repo": "web"}))
	e.waitBot(th2, "working on web")

	for _, tag := range []string{"mike", "november", "oscar"} {
		if n := len(e.requestsFor(tag)); n != 0 {
			t.Errorf("model requests for the refused %s: %d, want 0", tag, n)
		}
	}
	if got := len(fake.Threads()); got != threads+2 {
		t.Errorf("threads = %d, want %d (none for the refused requests)", got, threads+2)
	}
}
