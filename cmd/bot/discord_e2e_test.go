package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/workspace"
)

// The Discord end-to-end tests run the program (Main) on the fake Discord,
// the fake LLM, bare git remotes and a real SQLite file, the way a guild meets
// it. One Main serves every subtest (discordgo's Session.Close costs a
// second): each subtest opens its own session thread with /code, and its
// prompt starts with a tag ("alpha: …") that picks the fake LLM's script for
// that session. The fake enforces Discord's rate limits throughout.

const (
	dGuild   = discordfake.DefaultGuildID
	dGeneral = discordfake.DefaultChannelID
	dAlice   = discordfake.AliceID
	dBob     = discordfake.BobID

	// A second guild, so registration per guild in guild_ids shows.
	dGuild2   = "1000000000000000011"
	dChannel2 = "1000000000000000022"
)

// discordEnv is the program on the fake Discord.
type discordEnv struct {
	t       *testing.T
	m       *Main
	fake    *discordfake.Server
	llm     *llmfake.Server
	remote  *gitremote.Repo
	ctx     context.Context
	scripts *discordScripts
	// now, when set by a configure function, is the bridge's clock.
	now func() time.Time
	// sleep, when set by a configure function, is the sessions' wait
	// between a model request's retries.
	sleep func(ctx context.Context, d time.Duration) error
	// pushRetry, when set by a configure function, is the first wait
	// before a push the remote did not answer is tried again.
	pushRetry time.Duration
}

