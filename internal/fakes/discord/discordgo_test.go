package discordfake_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// TestDiscordgo runs the real discordgo client against the fake. One gateway
// session serves all subtests, because Session.Close sleeps a second.
func TestDiscordgo(t *testing.T) {
	fake := discordfake.New(t)
	s, ev := openSession(t, fake)
	const guild, general = discordfake.DefaultGuildID, discordfake.DefaultChannelID

	t.Run("ready and guild create", func(t *testing.T) {
		r := waitEvent[*discordgo.Ready](t, ev, nil)
		if r.User == nil || r.User.ID != fake.BotUserID() || !r.User.Bot {
			t.Errorf("READY user: got %+v, want bot user %s", r.User, fake.BotUserID())
		}
		if r.Application == nil || r.Application.ID != fake.ApplicationID() {
			t.Errorf("READY application: got %+v, want id %s", r.Application, fake.ApplicationID())
		}
		if r.SessionID == "" || len(r.Guilds) != 1 || !r.Guilds[0].Unavailable {
			t.Errorf("READY: got session %q guilds %+v, want a session and one unavailable guild", r.SessionID, r.Guilds)
		}
		g := waitEvent[*discordgo.GuildCreate](t, ev, nil)
		if g.ID != guild || len(g.Channels) != 2 || g.Channels[0].Name != "general" {
			t.Errorf("GUILD_CREATE: got guild %s channels %d, want %s with #general and #random", g.ID, len(g.Channels), guild)
		}
		if got := fake.Intents(); got != int(botIntents) {
			t.Errorf("identify intents: got %d, want %d", got, botIntents)
		}
		// discordgo identifies with compress:true; READY then comes zlib-compressed.
		sent := fake.GatewaySent()
		i := slices.IndexFunc(sent, func(p discordfake.GatewayPayload) bool { return p.Type == "READY" })
		if i < 0 || !sent[i].Compressed || sent[i].Seq != 1 {
			t.Errorf("READY frame: got %+v, want a compressed dispatch with seq 1", sent[i])
		}
		if got, _ := s.State.Channel(general); got == nil {
			t.Errorf("discordgo state has no #general after GUILD_CREATE")
		}
	})

	t.Run("user message reaches handler", func(t *testing.T) {
		sent := fake.UserMessage(general, discordfake.AliceID, "hello <@"+fake.BotUserID()+">")
		m := waitEvent[*discordgo.MessageCreate](t, ev, func(m *discordgo.MessageCreate) bool { return m.ID == sent.ID })
		if m.Content != sent.Content || m.Author.ID != discordfake.AliceID || m.Author.Bot || m.GuildID != guild {
			t.Errorf("MESSAGE_CREATE: got %q by %s (bot %v) in guild %q, want %q by alice in %s",
				m.Content, m.Author.ID, m.Author.Bot, m.GuildID, sent.Content, guild)
		}
		if m.Member == nil || !slices.Contains(m.Member.Roles, discordfake.DevRoleID) {
			t.Errorf("MESSAGE_CREATE member: got %+v, want roles with dev", m.Member)
		}
		if len(m.Mentions) != 1 || m.Mentions[0].ID != fake.BotUserID() {
			t.Errorf("mentions: got %v, want the bot", m.Mentions)
		}
		other := fake.UserMessage(general, discordfake.OtherBotID, "beep")
		b := waitEvent[*discordgo.MessageCreate](t, ev, func(m *discordgo.MessageCreate) bool { return m.ID == other.ID })
		if !b.Author.Bot {
			t.Errorf("author of a bot's message: got bot=false, want true")
		}
	})

	t.Run("send edit list delete", func(t *testing.T) {
		first, err := s.ChannelMessageSend(general, "status: working")
		if err != nil {
			t.Fatalf("ChannelMessageSend: %v", err)
		}
		// The bot's own message comes back over the gateway, as on Discord.
		echo := waitEvent[*discordgo.MessageCreate](t, ev, func(m *discordgo.MessageCreate) bool { return m.ID == first.ID })
		if echo.Author.ID != fake.BotUserID() {
			t.Errorf("echo author: got %s, want the bot", echo.Author.ID)
		}
		if _, err := s.ChannelMessageEdit(general, first.ID, "status: done"); err != nil {
			t.Fatalf("ChannelMessageEdit: %v", err)
		}
		got, _ := fake.Message(first.ID)
		if got.Content != "status: done" || got.Edits != 1 || got.EditedAt.IsZero() {
			t.Errorf("after edit: got %q edits %d, want %q edits 1", got.Content, got.Edits, "status: done")
		}
		waitEvent[*discordgo.MessageUpdate](t, ev, func(m *discordgo.MessageUpdate) bool {
			return m.ID == first.ID && m.Content == "status: done"
		})
		var ids []string
		for i := range 3 {
			m, err := s.ChannelMessageSend(general, "n"+string(rune('0'+i)))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
		}
		page, err := s.ChannelMessages(general, 2, "", first.ID, "")
		if err != nil {
			t.Fatalf("ChannelMessages after: %v", err)
		}
		if len(page) != 2 || page[0].ID != ids[1] || page[1].ID != ids[0] {
			t.Errorf("messages after %s limit 2: got %v, want [%s %s] (newest first)", first.ID, msgIDs(page), ids[1], ids[0])
		}
		if err := s.ChannelMessageDelete(general, ids[2]); err != nil {
			t.Fatalf("ChannelMessageDelete: %v", err)
		}
		if _, found := fake.Message(ids[2]); found {
			t.Errorf("deleted message still listed")
		}
		waitEvent[*discordgo.MessageDelete](t, ev, func(m *discordgo.MessageDelete) bool { return m.ID == ids[2] })
	})

	t.Run("attachments both ways", func(t *testing.T) {
		m, err := s.ChannelMessageSendComplex(general, &discordgo.MessageSend{
			Content: "the diff",
			Files:   []*discordgo.File{{Name: "change.diff", ContentType: "text/x-diff", Reader: strings.NewReader("+x\n")}},
		})
		if err != nil {
			t.Fatalf("send with file: %v", err)
		}
		req, err := fake.WaitForRequest(ctxT(t), func(r discordfake.Request) bool {
			return r.Method == "POST" && len(r.Files) == 1
		})
		if err != nil {
			t.Fatal(err)
		}
		if req.Files[0].Filename != "change.diff" || string(req.Files[0].Data) != "+x\n" || !strings.Contains(string(req.Body), `"the diff"`) {
			t.Errorf("multipart: got file %q %q body %s, want change.diff, +x and payload_json", req.Files[0].Filename, req.Files[0].Data, req.Body)
		}
		if len(m.Attachments) != 1 || fetch(t, m.Attachments[0].URL) != "+x\n" {
			t.Errorf("attachment: got %+v, want one downloadable file", m.Attachments)
		}

		png := []byte("\x89PNG fake image")
		um := fake.UserMessage(general, discordfake.BobID, "look", discordfake.Attachment{Filename: "shot.png", ContentType: "image/png", Data: png})
		got := waitEvent[*discordgo.MessageCreate](t, ev, func(m *discordgo.MessageCreate) bool { return m.ID == um.ID })
		if len(got.Attachments) != 1 || got.Attachments[0].ContentType != "image/png" || got.Attachments[0].Size != len(png) {
			t.Fatalf("user attachment: got %+v, want shot.png image/png", got.Attachments)
		}
		if body := fetch(t, got.Attachments[0].URL); body != string(png) {
			t.Errorf("downloaded attachment: got %q, want %q", body, png)
		}
	})

	t.Run("thread from message", func(t *testing.T) {
		starter, err := s.ChannelMessageSend(general, "request: fix the bug")
		if err != nil {
			t.Fatal(err)
		}
		th, err := s.MessageThreadStartComplex(general, starter.ID, &discordgo.ThreadStart{Name: "fix the bug", AutoArchiveDuration: 1440})
		if err != nil {
			t.Fatalf("MessageThreadStartComplex: %v", err)
		}
		if th.ID != starter.ID || th.Type != discordgo.ChannelTypeGuildPublicThread || th.ParentID != general || th.ThreadMetadata == nil {
			t.Errorf("thread: got id %s type %d parent %s, want id %s type 11 parent %s", th.ID, th.Type, th.ParentID, starter.ID, general)
		}
		tc := waitEvent[*discordgo.ThreadCreate](t, ev, func(c *discordgo.ThreadCreate) bool { return c.ID == th.ID })
		if !tc.NewlyCreated || tc.Name != "fix the bug" {
			t.Errorf("THREAD_CREATE: got %+v, want newly created 'fix the bug'", tc.Channel)
		}
		if _, err := s.ChannelMessageSend(th.ID, "working in the thread"); err != nil {
			t.Fatalf("post in thread: %v", err)
		}
		in := fake.UserMessage(th.ID, discordfake.AliceID, "also do X")
		got := waitEvent[*discordgo.MessageCreate](t, ev, func(m *discordgo.MessageCreate) bool { return m.ID == in.ID })
		if got.ChannelID != th.ID || got.GuildID != guild || got.Content != "also do X" {
			t.Errorf("thread message: got channel %s guild %s %q, want %s %s %q", got.ChannelID, got.GuildID, got.Content, th.ID, guild, "also do X")
		}
		if msgs := fake.Messages(th.ID); len(msgs) != 2 {
			t.Errorf("thread messages: got %d, want 2", len(msgs))
		}
		_, err = s.MessageThreadStart(general, starter.ID, "again", 60)
		if code := restCode(t, err); code != 160004 {
			t.Errorf("second thread on a message: got code %d, want 160004", code)
		}
	})

	t.Run("reactions", func(t *testing.T) {
		um := fake.UserMessage(general, discordfake.AliceID, "queued input")
		if err := s.MessageReactionAdd(general, um.ID, "⏳"); err != nil {
			t.Fatalf("MessageReactionAdd: %v", err)
		}
		waitEvent[*discordgo.MessageReactionAdd](t, ev, func(r *discordgo.MessageReactionAdd) bool {
			return r.MessageID == um.ID && r.UserID == fake.BotUserID() && r.Emoji.Name == "⏳"
		})
		if err := s.MessageReactionRemove(general, um.ID, "⏳", "@me"); err != nil {
			t.Fatalf("MessageReactionRemove: %v", err)
		}
		if err := s.MessageReactionAdd(general, um.ID, "👀"); err != nil {
			t.Fatal(err)
		}
		if got := fake.Reactions(general, um.ID); len(got) != 1 || got[0].Emoji != "👀" {
			t.Errorf("reactions: got %+v, want only 👀", got)
		}
		err := s.MessageReactionAdd(general, um.ID, "eyes")
		if code := restCode(t, err); code != 10014 {
			t.Errorf("shortcode reaction: got code %d, want 10014 Unknown Emoji", code)
		}
		fake.React(general, um.ID, discordfake.BobID, "👍")
		r := waitEvent[*discordgo.MessageReactionAdd](t, ev, func(r *discordgo.MessageReactionAdd) bool { return r.UserID == discordfake.BobID })
		if r.Member == nil || r.Member.User.ID != discordfake.BobID || r.GuildID != guild {
			t.Errorf("user reaction: got %+v, want bob's member in the guild", r.MessageReaction)
		}
	})

	t.Run("typing", func(t *testing.T) {
		if err := s.ChannelTyping(general); err != nil {
			t.Fatalf("ChannelTyping: %v", err)
		}
		if got := fake.Typing(); len(got) != 1 || got[0].ChannelID != general {
			t.Errorf("typing: got %+v, want one in #general", got)
		}
	})

	var codeCmd *discordgo.ApplicationCommand
	t.Run("bulk overwrite commands", func(t *testing.T) {
		cmds := []*discordgo.ApplicationCommand{
			{Name: "code", Description: "Start a coding session", Options: []*discordgo.ApplicationCommandOption{
				{Type: discordgo.ApplicationCommandOptionString, Name: "prompt", Description: "What to do", Required: true},
				{Type: discordgo.ApplicationCommandOptionString, Name: "repo", Description: "Repository"},
			}},
			{Name: "status", Description: "Show the session"},
		}
		got, err := s.ApplicationCommandBulkOverwrite(fake.ApplicationID(), guild, cmds)
		if err != nil {
			t.Fatalf("bulk overwrite: %v", err)
		}
		if len(got) != 2 || got[0].ID == "" || got[0].GuildID != guild || got[0].ApplicationID != fake.ApplicationID() {
			t.Fatalf("overwrite answer: got %+v, want 2 commands with ids in the guild", got)
		}
		codeCmd = got[0]
		again, err := s.ApplicationCommandBulkOverwrite(fake.ApplicationID(), guild, cmds)
		if err != nil || again[0].ID != got[0].ID || again[0].Version != got[0].Version {
			t.Errorf("re-registering the same commands: got %+v (%v), want same ids and versions", again, err)
		}
		listed, err := s.ApplicationCommands(fake.ApplicationID(), guild)
		if err != nil || len(listed) != 2 || listed[0].Options[0].Name != "prompt" || !listed[0].Options[0].Required {
			t.Errorf("list: got %+v (%v), want code(prompt required), status", listed, err)
		}
		if n := fake.CommandOverwrites(guild); n != 2 {
			t.Errorf("overwrites: got %d, want 2", n)
		}
		if _, err := s.ApplicationCommandBulkOverwrite(fake.ApplicationID(), "", cmds[1:]); err != nil {
			t.Fatalf("global overwrite: %v", err)
		}
		if g := fake.Commands(""); len(g) != 1 || g[0].Name != "status" {
			t.Errorf("global commands: got %+v, want status", g)
		}
		_, err = s.ApplicationCommandBulkOverwrite(fake.ApplicationID(), guild, []*discordgo.ApplicationCommand{{Name: "Code", Description: "x"}})
		if code := restCode(t, err); code != 50035 {
			t.Errorf("upper-case name: got code %d, want 50035", code)
		}
	})

	t.Run("slash command deferred then edited", func(t *testing.T) {
		id := fake.SlashCommand(general, discordfake.AliceID, "code", map[string]any{"prompt": "fix it", "repo": "app"})
		ic := waitEvent[*discordgo.InteractionCreate](t, ev, func(i *discordgo.InteractionCreate) bool { return i.ID == id })
		data := ic.ApplicationCommandData()
		if data.Name != "code" || data.ID != codeCmd.ID || data.GetOption("prompt").StringValue() != "fix it" || data.GetOption("repo").StringValue() != "app" {
			t.Errorf("interaction data: got %+v, want /code prompt=fix it repo=app", data)
		}
		if ic.Member == nil || ic.Member.User.ID != discordfake.AliceID || !slices.Contains(ic.Member.Roles, discordfake.DevRoleID) ||
			ic.GuildID != guild || ic.ChannelID != general || ic.Token == "" || ic.AppID != fake.ApplicationID() {
			t.Errorf("interaction: got member %+v guild %s channel %s, want alice with dev in #general", ic.Member, ic.GuildID, ic.ChannelID)
		}
		if err := s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
			t.Fatalf("defer: %v", err)
		}
		in, _ := fake.Interaction(id)
		if !in.Responded || in.ResponseType != 5 || in.Latency > 3*time.Second || in.Original == nil || in.Original.Flags&discordfake.MessageFlagLoading == 0 {
			t.Errorf("after defer: got %+v, want a deferred response with a loading message", in)
		}
		content := "**request** fix it · repo app · branch bot/discord-x"
		orig, err := s.InteractionResponseEdit(ic.Interaction, &discordgo.WebhookEdit{Content: &content})
		if err != nil {
			t.Fatalf("edit @original: %v", err)
		}
		if orig.Content != content || orig.Flags&discordgo.MessageFlagsLoading != 0 {
			t.Errorf("@original: got %q flags %d, want the starter without loading", orig.Content, orig.Flags)
		}
		th, err := s.MessageThreadStart(general, orig.ID, "fix it", 1440)
		if err != nil || th.ID != orig.ID {
			t.Fatalf("thread on @original: got %+v, %v", th, err)
		}
		fu, err := s.FollowupMessageCreate(ic.Interaction, true, &discordgo.WebhookParams{Content: "only you can see this", Flags: discordgo.MessageFlagsEphemeral})
		if err != nil {
			t.Fatalf("followup: %v", err)
		}
		in, _ = fake.Interaction(id)
		if len(in.Followups) != 1 || in.Followups[0].ID != fu.ID || in.Followups[0].Flags&discordfake.MessageFlagEphemeral == 0 {
			t.Errorf("followups: got %+v, want one ephemeral", in.Followups)
		}
		if slices.ContainsFunc(fake.Messages(general), func(m discordfake.Message) bool { return m.ID == fu.ID }) {
			t.Errorf("an ephemeral followup shows in the channel")
		}
		err = s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: "twice"}})
		if code := restCode(t, err); code != 40060 {
			t.Errorf("second callback: got code %d, want 40060", code)
		}
	})

	t.Run("ephemeral reply", func(t *testing.T) {
		id := fake.SlashCommand(general, discordfake.BobID, "status", nil)
		ic := waitEvent[*discordgo.InteractionCreate](t, ev, func(i *discordgo.InteractionCreate) bool { return i.ID == id })
		err := s.InteractionRespond(ic.Interaction, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: "you are not allowed", Flags: discordgo.MessageFlagsEphemeral},
		})
		if err != nil {
			t.Fatalf("respond: %v", err)
		}
		in, _ := fake.Interaction(id)
		if !in.Ephemeral || in.ResponseType != 4 || in.Original == nil || in.Original.Content != "you are not allowed" {
			t.Errorf("ephemeral reply: got %+v, want an ephemeral type-4 answer", in)
		}
		if slices.ContainsFunc(fake.Messages(general), func(m discordfake.Message) bool { return m.ID == in.Original.ID }) {
			t.Errorf("an ephemeral reply shows in the channel")
		}
	})

	t.Run("gateway drop then resume replays missed", func(t *testing.T) {
		readies := fake.Readies()
		if n := fake.DropGateway(); n != 1 {
			t.Fatalf("dropped %d connections, want 1", n)
		}
		// Posted while discordgo is disconnected (it waits a second in Close).
		missed := fake.UserMessage(general, discordfake.AliceID, "sent while you were away")
		if err := fake.WaitForResumed(ctxT(t), 1); err != nil {
			t.Fatal(err)
		}
		got := waitEvent[*discordgo.MessageCreate](t, ev, func(m *discordgo.MessageCreate) bool { return m.ID == missed.ID })
		if got.Content != missed.Content {
			t.Errorf("replayed message: got %q, want %q", got.Content, missed.Content)
		}
		waitEvent[*discordgo.Resumed](t, ev, nil)
		if fake.Readies() != readies {
			t.Errorf("READY count: got %d, want %d (a resume, not a new identify)", fake.Readies(), readies)
		}
		resume, err := fake.WaitForGatewayPayload(ctxT(t), func(p discordfake.GatewayPayload) bool { return p.Op == 6 })
		if err != nil || strings.Contains(string(resume.Data), fake.Token()) {
			t.Errorf("recorded RESUME: got %s (%v), want one with the token redacted", resume.Data, err)
		}
	})

	t.Run("reconnect op 7 resumes", func(t *testing.T) {
		fake.Reconnect()
		if err := fake.WaitForResumed(ctxT(t), 2); err != nil {
			t.Fatal(err)
		}
		receivesAgain(t, fake, ev, "after reconnect")
	})

	t.Run("invalid session makes discordgo identify again", func(t *testing.T) {
		readies := fake.Readies()
		fake.InvalidateSession(false)
		if err := fake.WaitForReady(ctxT(t), readies+1); err != nil {
			t.Fatal(err)
		}
		receivesAgain(t, fake, ev, "after re-identify")
	})

	checkProtocolErrors(t)
	if u := fake.UnknownRoutes(); len(u) > 0 {
		t.Errorf("discordgo called routes the fake does not serve: %+v", u)
	}
}

