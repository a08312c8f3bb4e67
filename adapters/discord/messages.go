package discord

import (
	"cmp"
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// Catch-up reads at most maxCatchUpPages pages of catchUpPage messages per
// thread after a reconnect.
const (
	catchUpPage     = 100
	maxCatchUpPages = 20
)

// maxHistory bounds the earlier messages History returns.
const maxHistory = 200

// message delivers a MESSAGE_CREATE: a human's message in a thread or DM is
// input; everything else (bots, the bot itself, system messages, top-level
// channel chatter) is not.
func (r *runner) message(ctx context.Context, m *discordgo.Message) {
	a := r.a
	if !a.humanInput(m) {
		return
	}
	a.rememberNames(m)
	kind := kindDM
	if m.GuildID != "" {
		kind = a.channelKind(ctx, m.ChannelID, m.GuildID)
	}
	if !kind.conversation() {
		return
	}
	var roles []string
	if m.Member != nil {
		roles = m.Member.Roles
	}
	ref := chat.ThreadRef{Platform: Platform, Team: m.GuildID, Channel: m.ChannelID, Thread: m.ChannelID}
	r.deliver(ctx, ref, m, roles)
}

// humanInput reports whether m is a person's ordinary message.
func (a *Adapter) humanInput(m *discordgo.Message) bool {
	if m.Author == nil || m.Author.Bot || m.Author.System || m.WebhookID != "" {
		return false
	}
	if bot := a.BotUserID(); bot != "" && m.Author.ID == bot {
		return false
	}
	return m.Type == discordgo.MessageTypeDefault || m.Type == discordgo.MessageTypeReply
}

// deliver hands a message to the handler; if it cannot take it, the channel
// is told.
func (r *runner) deliver(ctx context.Context, ref chat.ThreadRef, m *discordgo.Message, roles []string) {
	in := r.a.inbound(ref, m, roles)
	if strings.TrimSpace(in.Text) == "" && len(in.Attachments) == 0 {
		return
	}
	if in.Mention && !in.DM {
		// A mention may open a session: the thread's channel mapping applies.
		in.Parent = r.a.ParentChannel(ctx, ref)
	}
	if _, err := r.receive(ctx, in); err != nil {
		r.failNote(ctx, ref, "your message", err)
	}
}

// inbound describes a message for the handler. A leading mention of the bot
// is dropped from the text, so "@bot !status" is the command "!status"; a
// mention anywhere, or a DM, addresses the bot.
func (a *Adapter) inbound(ref chat.ThreadRef, m *discordgo.Message, roles []string) chat.Inbound {
	bot := a.BotUserID()
	dm := ref.Team == ""
	in := chat.Inbound{
		Thread:    ref,
		EventID:   m.ID,
		MessageID: m.ID,
		Author:    chat.Author{ID: m.Author.ID, Name: displayName(m.Author, m.Member), Roles: slices.Clone(roles)},
		Text:      stripLeadingMention(m.Content, bot),
		Mention:   dm || mentions(m, bot),
		DM:        dm,
		Time:      m.Timestamp,
	}
	for _, at := range m.Attachments {
		in.Attachments = append(in.Attachments, chat.Attachment{
			Name: at.Filename, MimeType: at.ContentType, Size: int64(at.Size), URL: at.URL,
		})
	}
	return in
}

// mentions reports whether m mentions the bot.
func mentions(m *discordgo.Message, bot string) bool {
	if bot == "" {
		return false
	}
	if slices.ContainsFunc(m.Mentions, func(u *discordgo.User) bool { return u.ID == bot }) {
		return true
	}
	return strings.Contains(m.Content, "<@"+bot+">") || strings.Contains(m.Content, "<@!"+bot+">")
}

// stripLeadingMention drops a mention of the bot at the start of text.
func stripLeadingMention(text, bot string) string {
	if bot == "" {
		return text
	}
	t := strings.TrimSpace(text)
	for _, p := range []string{"<@" + bot + ">", "<@!" + bot + ">"} {
		if rest, ok := strings.CutPrefix(t, p); ok {
			return strings.TrimSpace(rest)
		}
	}
	return text
}

// catchUp fetches what was written in the handler's active threads after the
// newest message it saw, and delivers it (Receive de-duplicates). It runs
// after every READY and RESUMED, so that neither a gateway drop nor a restart
// loses a message.
func (r *runner) catchUp(ctx context.Context) {
	cursors, err := r.h.ActiveThreads(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.a.log.Error("catch-up: the handler could not list its threads", "err", err)
		}
		return
	}
	roles := map[string][]string{}
	for _, c := range cursors {
		if c.Thread.Platform != Platform || !r.a.cfg.ownsGuild(c.Thread.Team) {
			// Another shard's (another replica's) guild: its connection
			// catches up there.
			continue
		}
		if ctx.Err() != nil {
			return
		}
		r.catchUpThread(ctx, c, roles)
	}
}