// configure, if given, changes the configuration before the program starts.
func newDiscordEnv(t *testing.T, configure ...func(*config.Config, *discordEnv)) *discordEnv {
	t.Helper()
	second := discordfake.Guild{
		ID: dGuild2, Name: "second guild", OwnerID: dAlice,
		Channels: []discordfake.Channel{{ID: dChannel2, Name: "lobby"}},
		Members:  []discordfake.Member{{UserID: dAlice, Username: discordfake.AliceName}},
	}
	e := &discordEnv{
		t: t,
		fake: discordfake.New(t,
			discordfake.WithGuilds(discordfake.DefaultGuild(), second),
			discordfake.WithRateLimits(discordfake.DefaultRateLimits())),
		llm:     llmfake.New(t),
		scripts: &discordScripts{byTag: map[string]func(llmfake.Request) llmfake.Response{}},
	}
	e.llm.Handle(e.scripts.handle)
	e.remote = gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n", "main.go": "package main\n"}})
	web := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"index.html": "<p>web</p>\n"}})

	cfg := e2eConfig(t, e.llm, e.remote)
	cfg.Discord.Enabled = true
	cfg.Discord.Token = e.fake.Token()
	cfg.Discord.APIURL = e.fake.URL()
	cfg.Discord.GuildIDs = []string{dGuild, dGuild2}
	cfg.Discord.AllowedRoles = []string{discordfake.DevRoleID} // alice has it, bob does not
	cfg.Workspace.Repos = append(cfg.Workspace.Repos, config.Repo{Name: "web", URL: web.Path, DefaultBranch: "main"})
	// Little is kept verbatim, so that /compact has something to summarize
	// after two short runs; the window is large, so nothing compacts by itself.
	cfg.Agent.Compaction.KeepRecentTokens = 50
	cfg.ShutdownGrace = 5 * time.Second
	for _, f := range configure {
		f(&cfg, e)
	}

	var cancel context.CancelFunc
	e.ctx, cancel = context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	m := NewMain()
	m.Config = &cfg
	m.Now = e.now
	m.Sleep = e.sleep
	m.PushRetry = e.pushRetry
	m.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := m.Run(e.ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	e.m = m
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	// Slash commands are checked against the registered ones, as Discord's
	// client does: wait for them before anyone types one.
	if err := e.fake.WaitForReady(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{dGuild, dGuild2} {
		if _, err := e.fake.WaitForCommandOverwrite(e.ctx, g, 1); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// discordScripts answers the fake LLM for many sessions at once: each session's
// first prompt starts with "tag:", and the tag picks the script. A summary
// request (compaction) is answered with a summary that names the tag, so the
// session's later requests, which start with the summary, still find it.
type discordScripts struct {
	mu    sync.Mutex
	byTag map[string]func(llmfake.Request) llmfake.Response
}

func (s *discordScripts) add(tag string, f func(llmfake.Request) llmfake.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byTag[tag] = f
}

func (s *discordScripts) handle(r llmfake.Request) llmfake.Response {
	s.mu.Lock()
	tag := s.tagLocked(r)
	f := s.byTag[tag]
	s.mu.Unlock()
	if isSummaryReq(r) {
		return llmfake.TextReply("## Goal\nTHE-SUMMARY of " + tag + ": the work so far")
	}
	if f == nil {
		return llmfake.HTTPError(400, "", "no script for "+lastUserText(r))
	}
	return f(r)
}

// tagLocked is the first registered "tag:" found in the request's messages.
func (s *discordScripts) tagLocked(r llmfake.Request) string {
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for tag := range s.byTag {
			if strings.Contains(m.Content, tag+":") {
				return tag
			}
		}
	}
	return ""
}

func (e *discordEnv) tagOf(r llmfake.Request) string {
	e.scripts.mu.Lock()
	defer e.scripts.mu.Unlock()
	return e.scripts.tagLocked(r)
}

// requestsFor returns the chat requests (summaries left out) of a tag's sessions.
func (e *discordEnv) requestsFor(tag string) []llmfake.Request {
	var out []llmfake.Request
	for _, r := range e.llm.Requests() {
		if !isSummaryReq(r) && e.tagOf(r) == tag {
			out = append(out, r)
		}
	}
	return out
}

// answerPrompt is the script of a model that answers every prompt in one reply.
func answerPrompt(r llmfake.Request) llmfake.Response {
	return llmfake.TextReply("answer to: " + lastUserText(r))
}

// with returns the env for a subtest: its helpers fail t, and give up
// waiting after 30 s.
func (e *discordEnv) with(t *testing.T) *discordEnv {
	c := *e
	c.t = t
	var cancel context.CancelFunc
	c.ctx, cancel = context.WithTimeout(e.ctx, 30*time.Second)
	t.Cleanup(cancel)
	return &c
}

// code runs /code prompt:<prompt> repo:app in #general as alice and returns
// the interaction id.
func (e *discordEnv) code(prompt string) string {
	return e.fake.SlashCommand(dGeneral, dAlice, "code", map[string]any{"prompt": prompt, "repo": "app"})
}

// threadOf waits for the thread a /code opened on its starter message.
func (e *discordEnv) threadOf(id string) (string, discordfake.Interaction) {
	e.t.Helper()
	var ia discordfake.Interaction
	err := e.fake.WaitFor(e.ctx, func() bool {
		ia, _ = e.fake.Interaction(id)
		return ia.Original != nil && ia.Original.ThreadID != ""
	})
	if err != nil {
		e.t.Fatalf("/code opened no thread: @original %+v: %v", ia.Original, err)
	}
	return ia.Original.ThreadID, ia
}

// open runs /code and returns the session thread it opened.
func (e *discordEnv) open(prompt string) (string, discordfake.Interaction) {
	e.t.Helper()
	return e.threadOf(e.code(prompt))
}

func discordBranch(thread string) string {
	return workspace.BranchName("bot/", workspace.ThreadKey{Platform: "discord", Key: thread})
}

// waitBot waits for a message by the bot in channel containing s, and returns it.
func (e *discordEnv) waitBot(channel, s string) discordfake.Message {
	e.t.Helper()
	m, err := e.fake.WaitForMessage(e.ctx, channel, func(m discordfake.Message) bool {
		return m.AuthorBot && strings.Contains(m.Content, s)
	})
	if err != nil {
		e.t.Fatalf("waiting for %q from the bot: %v\nthe thread:\n%s", s, err, e.transcript(channel))
	}
	return m
}

// waitBotCount waits until n messages by the bot in channel contain s.
func (e *discordEnv) waitBotCount(channel, s string, n int) {
	e.t.Helper()
	err := e.fake.WaitFor(e.ctx, func() bool { return e.countBot(channel, s) >= n })
	if err != nil {
		e.t.Fatalf("waiting for %d messages containing %q: got %d: %v\nthe thread:\n%s", n, s, e.countBot(channel, s), err, e.transcript(channel))
	}
}

func (e *discordEnv) countBot(channel, s string) int {
	n := 0
	for _, m := range e.fake.Messages(channel) {
		if m.AuthorBot && strings.Contains(m.Content, s) {
			n++
		}
	}
	return n
}

func (e *discordEnv) waitReaction(channel, messageID, emoji string) {
	e.t.Helper()
	if err := e.fake.WaitForReaction(e.ctx, channel, messageID, emoji, ""); err != nil {
		e.t.Fatal(err)
	}
}

func (e *discordEnv) botReacted(channel, messageID, emoji string) bool {
	return slices.ContainsFunc(e.fake.Reactions(channel, messageID), func(r discordfake.Reaction) bool {
		return r.Emoji == emoji && r.UserID == e.fake.BotUserID()
	})
}

// waitOriginal waits until the interaction's @original satisfies match.
func (e *discordEnv) waitOriginal(id string, match func(discordfake.Message) bool) discordfake.Interaction {
	e.t.Helper()
	var ia discordfake.Interaction
	err := e.fake.WaitFor(e.ctx, func() bool {
		ia, _ = e.fake.Interaction(id)
		return ia.Original != nil && match(*ia.Original)
	})
	if err != nil {
		e.t.Fatalf("@original of /%s: got %+v: %v", ia.CommandName, ia.Original, err)
	}
	return ia
}

// waitGate waits until the gate holds a model request.
func (e *discordEnv) waitGate(g *gate) {
	e.t.Helper()
	select {
	case <-g.arrived:
	case <-e.ctx.Done():
		e.t.Fatal("the model request never arrived")
	}
}

// transcript renders a channel for failure messages.
func (e *discordEnv) transcript(channel string) string {
	var b strings.Builder
	for _, m := range e.fake.Messages(channel) {
		fmt.Fprintf(&b, "[%s] %s\n", m.AuthorName, m.Content)
	}
	return b.String()
}

// posted returns the content of every message the bot created in channel,
// as first sent (before any edit).
func (e *discordEnv) posted(channel string) []string {
	var out []string
	for _, r := range e.fake.Requests() {
		if r.Method == "POST" && r.Path == "/api/v9/channels/"+channel+"/messages" && r.Status < 300 {
			var body struct{ Content string }
			_ = json.Unmarshal(r.Body, &body)
			out = append(out, body.Content)
		}
	}
	return out
}

// TestDiscord drives one running bot through what a guild does with it. The
// sessions run in parallel, each in its own thread (Discord's posting budget
// is per channel, so most of the time is spent waiting on it); what counts
// threads, disturbs the gateway or measures one stream runs alone.
func TestDiscord(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	env := newDiscordEnv(t)
	t.Run("commands registered at start", func(t *testing.T) { testDiscordCommands(env.with(t)) })
	t.Run("sessions", func(t *testing.T) {
		for _, c := range []struct {
			name string
			f    func(*discordEnv)
		}{
			{"code opens a thread, answers in it and pushes", testDiscordCode},
			{"follow-up while busy is acknowledged and delivered", testDiscordFollowUp},
			{"steer", testDiscordSteer},
			{"stop", testDiscordStop},
			{"status and diff", testDiscordStatusDiff},
			{"compact", testDiscordCompact},
			{"5000-char answer in 2000-char messages with balanced fences", testDiscordLongAnswer},
			{"a hostile answer pings nobody but the requester", testDiscordHostileAnswer},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.f(env.with(t))
			})
		}
	})
	t.Run("edit rate within limits", func(t *testing.T) { testDiscordEditRate(env.with(t)) })
	t.Run("gateway drop and resume lose no message", func(t *testing.T) { testDiscordGatewayGaps(env.with(t)) })
	t.Run("code with an unknown repo", func(t *testing.T) { testDiscordUnknownRepo(env.with(t)) })
	t.Run("allowed roles", func(t *testing.T) { testDiscordAllowedRoles(env.with(t)) })
	t.Run("whole run within Discord's limits", func(t *testing.T) {
		checkDiscordEditWindows(t, env.fake)
		for _, r := range env.fake.Requests() {
			if r.Status == 429 {
				t.Errorf("429 on %s %s: want none", r.Method, r.Path)
			}
		}
		if u := env.fake.UnknownRoutes(); len(u) > 0 {
			t.Errorf("routes Discord does not have: %+v", u)
		}
		checkDiscordPingsAtMost(t, env.fake, dAlice)
	})
}