func msgIDs(ms []*discordgo.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: got %s, want 200", url, resp.Status)
	}
	return string(b)
}

// TestDiscordgoDisallowedIntent: identifying with MESSAGE_CONTENT while the
// portal has it off fails Open with close code 4014.
func TestDiscordgoDisallowedIntent(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithDisabledPrivilegedIntents(discordfake.IntentMessageContent))
	s := restSession(t, fake, fake.Token())
	s.Identify.Intents = botIntents
	err := s.Open()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4014 {
		t.Fatalf("Open: got %v, want close 4014", err)
	}
}

// TestDiscordgoBadToken: REST answers 401 and the gateway closes with 4004.
func TestDiscordgoBadToken(t *testing.T) {
	fake := discordfake.New(t)
	s := restSession(t, fake, "wrong")
	_, err := s.User("@me")
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response.StatusCode != http.StatusUnauthorized {
		t.Errorf("User(@me) with a bad token: got %v, want HTTP 401", err)
	}
	err = s.Open()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4004 {
		t.Errorf("Open with a bad token: got %v, want close 4004", err)
	}
	if ids := fake.Identifies(); len(ids) != 1 || ids[0].TokenValid {
		t.Errorf("identifies: got %+v, want one with an invalid token", ids)
	}
}

// TestDiscordgoRateLimits: discordgo reads the fake's bucket headers (it
// waits instead of hitting 429) and surfaces global 429s either as a
// RateLimitError or by waiting and retrying.
func TestDiscordgoRateLimits(t *testing.T) {
	const window = 300 * time.Millisecond
	fake := discordfake.New(t, discordfake.WithRateLimits(discordfake.RateLimits{
		MessageEdit: discordfake.Limit{Requests: 2, Window: window},
	}))
	s := restSession(t, fake, fake.Token())
	m, err := s.ChannelMessageSend(discordfake.DefaultChannelID, "v0")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 1; i <= 3; i++ {
		if _, err := s.ChannelMessageEdit(discordfake.DefaultChannelID, m.ID, "v"+string(rune('0'+i))); err != nil {
			t.Fatalf("edit %d: %v", i, err)
		}
	}
	if fake.RateLimited() != 0 || time.Since(start) < window-50*time.Millisecond {
		t.Errorf("3 edits on a 2-per-%v bucket: got %d 429s after %v, want discordgo to wait out the window without 429s",
			window, fake.RateLimited(), time.Since(start))
	}

	fake2 := discordfake.New(t, discordfake.WithRateLimits(discordfake.RateLimits{
		Global: discordfake.Limit{Requests: 2, Window: window},
	}))
	s2 := restSession(t, fake2, fake2.Token())
	s2.ShouldRetryOnRateLimit = false
	for range 2 {
		if err := s2.ChannelTyping(discordfake.DefaultChannelID); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s2.Channel(discordfake.DefaultChannelID)
	var rle *discordgo.RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter <= 0 || rle.RetryAfter > window {
		t.Fatalf("third request: got %v, want a RateLimitError with 0 < retry_after ≤ %v", err, window)
	}
	if fake2.RateLimited() != 1 {
		t.Errorf("429s counted: got %d, want 1", fake2.RateLimited())
	}

	// With retries on, discordgo sleeps retry_after and tries again: the call
	// succeeds and a RateLimit event tells of the wait.
	s2.ShouldRetryOnRateLimit = true
	ev := record(s2)
	for i := 0; fake2.RateLimited() < 2; i++ {
		if i == 10 {
			t.Fatalf("10 requests on a 2-per-%v budget drew no second 429", window)
		}
		if _, err := s2.Channel(discordfake.DefaultChannelID); err != nil {
			t.Fatalf("with retry on: %v", err)
		}
	}
	rl := waitEvent[*discordgo.RateLimit](t, ev, nil)
	if rl.RetryAfter <= 0 || !strings.Contains(rl.URL, "/channels/") {
		t.Errorf("RateLimit event: got %+v, want a retry_after on the channel route", rl.TooManyRequests)
	}
}

// receivesAgain checks that discordgo, having reconnected by itself, receives
// messages again. discordgo's own reconnect can race with itself (two
// goroutines reconnecting; see the comment in its reconnect()) and close,
// with 1000, the connection it has just opened: a session closed so ends
// for good, with what was dispatched to it, as on Discord. So a message
// that went to such a short-lived session is lost, and the check is that
// one sent once discordgo has settled arrives: up to five tries, two
// seconds each.
func receivesAgain(t *testing.T, fake *discordfake.Server, ev *events, text string) {
	t.Helper()
	for try := range 5 {
		m := fake.UserMessage(discordfake.DefaultChannelID, discordfake.BobID, fmt.Sprintf("%s #%d", text, try))
		if waitEventWithin(ev, 2*time.Second, func(e *discordgo.MessageCreate) bool { return e.ID == m.ID }) {
			return
		}
	}
	t.Fatalf("no message sent %q arrived in five tries", text)
}

// waitEventWithin reports whether an event of type T matching match arrives
// within d.
func waitEventWithin[T any](e *events, d time.Duration, match func(T) bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		e.mu.Lock()
		for _, x := range e.list {
			if v, ok := x.(T); ok && match(v) {
				e.mu.Unlock()
				return true
			}
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return false
		}
	}
}