func (r *runner) catchUpThread(ctx context.Context, c chat.ThreadCursor, roles map[string][]string) {
	a := r.a
	ref := c.Thread
	after := c.LastSeen
	if after == "" {
		if ref.Team == "" {
			return // a DM session that saw nothing has no anchor
		}
		after = ref.Channel // a thread's messages all follow its starter, whose id it took
	}
	delivered := 0
	for range maxCatchUpPages {
		msgs, err := a.s.ChannelMessages(ref.Channel, catchUpPage, "", after, "", ownCall(ctx)...)
		if err != nil {
			if ctx.Err() == nil && gone(err) {
				r.closeThread(ctx, ref, err)
			} else if ctx.Err() == nil {
				a.log.Warn("catch-up: could not read a thread", "thread", ref.Key(), "err", restError("read messages", err, nil))
			}
			return
		}
		// Discord lists newest first, also with after=.
		slices.SortFunc(msgs, func(x, y *discordgo.Message) int { return compareSnowflakes(x.ID, y.ID) })
		for _, m := range msgs {
			if compareSnowflakes(m.ID, after) > 0 {
				after = m.ID
			}
			if !a.humanInput(m) {
				continue
			}
			a.rememberNames(m)
			r.deliver(ctx, ref, m, a.memberRoles(ctx, ref.Team, m.Author.ID, roles))
			delivered++
		}
		if len(msgs) < catchUpPage {
			break
		}
	}
	if delivered > 0 {
		a.log.Info("catch-up: delivered messages written while disconnected", "thread", ref.Key(), "count", delivered)
	}
}

// gone reports whether err says the conversation is no longer there for the
// bot: Unknown Channel (deleted), Missing Access (removed from it).
func gone(err error) bool {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil {
		return false
	}
	return re.Message.Code == discordgo.ErrCodeUnknownChannel || re.Message.Code == discordgo.ErrCodeMissingAccess
}

// closeThread tells the handler a conversation is gone, so that catching up
// stops asking for it.
func (r *runner) closeThread(ctx context.Context, ref chat.ThreadRef, why error) {
	closer, ok := r.h.(chat.ThreadCloser)
	if !ok {
		return
	}
	if err := closer.CloseThread(ctx, ref); err != nil {
		r.a.log.Warn("catch-up: closing a conversation that is gone failed", "thread", ref.Key(), "err", err)
		return
	}
	r.a.log.Info("catch-up: the conversation is gone; closed it", "thread", ref.Key(), "err", restError("read messages", why, nil))
}

// memberRoles looks up a member's roles (REST messages do not carry them),
// once per catch-up.
func (a *Adapter) memberRoles(ctx context.Context, guild, user string, cache map[string][]string) []string {
	if guild == "" {
		return nil
	}
	key := guild + "/" + user
	if roles, ok := cache[key]; ok {
		return roles
	}
	var roles []string
	if mem, err := a.s.GuildMember(guild, user, ownCall(ctx)...); err == nil {
		roles = mem.Roles
	} else {
		a.log.Warn("could not look up a member's roles", "guild", guild, "user", user, "err", restError("get member", err, nil))
	}
	cache[key] = roles
	return roles
}

// compareSnowflakes orders Discord ids numerically.
func compareSnowflakes(x, y string) int {
	return cmp.Or(cmp.Compare(len(x), len(y)), strings.Compare(x, y))
}