func testDiscordCommands(e *discordEnv) {
	t, fake := e.t, e.fake
	// /code, the adapter's own, then the bridge's table: the commands
	// Discord offers are the ones the bridge answers.
	want := []string{"code"}
	for _, c := range bridge.Commands() {
		want = append(want, c.Name)
	}
	for _, g := range []string{dGuild, dGuild2} {
		cmds, err := fake.WaitForCommandOverwrite(e.ctx, g, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cmds {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("commands of guild %s: got %v, want %v", g, got, want)
		}
	}
	if n := fake.CommandOverwrites(""); n != 0 {
		t.Errorf("global command overwrites with guild_ids set: got %d, want 0", n)
	}
}

func testDiscordCode(e *discordEnv) {
	t, fake := e.t, e.fake
	e.scripts.add("alpha", func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("I wrote ", "`hello.txt`.")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "write", Args: `{"path":"hello.txt","content":"hello world\n"}`})
	})
	prompt := "alpha: add a hello file"
	th, ia := e.open(prompt)
	branch := discordBranch(th)
	if !strings.HasPrefix(branch, "bot/discord-") {
		t.Fatalf("branch %q, want the prefix bot/discord-", branch)
	}

	if !ia.Responded || ia.ResponseType != discordfake.ResponseDeferredChannelMessage || ia.Ephemeral || ia.Latency >= 3*time.Second {
		t.Errorf("first answer: got responded %v type %d ephemeral %v after %v, want a public deferral within 3s",
			ia.Responded, ia.ResponseType, ia.Ephemeral, ia.Latency)
	}
	ia = e.waitOriginal(ia.ID, func(m discordfake.Message) bool { return strings.Contains(m.Content, branch) })
	for _, want := range []string{prompt, "`app`", "`" + branch + "`"} {
		if !strings.Contains(ia.Original.Content, want) {
			t.Errorf("starter message: got %q, want it to contain %q", ia.Original.Content, want)
		}
	}
	ch, ok := fake.Channel(th)
	if !ok || ch.Type != discordfake.ChannelTypePublicThread || ch.ParentID != dGeneral || ch.ID != ia.Original.ID {
		t.Errorf("thread: got %+v, want a public thread in #general on the starter message %s", ch, ia.Original.ID)
	}

	answer := e.waitBot(th, "I wrote `hello.txt`.")
	notice := e.waitBot(th, "⬆️ pushed `"+branch+"`")
	e.waitBot(th, "⏱")
	if answer.WebhookID != "" || answer.InteractionID != "" || notice.WebhookID != "" {
		t.Errorf("answer and push notice: got webhook %q/%q interaction %q, want ordinary bot messages",
			answer.WebhookID, notice.WebhookID, answer.InteractionID)
	}

	posts := e.posted(th)
	wantStatus := "⏳ working… · `app` · `" + branch + "`"
	if len(posts) == 0 || !strings.HasPrefix(posts[0], wantStatus) {
		t.Errorf("first message in the thread: got %q, want it to start with %q", posts, wantStatus)
	}
	for _, r := range fake.Requests() {
		if r.Method == "POST" && r.Path == "/api/v9/channels/"+th+"/messages" {
			if d := r.At.Sub(ia.DispatchedAt); d > time.Second {
				t.Errorf("status message: posted %v after /code, want within 1s", d)
			}
			break
		}
	}
	// The status message's last edit may trail the posts.
	statusDone := func() bool {
		msgs := fake.Messages(th)
		return len(msgs) > 0 && strings.Contains(msgs[0].Content, "✓ `write` `hello.txt`") && msgs[0].Edits > 0
	}
	if err := fake.WaitFor(e.ctx, statusDone); err != nil {
		t.Errorf("status message: got %+v, want it edited in place to show the write ✓: %v", fake.Messages(th)[0], err)
	}
	if !slices.ContainsFunc(fake.Typing(), func(ty discordfake.Typing) bool { return ty.ChannelID == th }) {
		t.Errorf("typing indicators: got none in the thread, want one while working")
	}

	if !slices.Contains(e.remote.Branches(t), branch) {
		t.Fatalf("remote branches: got %v, want %s", e.remote.Branches(t), branch)
	}
	if got := e.remote.Files(t, branch)["hello.txt"]; got != "hello world" {
		t.Errorf("hello.txt on %s: got %q, want %q", branch, got, "hello world")
	}
	if c := e.remote.Commits(t, branch)[0]; c.Subject() != prompt {
		t.Errorf("commit subject: got %q, want the request %q", c.Subject(), prompt)
	}
	if tr := e.transcript(th) + ia.Original.Content; strings.Contains(tr, "sk-test-key") || strings.Contains(tr, fake.Token()) {
		t.Errorf("a secret reached Discord:\n%s", tr)
	}
}

