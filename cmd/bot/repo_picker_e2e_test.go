package main

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// Without workspace.default_repo, a thread that names no repository among
// several is answered with a menu of them; the requester's choice starts
// the held request in that repository, also after a restart between the
// menu and the choice. A choice by someone else, or of a repository not
// configured, is refused privately; after the first push the repository
// stays.

// repoMenus are the bot's messages in a Slack thread that carry the
// repository menu, with its options.
func (e *slackEnv) repoMenus(root string) map[string][]string {
	menus := map[string][]string{}
	for _, m := range e.botMessages(slackChan, root) {
		for _, sel := range e.slack.Selects(slackChan, m.TS) {
			if sel.ActionID == "repo" {
				for _, o := range sel.Options {
					menus[m.TS] = append(menus[m.TS], o.Value)
				}
			}
		}
	}
	return menus
}

func TestSlackRepositoryMenuStartsTheHeldRequestAcrossARestart(t *testing.T) {
	const mallory = "U0MALLORY"
	e := newSlackFakes(t)
	web := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"index.html": "<p>web</p>\n"}})
	e.cfg.Workspace.DefaultRepo = ""
	e.cfg.Workspace.Repos = append(e.cfg.Workspace.Repos, config.Repo{Name: "web", URL: web.Path, DefaultBranch: "main"})
	e.start()
	e.slack.AddUser(slackfake.User{ID: mallory, Name: "mallory", RealName: "Mallory"})
	e.slack.ChannelJoin(slackChan, mallory)
	writes(e)

	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "📁 Which repository should I work in?")
	var menu string
	e.waitFor("the repository menu", func() bool {
		for ts, opts := range e.repoMenus(root) {
			menu = ts
			return slices.Equal(opts, []string{"app", "web"})
		}
		return false
	})
	if n := len(e.llm.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times before a repository was chosen", n)
	}

	// The request waits across a restart; the menu is not posted again.
	e.stop()
	e.start()
	e.slack.UserMessage(slackChan, aliceID, "!repo nope", root)
	e.waitFor("the refusal of nope", func() bool { return len(e.slack.Ephemerals()) == 1 })
	if eph := e.slack.Ephemerals()[0]; eph.User != aliceID || !strings.Contains(eph.Text, "`nope` can't be opened") {
		t.Errorf("note = %+v, want alice told nope can't be opened", eph)
	}
	if n := len(e.repoMenus(root)); n != 1 {
		t.Errorf("%d menus after the restart, want the one", n)
	}

	// Mallory may use the bot but did not ask here.
	choice := e.slack.Choose(slackChan, menu, mallory, "repo", "web")
	if ack := e.waitClickAck(choice); ack.Latency >= 3*time.Second {
		t.Errorf("mallory's choice acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitFor("mallory's note", func() bool { return len(e.slack.Ephemerals()) == 2 })
	if eph := e.slack.Ephemerals()[1]; eph.User != mallory || !strings.Contains(eph.Text, "only someone who asked") {
		t.Errorf("note = %+v, want mallory refused", eph)
	}

	choice = e.slack.Choose(slackChan, menu, aliceID, "repo", "web")
	if ack := e.waitClickAck(choice); ack.Latency >= 3*time.Second {
		t.Errorf("alice's choice acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitText(slackChan, root, "📁 Working in `web`, chosen by `alice`.")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	if b := botBranches(t, web); len(b) != 1 || web.Files(t, b[0])["file1.txt"] != "v1" {
		t.Errorf("web's bot branches %v, want one with file1.txt", b)
	}
	if b := botBranches(t, e.remote); len(b) != 0 {
		t.Errorf("app got %v", b)
	}
	if n := len(e.repoMenus(root)); n != 0 {
		t.Errorf("the menu stands after the choice")
	}

	e.slack.UserMessage(slackChan, aliceID, "!repo app", root)
	e.waitText(slackChan, root, "was pushed to `web` already: this thread stays in `web`")
}

func TestDiscordRepositoryMenuStartsTheHeldRequestAcrossARestart(t *testing.T) {
	var cfg *config.Config
	var web *gitremote.Repo
	e := newDiscordEnv(t, func(c *config.Config, _ *discordEnv) {
		c.Discord.AllowedRoles = nil // bob may use the bot: only the choice is not his
		c.Workspace.DefaultRepo = ""
		cfg = c
	})
	for _, r := range cfg.Workspace.Repos {
		if r.Name == "web" {
			web = &gitremote.Repo{Path: r.URL, DefaultBranch: r.DefaultBranch}
		}
	}
	e.scripts.add("pick", func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("wrote notes")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"notes.txt","content":"one\n"}`})
	})
	id := e.fake.SlashCommand(dGeneral, dAlice, "code", map[string]any{"prompt": "pick: write notes"})
	th, ia := e.threadOf(id)
	if !strings.Contains(ia.Original.Content, "**Repo** chosen in the thread") {
		t.Errorf("starter = %q, want the repository left to the thread", ia.Original.Content)
	}
	menu := e.waitBot(th, "📁 Which repository should I work in?")
	var sels []discordfake.SelectMenu
	if err := e.fake.WaitFor(e.ctx, func() bool { sels = e.fake.Selects(menu.ID); return len(sels) == 1 }); err != nil {
		t.Fatalf("no menu on %s: %v", menu.ID, err)
	}
	var opts []string
	for _, o := range sels[0].Options {
		opts = append(opts, o.Value)
	}
	if sels[0].CustomID != "repo" || !slices.Equal(opts, []string{"app", "web"}) {
		t.Errorf("menu %+v, want repo with app and web", sels[0])
	}

	// Restart: the request still waits, and the old menu still works.
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	m.Config = cfg
	m.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := m.Run(e.ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := e.fake.WaitForReady(e.ctx, 2); err != nil {
		t.Fatal(err)
	}

	// Bob did not ask here: a private note, nothing chosen.
	choice := e.fake.Choose(th, menu.ID, dBob, "repo", "web")
	ans, err := e.fake.WaitForInteractionResponse(e.ctx, choice)
	if err != nil {
		t.Fatal(err)
	}
	if ans.ResponseType != discordfake.ResponseDeferredMessageUpdate || ans.Latency >= 3*time.Second {
		t.Errorf("bob's choice answered with %d after %v, want a deferred update within 3s", ans.ResponseType, ans.Latency)
	}
	if err := e.fake.WaitFor(e.ctx, func() bool { ans, _ = e.fake.Interaction(choice); return len(ans.Followups) == 1 }); err != nil {
		t.Fatalf("no note for bob: %+v", ans)
	}
	if n := ans.Followups[0]; n.Flags&discordfake.MessageFlagEphemeral == 0 || !strings.Contains(n.Content, "only someone who asked") {
		t.Errorf("bob's note = %+v, want an ephemeral refusal", n)
	}
	if n := e.countBot(th, "📁 Which repository"); n != 1 {
		t.Errorf("%d menus after the restart, want the one", n)
	}

	choice = e.fake.Choose(th, menu.ID, dAlice, "repo", "web")
	if ans, err := e.fake.WaitForInteractionResponse(e.ctx, choice); err != nil || ans.Latency >= 3*time.Second {
		t.Errorf("alice's choice answered after %v (%v), want within 3s", ans.Latency, err)
	}
	e.waitBot(th, "📁 Working in `web`, chosen by `"+discordfake.AliceName+"`.")
	branch := discordBranch(th)
	e.waitBot(th, "⬆️ pushed `"+branch+"`")
	if got := web.Files(t, branch)["notes.txt"]; got != "one\n" && got != "one" {
		t.Errorf("notes.txt on web = %q", got)
	}
	if slices.Contains(e.remote.Branches(t), branch) {
		t.Errorf("app got %s", branch)
	}
	if got, _ := e.fake.Message(menu.ID); len(e.fake.Selects(menu.ID)) != 0 || !strings.Contains(got.Content, "📁 Working in `web`") {
		t.Errorf("the menu after the choice: %q with %+v, want it closed", got.Content, e.fake.Selects(menu.ID))
	}

	e.fake.UserMessage(th, dAlice, "!repo app")
	e.waitBot(th, "was pushed to `web` already: this thread stays in `web`")
}