// History implements chat.HistoryReader: the people's messages of a thread or
// DM before beforeID ("" for all), oldest first, at most 200, with a thread's
// starter message (which lives in the parent channel) when a person wrote it.
func (a *Adapter) History(ctx context.Context, thread chat.ThreadRef, beforeID string) ([]chat.HistoryMessage, error) {
	var msgs []*discordgo.Message
	before := beforeID
	for len(msgs) < maxHistory {
		page, err := a.s.ChannelMessages(thread.Channel, 100, before, "", "", ownCall(ctx)...)
		if err != nil {
			return nil, restError("read history", err, nil)
		}
		msgs = append(msgs, page...)
		if len(page) < 100 {
			break
		}
		before = slices.MinFunc(page, func(x, y *discordgo.Message) int { return compareSnowflakes(x.ID, y.ID) }).ID
	}
	if thread.Team != "" && (beforeID == "" || compareSnowflakes(thread.Channel, beforeID) < 0) {
		if starter := a.threadStarter(ctx, thread.Channel); starter != nil {
			msgs = append(msgs, starter)
		}
	}
	slices.SortFunc(msgs, func(x, y *discordgo.Message) int { return compareSnowflakes(x.ID, y.ID) })
	var out []chat.HistoryMessage
	for _, m := range msgs {
		if !a.humanInput(m) {
			continue
		}
		text := m.Content
		for _, at := range m.Attachments {
			text += " [attachment: " + at.Filename + "]"
		}
		out = append(out, chat.HistoryMessage{
			Author: chat.Author{ID: m.Author.ID, Name: displayName(m.Author, m.Member)},
			Text:   strings.TrimSpace(text),
			Time:   m.Timestamp,
		})
	}
	return out, nil
}

// threadStarter is the message a thread was started from, or nil.
func (a *Adapter) threadStarter(ctx context.Context, threadID string) *discordgo.Message {
	parent := a.parentOf(threadID)
	if parent == threadID {
		c, err := a.s.Channel(threadID, ownCall(ctx)...)
		if err != nil || !c.IsThread() || c.ParentID == "" {
			return nil
		}
		parent = c.ParentID
	}
	m, err := a.s.ChannelMessage(parent, threadID, ownCall(ctx)...)
	if err != nil {
		return nil // a thread not started from a message, or a deleted starter
	}
	return m
}

// markup matches user, role and channel mentions and custom emoji.
var markup = regexp.MustCompile(`<(@!?|@&|#)(\d+)>|<a?:(\w+):\d+>`)

// PlainText implements chat.MarkupConverter: mentions become @name, #channel
// and @role, custom emoji :name:, and a leading mention of the bot goes.
func (a *Adapter) PlainText(_ context.Context, text string) string {
	bot := a.BotUserID()
	text = stripLeadingMention(text, bot)
	return markup.ReplaceAllStringFunc(text, func(s string) string {
		sm := markup.FindStringSubmatch(s)
		switch {
		case sm[3] != "":
			return ":" + sm[3] + ":"
		case sm[1] == "@&":
			return "@" + a.roleName(sm[2])
		case sm[1] == "#":
			return "#" + a.channelName(sm[2])
		}
		return "@" + a.userName(sm[2])
	})
}

// rememberName records a user's display name for PlainText.
func (a *Adapter) rememberName(id, name string) {
	if id != "" && name != "" {
		a.names.Store(id, name)
	}
}

func (a *Adapter) rememberNames(m *discordgo.Message) {
	a.rememberName(m.Author.ID, displayName(m.Author, m.Member))
	for _, u := range m.Mentions {
		a.rememberName(u.ID, displayName(u, nil))
	}
}

func (a *Adapter) userName(id string) string {
	if v, ok := a.names.Load(id); ok {
		return v.(string)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if id == a.botID && a.botName != "" {
		return a.botName
	}
	return "user"
}

func (a *Adapter) roleName(id string) string {
	st := a.s.State
	st.RLock()
	defer st.RUnlock()
	for _, g := range st.Guilds {
		for _, r := range g.Roles {
			if r.ID == id {
				return r.Name
			}
		}
	}
	return "role"
}

func (a *Adapter) channelName(id string) string {
	st := a.s.State
	c, err := st.Channel(id)
	if err != nil {
		return "channel"
	}
	st.RLock()
	defer st.RUnlock()
	return c.Name
}

// Permalink implements chat.Linker: Discord's link to the thread.
func (a *Adapter) Permalink(_ context.Context, thread chat.ThreadRef) (string, error) {
	guild := thread.Team
	if guild == "" {
		guild = "@me"
	}
	return "https://discord.com/channels/" + guild + "/" + thread.Thread, nil
}