func testDiscordFollowUp(e *discordEnv) {
	t, fake := e.t, e.fake
	g := newGate()
	var n atomic.Int32
	e.scripts.add("bravo", func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
			return llmfake.TextReply("first answer")
		}
		return answerPrompt(r)
	})
	th, _ := e.open("bravo: first request")
	e.waitGate(g)
	m := fake.UserMessage(th, dAlice, "and also this")
	e.waitReaction(th, m.ID, "⏳")
	close(g.open)
	e.waitBot(th, "answer to: and also this")
	e.waitReaction(th, m.ID, "👀")
	if e.botReacted(th, m.ID, "⏳") {
		t.Errorf("reactions on the follow-up: got %v, want ⏳ removed once delivered", fake.Reactions(th, m.ID))
	}
	tr := e.transcript(th)
	if strings.Index(tr, "first answer") > strings.Index(tr, "answer to: and also this") {
		t.Errorf("answers out of order:\n%s", tr)
	}
}

func testDiscordSteer(e *discordEnv) {
	t, fake := e.t, e.fake
	g := newGate()
	var n atomic.Int32
	e.scripts.add("charlie", func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
			return llmfake.ToolCallReply(
				llmfake.Call{ID: "c1", Name: "ls", Args: `{}`},
				llmfake.Call{ID: "c2", Name: "bash", Args: `{"command":"echo should-be-skipped"}`},
			)
		}
		return llmfake.TextReply("steered: " + lastUserText(r))
	})
	th, _ := e.open("charlie: look around")
	e.waitGate(g)
	id := fake.SlashCommand(th, dAlice, "steer", map[string]any{"text": "change course"})
	ia := e.waitOriginal(id, func(m discordfake.Message) bool { return strings.Contains(m.Content, "change course") })
	if ia.Ephemeral {
		t.Errorf("/steer answer: got ephemeral, want a public message showing the input")
	}
	e.waitReaction(th, ia.Original.ID, "↪️")
	close(g.open)
	e.waitBot(th, "steered: change course")
	e.waitReaction(th, ia.Original.ID, "👀")
	reqs := e.requestsFor("charlie")
	if len(reqs) != 2 {
		t.Fatalf("model requests: got %d, want 2 (the steer joined the run)", len(reqs))
	}
	skipped := slices.ContainsFunc(reqs[1].Messages, func(m llmfake.Message) bool {
		return m.Role == "tool" && m.ToolCallID == "c2" && strings.Contains(m.Content, "skipped")
	})
	if !skipped {
		t.Errorf("the tool call after the steer: got it run, want it skipped")
	}
}

