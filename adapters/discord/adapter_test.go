package discord_test

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// TestAdapter drives one running adapter (one gateway session: closing one
// costs discordgo a second) through everything a guild does with it. The
// subtests build on each other: the session thread /code opens is used by the
// ones after it.
func TestAdapter(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	// A command of an older version of the bot: registration must replace it.
	if _, err := restSession(t, fake).ApplicationCommandCreate(fake.ApplicationID(), guild,
		&discordgo.ApplicationCommand{Name: "old", Description: "gone"}); err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(fake)
	cfg.GuildIDs = []string{guild}
	cfg.AllowedRoles = []string{discordfake.DevRoleID} // alice has it, bob does not
	e := start(t, fake, cfg)
	h := e.h
	h.set(func(h *recorder) {
		h.refuse = func(in chat.Inbound) bool {
			return in.Author.ID == bob || strings.Contains(in.Text, "forbidden")
		}
	})

	t.Run("identify and commands", func(t *testing.T) {
		if got := fake.Intents(); got != int(discord.Intents) || got&discordfake.IntentMessageContent == 0 {
			t.Errorf("identify intents: got %b, want %b with MESSAGE_CONTENT", got, discord.Intents)
		}
		cmds, err := fake.WaitForCommandOverwrite(ctxT(t), guild, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := commandNames(cmds), tableNames(); !slices.Equal(got, want) {
			t.Errorf("guild commands: got %v, want %v (the stale /old replaced)", got, want)
		}
		checkCommandsAreTheTable(t, cmds)
		want := tableNames()
		code := cmds[0].Options
		if len(code) != 2 || code[0].Name != "prompt" || !code[0].Required || code[1].Name != "repo" || code[1].Required {
			t.Errorf("/code options: got %+v, want prompt (required) and repo (optional)", code)
		}
		// /model alone lists the models, so its name is optional.
		if model := cmds[slices.Index(want, "model")].Options; len(model) != 1 || model[0].Name != "name" || model[0].Required {
			t.Errorf("/model options: got %+v, want name (optional)", model)
		}
		if n := fake.CommandOverwrites(""); n != 0 {
			t.Errorf("global overwrites with guild_ids set: got %d, want 0", n)
		}
		if e.a.BotUserID() != fake.BotUserID() || e.a.ApplicationID() != fake.ApplicationID() {
			t.Errorf("identity from READY: got bot %q app %q, want %q %q",
				e.a.BotUserID(), e.a.ApplicationID(), fake.BotUserID(), fake.ApplicationID())
		}
	})

	var thread string // the session thread of the next subtests
	t.Run("code opens a thread", func(t *testing.T) {
		prompt := "fix the login bug\nand add a test"
		id := fake.SlashCommand(general, alice, "code", map[string]any{"prompt": prompt, "repo": "web"})
		in := h.inbound(t, id)
		ia, _ := fake.Interaction(id)
		if !ia.Responded || ia.ResponseType != discordfake.ResponseDeferredChannelMessage || ia.Ephemeral || ia.Latency >= 3*time.Second {
			t.Errorf("answer: got responded %v type %d ephemeral %v after %v, want a public deferral within 3s",
				ia.Responded, ia.ResponseType, ia.Ephemeral, ia.Latency)
		}
		threads := fake.Threads()
		if len(threads) != 1 {
			t.Fatalf("threads: got %d, want 1", len(threads))
		}
		th := threads[0]
		thread = th.ID
		if ia.Original == nil || th.ID != ia.Original.ID || th.ParentID != general || th.Name != "fix the login bug" {
			t.Errorf("thread: got %+v, want one on the starter message in #general named after the prompt's first line", th)
		}
		if ia.Original != nil {
			for _, want := range []string{"fix the login bug", "and add a test", "`web`", "`bot/discord-" + th.ID + "`", "<@" + alice + ">"} {
				if !strings.Contains(ia.Original.Content, want) {
					t.Errorf("starter message: got %q, want it to contain %q", ia.Original.Content, want)
				}
			}
		}
		want := chat.Inbound{
			Thread:  chat.ThreadRef{Platform: "discord", Team: guild, Channel: th.ID, Thread: th.ID},
			EventID: id, Author: chat.Author{ID: alice, Name: discordfake.AliceName, Roles: []string{discordfake.DevRoleID}},
			Text: prompt, Mention: true, Repo: "web",
		}
		in.Time = time.Time{}
		if !inboundEqual(in, want) {
			t.Errorf("Inbound: got %+v, want %+v", in, want)
		}
	})
	if thread == "" {
		t.Fatal("no session thread: the remaining subtests need one")
	}

	t.Run("code with an unknown repo", func(t *testing.T) {
		before := len(fake.Threads())
		id := fake.SlashCommand(general, alice, "code", map[string]any{"prompt": "do it", "repo": "nope"})
		e.barrier(t, thread)
		ia, _ := fake.Interaction(id)
		if ia.Original == nil || !strings.Contains(ia.Original.Content, `unknown repository "nope"`) || !strings.Contains(ia.Original.Content, "app, web") {
			t.Errorf("starter after an unknown repo: got %+v, want the error listing the known repos", ia.Original)
		}
		if got := len(fake.Threads()); got != before {
			t.Errorf("threads: got %d, want %d (none opened)", got, before)
		}
		if n := h.count(func(in chat.Inbound) bool { return in.EventID == id }); n != 0 {
			t.Errorf("Receive calls for the refused /code: got %d, want 0", n)
		}
	})

	t.Run("thread messages", func(t *testing.T) {
		m := fake.UserMessage(thread, alice, "also handle logout")
		in := h.inbound(t, m.ID)
		in.Time = time.Time{}
		want := chat.Inbound{
			Thread:  chat.ThreadRef{Platform: "discord", Team: guild, Channel: thread, Thread: thread},
			EventID: m.ID, MessageID: m.ID,
			Author: chat.Author{ID: alice, Name: discordfake.AliceName, Roles: []string{discordfake.DevRoleID}},
			Text:   "also handle logout",
		}
		if !inboundEqual(in, want) {
			t.Errorf("Inbound: got %+v, want %+v", in, want)
		}
		m2 := fake.UserMessage(thread, alice, "<@"+fake.BotUserID()+"> !status")
		in2 := h.inbound(t, m2.ID)
		if in2.Text != "!status" || !in2.Mention {
			t.Errorf("a message starting with the bot's mention: got text %q mention %v, want %q and true", in2.Text, in2.Mention, "!status")
		}
		top := fake.UserMessage(general, alice, "chatter in the channel")
		e.barrier(t, thread)
		if n := h.count(func(in chat.Inbound) bool { return in.EventID == top.ID }); n != 0 {
			t.Errorf("Receive calls for a top-level channel message: got %d, want 0", n)
		}
	})

	t.Run("bots are ignored", func(t *testing.T) {
		other := fake.UserMessage(thread, discordfake.OtherBotID, "beep")
		own, err := e.a.Post(ctxT(t), chat.ThreadRef{Platform: "discord", Team: guild, Channel: thread, Thread: thread}, "I am the bot")
		if err != nil {
			t.Fatal(err)
		}
		e.barrier(t, thread)
		if n := h.count(func(in chat.Inbound) bool { return in.EventID == other.ID || in.EventID == own }); n != 0 {
			t.Errorf("Receive calls for bot messages: got %d, want 0", n)
		}
	})

	t.Run("code inside a session thread", func(t *testing.T) {
		id := fake.SlashCommand(thread, alice, "code", map[string]any{"prompt": "now the docs"})
		in := h.inbound(t, id)
		ia, _ := fake.Interaction(id)
		if ia.Original == nil || ia.Original.ChannelID != thread || !strings.Contains(ia.Original.Content, "now the docs") {
			t.Fatalf("answer: got %+v, want a public message in the thread showing the prompt", ia.Original)
		}
		if in.Thread.Channel != thread || !in.Mention || in.Text != "now the docs" || in.MessageID != ia.Original.ID {
			t.Errorf("Inbound: got %+v, want the prompt as a mention in thread %s with MessageID %s", in, thread, ia.Original.ID)
		}
		if n := len(fake.Threads()); n != 1 {
			t.Errorf("threads: got %d, want 1 (no new thread from inside one)", n)
		}
	})

	t.Run("commands in a session thread", func(t *testing.T) {
		cases := []struct {
			name    string
			opts    map[string]any
			text    string
			public  bool
			showing string
		}{
			{"steer", map[string]any{"text": "go left"}, "!steer go left", true, "go left"},
			{"followup", map[string]any{"text": "then right"}, "!followup then right", true, "then right"},
			{"stop", nil, "!stop", false, "✓"},
			{"status", nil, "!status", false, "✓"},
			{"compact", nil, "!compact", false, "✓"},
			{"compact", map[string]any{"focus": "the tests"}, "!compact the tests", false, "✓"},
			{"diff", nil, "!diff", false, "✓"},
			{"reset", nil, "!reset", false, "✓"},
			{"model", map[string]any{"name": "gpt-5"}, "!model gpt-5", false, "✓"},
			{"model", nil, "!model", false, "✓"},
			{"help", nil, "!help", false, "✓"},
		}
		for _, c := range cases {
			id := fake.SlashCommand(thread, alice, c.name, c.opts)
			in := h.inbound(t, id)
			if in.Text != c.text || in.Thread.Channel != thread || in.Mention || in.Author.ID != alice {
				t.Errorf("/%s: got Inbound %+v, want text %q in the thread without mention", c.name, in, c.text)
			}
			ia, err := fake.WaitForInteractionResponse(ctxT(t), id)
			if err != nil {
				t.Fatal(err)
			}
			if ia.Latency >= 3*time.Second || ia.Ephemeral == c.public {
				t.Errorf("/%s: answered after %v ephemeral %v, want within 3s and ephemeral %v", c.name, ia.Latency, ia.Ephemeral, !c.public)
			}
			waitOriginal(t, fake, id, func(m discordfake.Message) bool { return strings.Contains(m.Content, c.showing) })
			if c.public {
				ia, _ = fake.Interaction(id)
				if in.MessageID != ia.Original.ID {
					t.Errorf("/%s: MessageID %q, want the public answer %q (the target of acknowledgements)", c.name, in.MessageID, ia.Original.ID)
				}
			}
		}
	})

	t.Run("commands outside a thread", func(t *testing.T) {
		status := fake.SlashCommand(general, alice, "status", nil)
		help := fake.SlashCommand(general, alice, "help", nil)
		e.barrier(t, thread)
		for _, c := range []struct{ id, want string }{{status, "session thread"}, {help, "/code prompt:"}} {
			ia, err := fake.WaitForInteractionResponse(ctxT(t), c.id)
			if err != nil {
				t.Fatal(err)
			}
			if ia.ResponseType != discordfake.ResponseChannelMessageWithSource || !ia.Ephemeral || ia.Original == nil ||
				!strings.Contains(ia.Original.Content, c.want) {
				t.Errorf("/%s in #general: got type %d ephemeral %v %+v, want an ephemeral reply containing %q",
					ia.CommandName, ia.ResponseType, ia.Ephemeral, ia.Original, c.want)
			}
			if n := h.count(func(in chat.Inbound) bool { return in.EventID == c.id }); n != 0 {
				t.Errorf("/%s in #general: got %d Receive calls, want 0", ia.CommandName, n)
			}
		}
		// /help lists every command of the table, with its usage and description.
		ia, _ := fake.Interaction(help)
		for _, c := range bridge.Commands() {
			if line := "`" + c.Usage("/") + "` — " + c.Description; ia.Original == nil || !strings.Contains(ia.Original.Content, line) {
				t.Errorf("/help in #general lacks %q", line)
			}
		}
	})

	t.Run("users who are not allowed", func(t *testing.T) {
		before := len(fake.Threads())
		id := fake.SlashCommand(general, bob, "code", map[string]any{"prompt": "let me in"})
		ia, err := fake.WaitForInteractionResponse(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if !ia.Ephemeral || ia.Original == nil || !strings.Contains(ia.Original.Content, "not allowed") {
			t.Errorf("/code by bob: got ephemeral %v %+v, want an ephemeral refusal", ia.Ephemeral, ia.Original)
		}
		m := fake.UserMessage(thread, bob, "let me in too")
		h.inbound(t, m.ID)
		// Outside an interaction the note is a direct message: a reply in
		// the thread would name bob in front of everyone.
		note, err := fake.WaitForMessage(ctxT(t), fake.DMChannel(bob), func(x discordfake.Message) bool {
			return x.AuthorBot && strings.Contains(x.Content, "not for you")
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(note.Content, "<#"+thread+">") || strings.Contains(note.Content, "<@") {
			t.Errorf("refusal note for a message: got %q, want a DM naming the thread and nobody", note.Content)
		}
		for _, x := range fake.Messages(thread) {
			if x.AuthorBot && strings.Contains(x.Content, "not for you") {
				t.Errorf("refusal note in the thread: %q", x.Content)
			}
		}
		if got := len(fake.Threads()); got != before {
			t.Errorf("threads after a refused /code: got %d, want %d", got, before)
		}
	})

	t.Run("whisper through the interaction", func(t *testing.T) {
		model := fake.SlashCommand(thread, alice, "model", map[string]any{"name": "forbidden"})
		h.inbound(t, model)
		waitOriginal(t, fake, model, func(m discordfake.Message) bool { return m.Content == "not for you" })
		steer := fake.SlashCommand(thread, alice, "steer", map[string]any{"text": "forbidden fruit"})
		h.inbound(t, steer)
		if err := fake.WaitFor(ctxT(t), func() bool {
			ia, _ := fake.Interaction(steer)
			return len(ia.Followups) == 1
		}); err != nil {
			t.Fatal(err)
		}
		ia, _ := fake.Interaction(steer)
		if f := ia.Followups[0]; f.Content != "not for you" || f.Flags&discordfake.MessageFlagEphemeral == 0 {
			t.Errorf("whisper after a public answer: got %+v, want an ephemeral followup", f)
		}
	})

	t.Run("direct messages", func(t *testing.T) {
		dm := fake.DMChannel(alice)
		m := fake.UserMessage(dm, alice, "hello there")
		in := h.inbound(t, m.ID)
		want := chat.ThreadRef{Platform: "discord", Team: "", Channel: dm, Thread: dm}
		if in.Thread != want || !in.DM || !in.Mention || in.Text != "hello there" {
			t.Errorf("DM Inbound: got %+v, want a mention in %+v", in, want)
		}
	})

	t.Run("attachments", func(t *testing.T) {
		data := []byte("panic: nil map\n")
		m := fake.UserMessage(thread, alice, "see the log", discordfake.Attachment{Filename: "app.log", ContentType: "text/plain", Data: data})
		in := h.inbound(t, m.ID)
		if len(in.Attachments) != 1 {
			t.Fatalf("attachments: got %+v, want 1", in.Attachments)
		}
		at := in.Attachments[0]
		if at.Name != "app.log" || at.MimeType != "text/plain" || at.Size != int64(len(data)) || at.URL == "" {
			t.Errorf("attachment: got %+v, want app.log text/plain %d bytes with a URL", at, len(data))
		}
		rc, err := e.a.Download(ctxT(t), at.URL)
		if err != nil {
			t.Fatalf("Download: %v", err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != string(data) {
			t.Errorf("downloaded: got %q, want %q", got, data)
		}
		if _, err := e.a.Download(ctxT(t), at.URL+"-missing"); err == nil {
			t.Errorf("Download of a missing file: got no error, want one")
		}
		if _, err := e.a.Download(ctxT(t), "file:///etc/passwd"); err == nil {
			t.Errorf("Download of a file:// URL: got no error, want one")
		}
	})

	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: thread, Thread: thread}
	t.Run("post edit react upload typing", func(t *testing.T) {
		ctx := ctxT(t)
		id, err := e.a.Post(ctx, ref, "working… @everyone <@"+bob+"> <@"+alice+">")
		if err != nil {
			t.Fatalf("Post: %v", err)
		}
		req, _ := fake.WaitForRequest(ctx, func(r discordfake.Request) bool { return strings.Contains(string(r.Body), "working…") })
		// alice asked last in this thread: she alone may be pinged.
		if !strings.Contains(string(req.Body), `"allowed_mentions":{"parse":[],"users":["`+alice+`"]`) {
			t.Errorf("Post allowed_mentions: got %s, want no parse types and only alice", req.Body)
		}
		for _, n := range fake.Notices() {
			if n.Everyone || len(n.Roles) > 0 || slices.ContainsFunc(n.Users, func(u string) bool { return u != alice }) {
				t.Errorf("a message pings %+v, want at most alice", n)
			}
		}
		if err := untilNotLimited(t, func() error { return e.a.Edit(ctx, ref, id, "done") }); err != nil {
			t.Fatalf("Edit: %v", err)
		}
		if m, _ := fake.Message(id); m.Content != "done" || m.Edits != 1 {
			t.Errorf("after Edit: got %q (%d edits), want %q", m.Content, m.Edits, "done")
		}
		um := fake.UserMessage(thread, alice, "queued input")
		h.inbound(t, um.ID)
		for _, step := range []struct {
			emoji string
			add   bool
		}{{"hourglass_flowing_sand", true}, {"hourglass_flowing_sand", false}, {"arrow_right_hook", true}, {"eyes", true}} {
			if err := untilNotLimited(t, func() error { return e.a.React(ctx, ref, um.ID, step.emoji, step.add) }); err != nil {
				t.Fatalf("React %s %v: %v", step.emoji, step.add, err)
			}
		}
		var got []string
		for _, r := range fake.Reactions(thread, um.ID) {
			got = append(got, r.Emoji)
		}
		if want := []string{"↪️", "👀"}; !slices.Equal(got, want) {
			t.Errorf("reactions: got %q, want %q", got, want)
		}
		if err := e.a.React(ctx, ref, um.ID, "no_such_emoji", true); err == nil {
			t.Errorf("React with an unknown name: got no error, want one")
		}
		diff := []byte("--- a/x\n+++ b/x\n+y\n")
		if err := untilNotLimited(t, func() error { return e.a.Upload(ctx, ref, "bot-branch.diff", diff, "full diff") }); err != nil {
			t.Fatalf("Upload: %v", err)
		}
		up, err := fake.WaitForMessage(ctx, thread, func(m discordfake.Message) bool { return len(m.Attachments) == 1 && m.AuthorBot })
		if err != nil {
			t.Fatal(err)
		}
		if a := up.Attachments[0]; up.Content != "full diff" || a.Filename != "bot-branch.diff" || string(a.Data) != string(diff) || a.ContentType != "text/x-diff" {
			t.Errorf("upload: got %q with %+v, want the diff as text/x-diff under its comment", up.Content, a)
		}
		typing := len(fake.Typing())
		if err := e.a.SetStatus(ctx, ref, "working"); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		if err := e.a.SetStatus(ctx, ref, ""); err != nil {
			t.Fatalf("SetStatus empty: %v", err)
		}
		if got := fake.Typing(); len(got) != typing+1 || got[len(got)-1].ChannelID != thread {
			t.Errorf("typing: got %+v, want one more in the thread", got[typing:])
		}
	})

	t.Run("history", func(t *testing.T) {
		last := fake.UserMessage(thread, alice, "the latest")
		h.inbound(t, last.ID)
		got, err := e.a.History(ctxT(t), ref, last.ID)
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		var want []string
		for _, m := range fake.Messages(thread) {
			if !m.AuthorBot && m.ID != last.ID {
				text := m.Content
				for _, a := range m.Attachments {
					text += " [attachment: " + a.Filename + "]"
				}
				want = append(want, text)
			}
		}
		var texts []string
		for _, m := range got {
			texts = append(texts, m.Text)
			if m.Author.ID == fake.BotUserID() || m.Author.ID == discordfake.OtherBotID {
				t.Errorf("History has a bot's message: %+v", m)
			}
		}
		if !slices.Equal(texts, want) {
			t.Errorf("History texts: got %q, want %q", texts, want)
		}
		if len(got) > 0 && (got[0].Author.Name == "" || got[0].Time.IsZero()) {
			t.Errorf("History message: got %+v, want an author name and a time", got[0])
		}
	})

	t.Run("plain text", func(t *testing.T) {
		in := "<@" + fake.BotUserID() + "> ask <@" + alice + "> in <#" + general + "> and <@&" + discordfake.DevRoleID + "> <:party:123>"
		got := e.a.PlainText(ctxT(t), in)
		if want := "ask @alice in #general and @dev :party:"; got != want {
			t.Errorf("PlainText: got %q, want %q", got, want)
		}
	})

	t.Run("receive failure is said in the thread", func(t *testing.T) {
		h.set(func(h *recorder) { h.fail = func(in chat.Inbound) bool { return in.Text == "flaky" } })
		defer h.set(func(h *recorder) { h.fail = nil })
		m := fake.UserMessage(thread, alice, "flaky")
		if _, err := fake.WaitForMessage(ctxT(t), thread, func(x discordfake.Message) bool {
			return x.AuthorBot && strings.Contains(x.Content, "couldn't take your message")
		}); err != nil {
			t.Fatal(err)
		}
		if n := h.count(func(in chat.Inbound) bool { return in.EventID == m.ID }); n != 4 {
			t.Errorf("Receive attempts: got %d, want 4 (one and three retries)", n)
		}
	})

	t.Run("interactions are answered while the handler is busy", func(t *testing.T) {
		unblock := make(chan struct{})
		h.set(func(h *recorder) { h.block = unblock })
		blocking := fake.UserMessage(thread, alice, "block")
		h.inbound(t, blocking.ID)
		id := fake.SlashCommand(thread, alice, "status", nil)
		ia, err := fake.WaitForInteractionResponse(ctxT(t), id)
		// Counted while the message still blocks: once it is let go, the
		// command goes on to the handler at once.
		n := h.count(func(in chat.Inbound) bool { return in.EventID == id })
		close(unblock)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("the command reached the handler before the blocked message was done (%d calls)", n)
		}
		if ia.Latency >= 3*time.Second {
			t.Errorf("deferral latency with a busy handler: got %v, want < 3s", ia.Latency)
		}
		h.inbound(t, id)
	})

	t.Run("gateway drop loses nothing", func(t *testing.T) {
		resumes, active := fake.Resumes(), h.activeCalls()
		afterReads := countAfterReads(fake, thread)
		if n := fake.DropGateway(); n != 1 {
			t.Fatalf("dropped %d connections, want 1", n)
		}
		m := fake.UserMessage(thread, alice, "typed during the gap")
		if err := fake.WaitForResumed(ctxT(t), resumes+1); err != nil {
			t.Fatal(err)
		}
		h.inbound(t, m.ID)
		h.waitFor(t, "catch-up after RESUMED", func() bool { return h.active > active })
		if err := fake.WaitFor(ctxT(t), func() bool { return countAfterReads(fake, thread) > afterReads }); err != nil {
			t.Errorf("no GET messages?after= of the session thread after the resume: %v", err)
		}
		h.waitFor(t, "the gap message accepted", func() bool { return h.accepted[m.ID] })
	})

	t.Run("a lost gateway session is caught up over REST", func(t *testing.T) {
		readies := fake.Readies()
		fake.InvalidateSession(false)
		// No gateway session exists now: only the catch-up can bring this.
		m := fake.UserMessage(thread, alice, "typed while the session was gone")
		if err := fake.WaitForReady(ctxT(t), readies+1); err != nil {
			t.Fatal(err)
		}
		in := h.inbound(t, m.ID)
		if in.Text != m.Content || in.MessageID != m.ID || !slices.Equal(in.Author.Roles, []string{discordfake.DevRoleID}) {
			t.Errorf("caught-up Inbound: got %+v, want %q by alice with her roles", in, m.Content)
		}
		if n := fake.CommandOverwrites(guild); n != 1 {
			t.Errorf("command overwrites after a re-identify: got %d, want 1 (once per start)", n)
		}
	})

	if u := fake.UnknownRoutes(); len(u) > 0 {
		t.Errorf("the adapter called routes Discord does not have: %+v", u)
	}
}

// waitOriginal waits until the interaction's @original satisfies match.
func waitOriginal(t testing.TB, fake *discordfake.Server, id string, match func(discordfake.Message) bool) {
	t.Helper()
	err := fake.WaitFor(ctxT(t), func() bool {
		ia, _ := fake.Interaction(id)
		return ia.Original != nil && match(*ia.Original)
	})
	if err != nil {
		ia, _ := fake.Interaction(id)
		t.Fatalf("@original of /%s: got %+v: %v", ia.CommandName, ia.Original, err)
	}
}

// countAfterReads counts GET messages?after= requests on a channel.
func countAfterReads(fake *discordfake.Server, channel string) int {
	n := 0
	for _, r := range fake.Requests() {
		if r.Method == "GET" && strings.HasSuffix(r.Path, "/channels/"+channel+"/messages") && r.Query.Get("after") != "" {
			n++
		}
	}
	return n
}

func inboundEqual(x, y chat.Inbound) bool {
	return x.Thread == y.Thread && x.EventID == y.EventID && x.MessageID == y.MessageID &&
		x.Author.ID == y.Author.ID && x.Author.Name == y.Author.Name && slices.Equal(x.Author.Roles, y.Author.Roles) &&
		x.Text == y.Text && x.Mention == y.Mention && x.DM == y.DM && x.Repo == y.Repo &&
		len(x.Attachments) == len(y.Attachments)
}