func testDiscordStop(e *discordEnv) {
	t, fake := e.t, e.fake
	started := make(chan struct{}, 1)
	var n atomic.Int32
	e.scripts.add("delta", func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			started <- struct{}{}
			return llmfake.Stream(llmfake.Content("thinking about it"), llmfake.Hang())
		}
		return answerPrompt(r)
	})
	disconnects := e.llm.Disconnects()
	th, _ := e.open("delta: do a long thing")
	select {
	case <-started:
	case <-e.ctx.Done():
		t.Fatal("the model request never arrived")
	}
	begin := time.Now()
	id := fake.SlashCommand(th, dAlice, "stop", nil)
	e.waitBot(th, "stopped")
	if d := time.Since(begin); d > time.Second {
		t.Errorf("/stop: the thread said stopped after %v, want within 1s", d)
	}
	ia := e.waitOriginal(id, func(m discordfake.Message) bool { return m.Content == "✓" })
	if !ia.Ephemeral || ia.Latency >= 3*time.Second {
		t.Errorf("/stop answer: got ephemeral %v after %v, want an ephemeral ✓ within 3s", ia.Ephemeral, ia.Latency)
	}
	if err := e.llm.WaitDisconnects(e.ctx, disconnects+1); err != nil {
		t.Fatalf("the model stream was not cut: %v", err)
	}
	// The thread takes input again.
	fake.UserMessage(th, dAlice, "go on")
	e.waitBot(th, "answer to: go on")
	if got := len(e.requestsFor("delta")); got != 2 {
		t.Errorf("model requests after /stop and a new message: got %d, want 2", got)
	}
}

func testDiscordStatusDiff(e *discordEnv) {
	t, fake := e.t, e.fake
	e.scripts.add("echo", func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("wrote notes")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"notes.txt","content":"one\ntwo\n"}`})
	})
	th, _ := e.open("echo: write notes")
	branch := discordBranch(th)
	e.waitBot(th, "⬆️ pushed")
	e.waitBot(th, "⏱")

	id := fake.SlashCommand(th, dAlice, "status", nil)
	status := e.waitBot(th, "📊")
	for _, want := range []string{
		"*Status*: idle", "Model: `fake-model`", "Repository: `app` · branch `" + branch + "`", "Context: ", "Queue: empty",
		"Last push: `" + branch + "`",
	} {
		if !strings.Contains(status.Content, want) {
			t.Errorf("/status: got %q, want it to contain %q", status.Content, want)
		}
	}
	if ia := e.waitOriginal(id, func(m discordfake.Message) bool { return m.Content == "✓" }); !ia.Ephemeral {
		t.Errorf("/status answer: got a public one, want ephemeral")
	}

	fake.SlashCommand(th, dAlice, "diff", nil)
	stat := e.waitBot(th, "📄 `"+branch+"` vs `main`")
	if !strings.Contains(stat.Content, "1 file changed (+2 −0)") || !strings.Contains(stat.Content, "`notes.txt` +2 −0") {
		t.Errorf("/diff stat: got %q, want notes.txt +2 −0", stat.Content)
	}
	up, err := fake.WaitForMessage(e.ctx, th, func(m discordfake.Message) bool { return m.AuthorBot && len(m.Attachments) == 1 })
	if err != nil {
		t.Fatal(err)
	}
	file := up.Attachments[0]
	wantName := strings.ReplaceAll(branch, "/", "-") + ".diff"
	if file.Filename != wantName || !strings.Contains(string(file.Data), "+++ b/notes.txt") || !strings.Contains(string(file.Data), "+two") {
		t.Errorf("/diff file: got %s %q, want %s with the patch of notes.txt", file.Filename, file.Data, wantName)
	}

	// The commands that exist as text (!tools) are slash commands too.
	fake.SlashCommand(th, dAlice, "tools", nil)
	if tools := e.waitBot(th, "🧰 Built in: "); !strings.Contains(tools.Content, "bash") {
		t.Errorf("/tools: got %q, want the built-in tools", tools.Content)
	}
}

func testDiscordCompact(e *discordEnv) {
	t, fake := e.t, e.fake
	e.scripts.add("foxtrot", func(llmfake.Request) llmfake.Response { return bigReply(300) })
	th, _ := e.open("foxtrot: tell me about the notes")
	e.waitBot(th, "⏱")
	fake.UserMessage(th, dAlice, "tell me more")
	e.waitBotCount(th, "⏱", 2)

	fake.SlashCommand(th, dAlice, "compact", map[string]any{"focus": "the notes"})
	notice := e.waitBot(th, "compacted")
	if !strings.Contains(notice.Content, "→") {
		t.Errorf("compaction notice: got %q, want the token counts before → after", notice.Content)
	}
	focused := slices.ContainsFunc(e.llm.Requests(), func(r llmfake.Request) bool {
		return isSummaryReq(r) && strings.Contains(lastUserText(r), "foxtrot:") &&
			strings.Contains(lastUserText(r), "Pay particular attention to: the notes")
	})
	if !focused {
		t.Errorf("summary requests: got none with the focus %q", "the notes")
	}
	fake.UserMessage(th, dAlice, "and now?")
	e.waitBotCount(th, "⏱", 3)
	reqs := e.requestsFor("foxtrot")
	last := reqs[len(reqs)-1]
	if !slices.ContainsFunc(last.Messages, func(m llmfake.Message) bool { return strings.Contains(m.Content, "THE-SUMMARY") }) {
		t.Errorf("the request after /compact: got no summary in it, want THE-SUMMARY")
	}
}

func testDiscordLongAnswer(e *discordEnv) {
	t, fake := e.t, e.fake
	var b strings.Builder
	b.WriteString("Here is the new module.\n\n```go\n")
	for i := 0; b.Len() < 4600; i++ {
		fmt.Fprintf(&b, "func line%03d() string { return %q }\n", i, strings.Repeat("x", 20))
	}
	b.WriteString("```\n\nThat is all of it.")
	long := b.String()
	var chunks []string
	for s := long; s != ""; {
		n := min(len(s), 97)
		chunks = append(chunks, s[:n])
		s = s[n:]
	}
	e.scripts.add("golf", func(llmfake.Request) llmfake.Response { return llmfake.TextReply(chunks...) })
	th, _ := e.open("golf: write the module")
	e.waitBot(th, "⏱")

	var parts []string
	reopened := false
	for _, m := range fake.Messages(th) {
		if !m.AuthorBot {
			continue
		}
		if n := utf8.RuneCountInString(m.Content); n > 2000 {
			t.Errorf("message of %d characters, want at most 2000", n)
		}
		if strings.Count(m.Content, "```")%2 != 0 {
			t.Errorf("message with an unbalanced code fence:\n%s", m.Content)
		}
		if strings.Contains(m.Content, "func line") {
			parts = append(parts, m.Content)
			reopened = reopened || strings.HasPrefix(m.Content, "```")
		}
	}
	if len(parts) < 3 {
		t.Fatalf("answer messages: got %d, want at least 3 for %d characters", len(parts), len(long))
	}
	if !reopened {
		t.Errorf("no message reopens the code block: the split did not keep the fence")
	}
	joined := strings.Join(parts, "\n")
	for _, line := range strings.Split(long, "\n") {
		if strings.HasPrefix(line, "func line") && !strings.Contains(joined, line) {
			t.Errorf("line %q of the answer is missing from the thread", line)
		}
	}
	if !strings.Contains(joined, "That is all of it.") {
		t.Errorf("the end of the answer is missing from the thread")
	}
}

// testDiscordEditRate streams one long answer alone, so that the outbox's
// counters describe it: it doubles as the edit-coalescing benchmark.
func testDiscordEditRate(e *discordEnv) {
	t, fake := e.t, e.fake
	const deltas, every = 150, 25 * time.Millisecond
	var chunks []string
	for i := range deltas {
		chunks = append(chunks, fmt.Sprintf("word%03d lorem ipsum ", i))
	}
	e.scripts.add("hotel", func(llmfake.Request) llmfake.Response {
		return llmfake.TextReply(chunks...).WithChunkDelay(every)
	})
	before := e.m.Outboxes["discord"].Stats()
	th, _ := e.open("hotel: stream a long answer")
	e.waitBot(th, fmt.Sprintf("word%03d", deltas-1))
	e.waitBot(th, "⏱")
	after := e.m.Outboxes["discord"].Stats()

	var edits []time.Time
	for _, r := range fake.Requests() {
		if !strings.HasPrefix(r.Path, "/api/v9/channels/"+th+"/") {
			continue
		}
		if r.Status == 429 {
			t.Errorf("429 on %s %s: want none", r.Method, r.Path)
		}
		if r.Method == "PATCH" && r.Status < 300 {
			edits = append(edits, r.At)
		}
	}
	if len(edits) < 3 {
		t.Errorf("edits of the streaming status: got %d, want at least 3 (the preview follows the stream)", len(edits))
	}
	checkDiscordEditWindows(t, fake)
	t.Logf("one streamed answer (%d deltas, one per %v): edits requested %d, sent %d (Discord saw %d in the thread), posts %d, rate limited %d",
		deltas, every, after.EditsRequested-before.EditsRequested, after.EditsSent-before.EditsSent, len(edits),
		after.Posts-before.Posts, after.RateLimited-before.RateLimited)
}

// testDiscordGatewayGaps: a message written while the gateway connection is
// down arrives with the resume; one written while the gateway session is
// lost altogether is fetched over REST after the new READY. Each is answered
// once. Two threads, so each has its own posting budget.
func testDiscordGatewayGaps(e *discordEnv) {
	t, fake := e.t, e.fake
	e.scripts.add("india", answerPrompt)
	id1, id2 := e.code("india: one"), e.code("india: two")
	th1, _ := e.threadOf(id1)
	th2, _ := e.threadOf(id2)
	e.waitBot(th1, "⏱")
	e.waitBot(th2, "⏱")

	resumes := fake.Resumes()
	if n := fake.DropGateway(); n != 1 {
		t.Fatalf("gateway connections dropped: got %d, want 1", n)
	}
	gap1 := "typed during the gap"
	fake.UserMessage(th1, dAlice, gap1)
	if err := fake.WaitForResumed(e.ctx, resumes+1); err != nil {
		t.Fatal(err)
	}

	readies := fake.Readies()
	fake.InvalidateSession(false)
	// No gateway session exists now: only the catch-up over REST brings this.
	gap2 := "typed while the session was gone"
	fake.UserMessage(th2, dAlice, gap2)
	if err := fake.WaitForReady(e.ctx, readies+1); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ thread, text string }{{th1, gap1}, {th2, gap2}} {
		e.waitBot(c.thread, "answer to: "+c.text)
		// /status is handled after every event before it, replays and
		// catch-up included: a duplicate would be running or queued.
		fake.SlashCommand(c.thread, dAlice, "status", nil)
		st := e.waitBot(c.thread, "📊")
		if !strings.Contains(st.Content, "*Status*: idle") || !strings.Contains(st.Content, "Queue: empty") {
			t.Errorf("status after %q: got %q, want idle with an empty queue", c.text, st.Content)
		}
		runs := 0
		for _, r := range e.requestsFor("india") {
			if lastUserText(r) == c.text {
				runs++
			}
		}
		if runs != 1 {
			t.Errorf("runs for %q: got %d, want 1", c.text, runs)
		}
		if n := e.countBot(c.thread, "answer to: "+c.text); n != 1 {
			t.Errorf("answers to %q: got %d, want 1", c.text, n)
		}
	}
	if n := fake.CommandOverwrites(dGuild); n != 1 {
		t.Errorf("command overwrites after reconnects: got %d, want 1 (once per start)", n)
	}
}

func testDiscordUnknownRepo(e *discordEnv) {
	t, fake := e.t, e.fake
	threads := len(fake.Threads())
	id := fake.SlashCommand(dGeneral, dAlice, "code", map[string]any{"prompt": "juliet: do it", "repo": "nope"})
	ia, err := fake.WaitForInteractionResponse(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !ia.Ephemeral || ia.Original == nil {
		t.Fatalf("answer to /code repo:nope: %+v, want an ephemeral note", ia)
	}
	if want := "`nope` can't be opened in this channel: a repository is kept to the channels mapped to it. Here you may use: app, web."; !strings.Contains(ia.Original.Content, want) {
		t.Errorf("answer to /code repo:nope: got %q, want it to contain %q", ia.Original.Content, want)
	}
	// A later /code is handled after this one (the adapter keeps order):
	// once its thread is answered, the refused one is done for good.
	e.scripts.add("kilo", answerPrompt)
	th, _ := e.open("kilo: after the unknown repo")
	e.waitBot(th, "answer to: kilo")
	if got := len(fake.Threads()); got != threads+1 {
		t.Errorf("threads: got %d, want %d (none for the unknown repo)", got, threads+1)
	}
	if ia, _ := fake.Interaction(id); ia.Original.ThreadID != "" {
		t.Errorf("the refused /code's message got thread %s, want none", ia.Original.ThreadID)
	}
	if reqs := e.requestsFor("juliet"); len(reqs) != 0 {
		t.Errorf("model requests for the unknown repo: got %d, want 0", len(reqs))
	}
}

func testDiscordAllowedRoles(e *discordEnv) {
	t, fake := e.t, e.fake
	threads := len(fake.Threads())
	id := fake.SlashCommand(dGeneral, dBob, "code", map[string]any{"prompt": "lima: let me in"})
	ia, err := fake.WaitForInteractionResponse(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !ia.Ephemeral || ia.Original == nil || !strings.Contains(ia.Original.Content, "not allowed") || ia.Latency >= 3*time.Second {
		t.Errorf("/code by bob (no role): got ephemeral %v %+v after %v, want an ephemeral refusal within 3s", ia.Ephemeral, ia.Original, ia.Latency)
	}

	// alice has the role: her session runs; bob's message in it does not.
	e.scripts.add("mike", answerPrompt)
	th, _ := e.open("mike: hello")
	e.waitBot(th, "answer to: mike: hello")
	e.waitBot(th, "⏱")
	fake.UserMessage(th, dBob, "lima: let me in too")
	// Outside an interaction Discord has no ephemeral message: bob gets a
	// direct message, and the thread says nothing that names him.
	note := e.waitBot(fake.DMChannel(dBob), "not allowed")
	if strings.Contains(note.Content, "<@") || !strings.Contains(note.Content, "<#"+th+">") {
		t.Errorf("refusal of bob's message: got %q, want a direct message naming the thread and nobody", note.Content)
	}
	if n := e.countBot(th, "not allowed"); n != 0 {
		t.Errorf("refusal notes in the thread: %d, want 0", n)
	}
	fake.UserMessage(th, dAlice, "and now me")
	e.waitBot(th, "answer to: and now me")
	for _, r := range e.requestsFor("mike") {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, "let me in too") {
				t.Errorf("bob's message reached the model: %q", m.Content)
			}
		}
	}
	if reqs := e.requestsFor("lima"); len(reqs) != 0 {
		t.Errorf("model requests for bob's /code: got %d, want 0", len(reqs))
	}
	if got := len(fake.Threads()); got != threads+1 {
		t.Errorf("threads: got %d, want %d (only alice's)", got, threads+1)
	}
}

// checkDiscordEditWindows fails if any channel saw more than 5 successful message
// edits within 5 seconds.
func checkDiscordEditWindows(t *testing.T, fake *discordfake.Server) {
	t.Helper()
	byChannel := map[string][]time.Time{}
	for _, r := range fake.Requests() {
		if r.Method != "PATCH" || r.Status >= 300 || !strings.HasPrefix(r.Path, "/api/v9/channels/") {
			continue
		}
		ch := strings.Split(strings.TrimPrefix(r.Path, "/api/v9/channels/"), "/")[0]
		byChannel[ch] = append(byChannel[ch], r.At)
	}
	for ch, at := range byChannel {
		for i := range at {
			n := 0
			for j := i; j < len(at) && at[j].Sub(at[i]) < 5*time.Second; j++ {
				n++
			}
			if n > 5 {
				t.Errorf("channel %s: %d edits within 5s from %s, want at most 5", ch, n, at[i].Format("15:04:05.000"))
			}
		}
	}
}
