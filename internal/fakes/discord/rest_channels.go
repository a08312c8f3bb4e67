package discordfake

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const permManageMessages int64 = 1 << 13

var (
	errMissingPermissions = apiError(http.StatusForbidden, 50013, "Missing Permissions")
	errMethodNotAllowed   = apiError(http.StatusMethodNotAllowed, 0, "405: Method Not Allowed")
	errUnknownUser        = apiError(http.StatusNotFound, 10013, "Unknown User")
	errCannotMessageUser  = apiError(http.StatusForbidden, 50007, "Cannot send messages to this user")
)

func (s *Server) getGuild(c *call) response {
	g := s.guilds[c.path("guild")]
	if g == nil {
		return errUnknownGuild
	}
	return ok(s.guildObjLocked(g))
}

func (s *Server) getGuildChannels(c *call) response {
	g := s.guilds[c.path("guild")]
	if g == nil {
		return errUnknownGuild
	}
	out := []any{}
	for _, ch := range g.Channels {
		out = append(out, s.channelObjLocked(s.channels[ch.ID]))
	}
	return ok(out)
}

func (s *Server) getMember(c *call) response {
	g := s.guilds[c.path("guild")]
	if g == nil {
		return errUnknownGuild
	}
	m, found := g.members[c.path("user")]
	if !found {
		return errUnknownMember
	}
	return ok(s.memberObjLocked(g, m, true, false))
}

func (s *Server) createDM(c *call) response {
	var body struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := c.decode(&body); err != nil {
		return errInvalidJSON
	}
	if _, known := s.users[body.RecipientID]; !known || body.RecipientID == s.cfg.botID {
		return errUnknownUser
	}
	return ok(s.channelObjLocked(s.dmChannelLocked(body.RecipientID, c.now)))
}

func (s *Server) getChannel(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	return ok(s.channelObjLocked(ch))
}

func (s *Server) postTyping(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	s.typing = append(s.typing, Typing{ChannelID: ch.ID, At: c.now})
	intent := IntentGuildMessageTyping
	if ch.GuildID == "" {
		intent = IntentDirectMessageTyping
	}
	d := obj{"channel_id": ch.ID, "user_id": s.cfg.botID, "timestamp": c.now.Unix()}
	if g := s.guilds[ch.GuildID]; g != nil {
		d["guild_id"] = g.ID
		d["member"] = s.memberObjLocked(g, g.members[s.cfg.botID], true, false)
	}
	s.dispatchLocked("TYPING_START", intent, ch.GuildID, func(*gwSession) any { return d })
	return noContent()
}

// listMessages serves GET messages with limit/before/after/around. Like
// Discord it answers newest first in every case; with after it returns the
// oldest `limit` messages following the id.
func (s *Server) listMessages(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	q := c.r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return invalidForm(map[string]string{"limit": "NUMBER_TYPE_MAX: int value should be between 1 and 100."})
		}
		limit = n
	}
	all := visibleMessages(ch)
	var page []*messageState
	switch {
	case q.Get("around") != "":
		id := q.Get("around")
		i, _ := slices.BinarySearchFunc(all, id, func(m *messageState, id string) int {
			if m.ID == id {
				return 0
			}
			if snowflakeLess(m.ID, id) {
				return -1
			}
			return 1
		})
		lo := max(0, i-limit/2)
		page = all[lo:min(len(all), lo+limit)]
	case q.Get("before") != "":
		id := q.Get("before")
		var older []*messageState
		for _, m := range all {
			if snowflakeLess(m.ID, id) {
				older = append(older, m)
			}
		}
		page = older[max(0, len(older)-limit):]
	case q.Get("after") != "":
		id := q.Get("after")
		for _, m := range all {
			if snowflakeLess(id, m.ID) && len(page) < limit {
				page = append(page, m)
			}
		}
	default:
		page = all[max(0, len(all)-limit):]
	}
	out := make([]any, 0, len(page))
	for i := len(page) - 1; i >= 0; i-- {
		out = append(out, s.messageObjLocked(page[i], false, s.restStrip(page[i])))
	}
	return ok(out)
}

func (s *Server) getMessage(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	m := s.messageInLocked(ch, c.path("message"))
	if m == nil {
		return errUnknownMessage
	}
	return ok(s.messageObjLocked(m, false, s.restStrip(m)))
}

func (s *Server) createMessage(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	var p messagePayload
	if err := c.decode(&p); err != nil {
		return invalidForm(map[string]string{"": "BASE_TYPE_INVALID: Invalid Form Body"})
	}
	if ch.Type == ChannelTypeDM && s.noDMs[ch.RecipientID] {
		return errCannotMessageUser
	}
	content := ""
	if p.Content != nil {
		content = *p.Content
	}
	if resp, valid := validateMessage(content, p.Embeds, p.Components, len(c.files), len(p.StickerIDs)); !valid {
		return resp
	}
	am, resp, valid := allowedMentionsOf(c.body)
	if !valid {
		return resp
	}
	nonce, resp, valid := nonceOf(p.Nonce)
	if !valid {
		return resp
	}
	if nonce != "" && p.EnforceNonce {
		// The same nonce from the bot a moment ago: that message, not a new one.
		for i := len(ch.messages) - 1; i >= 0; i-- {
			m := ch.messages[i]
			if c.now.Sub(m.CreatedAt) > nonceWindow {
				break
			}
			if m.nonce == nonce && m.AuthorID == s.cfg.botID && !m.deleted {
				return ok(s.messageObjLocked(m, false, false))
			}
		}
	}
	var ref *messageState
	if p.MessageReference != nil && p.MessageReference.MessageID != "" {
		if ref = s.messageInLocked(ch, p.MessageReference.MessageID); ref == nil {
			return invalidForm(map[string]string{
				"message_reference": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE: Unknown message",
			})
		}
	}
	m := s.newMessageLocked(ch, s.cfg.botID, content, c.now)
	m.Embeds = p.Embeds
	if !emptyJSON(p.Components) {
		m.Components = p.Components
	}
	const creatable = 1<<2 | 1<<12 // SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS
	m.Flags = p.Flags & creatable
	m.Attachments = s.attachLocked(ch.ID, c.files)
	if ref != nil {
		m.ReferenceID = ref.ID
		m.Type = 19
	}
	m.nonce = nonce
	s.noticeLocked(c.route, m, am, false)
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	return ok(s.messageObjLocked(m, false, false))
}

func (s *Server) editMessage(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	m := s.messageInLocked(ch, c.path("message"))
	if m == nil {
		return errUnknownMessage
	}
	if m.AuthorID != s.cfg.botID || m.WebhookID != "" {
		return errNotAuthor
	}
	am, resp, valid := allowedMentionsOf(c.body)
	if !valid {
		return resp
	}
	if resp, valid := s.applyEditLocked(m, c.body, c.files, c.now); !valid {
		return resp
	}
	s.noticeLocked(c.route, m, am, true)
	s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	return ok(s.messageObjLocked(m, false, false))
}

func (s *Server) deleteMessage(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	m := s.messageInLocked(ch, c.path("message"))
	if m == nil {
		return errUnknownMessage
	}
	if m.AuthorID != s.cfg.botID && !s.botHasLocked(ch, permManageMessages) {
		return errMissingPermissions
	}
	m.deleted = true
	s.dispatchMessageDeleteLocked(m)
	return noContent()
}

func (s *Server) botHasLocked(ch *channelState, perm int64) bool {
	g := s.guilds[ch.GuildID]
	if g == nil {
		return false
	}
	return g.permissions(g.members[s.cfg.botID])&perm != 0
}

// startThread opens a public thread on a message. The thread takes the
// message's id, as on Discord.
func (s *Server) startThread(c *call) response {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return errUnknownChannel
	}
	if ch.Type != ChannelTypeGuildText {
		return errWrongChannelType
	}
	m := s.messageInLocked(ch, c.path("message"))
	if m == nil {
		return errUnknownMessage
	}
	if m.ThreadID != "" {
		return errThreadExists
	}
	var body struct {
		Name                string `json:"name"`
		AutoArchiveDuration int    `json:"auto_archive_duration"`
	}
	if err := c.decode(&body); err != nil {
		return errInvalidJSON
	}
	name := strings.TrimSpace(body.Name)
	if n := utf8.RuneCountInString(name); n < 1 || n > 100 {
		return invalidForm(map[string]string{"name": "BASE_TYPE_BAD_LENGTH: Must be between 1 and 100 in length."})
	}
	aad := body.AutoArchiveDuration
	if aad == 0 {
		aad = 1440 // a channel's default_auto_archive_duration unless changed
	}
	if !slices.Contains([]int{60, 1440, 4320, 10080}, aad) {
		return invalidForm(map[string]string{
			"auto_archive_duration": "BASE_TYPE_CHOICES: Value must be one of (60, 1440, 4320, 10080).",
		})
	}
	th := &channelState{Channel: Channel{
		ID:                  m.ID,
		Type:                ChannelTypePublicThread,
		GuildID:             ch.GuildID,
		Name:                name,
		ParentID:            ch.ID,
		OwnerID:             s.cfg.botID,
		AutoArchiveDuration: aad,
		CreatedAt:           c.now,
	}}
	s.channels[th.ID] = th
	s.threads = append(s.threads, th.ID)
	m.ThreadID = th.ID
	m.Flags |= MessageFlagHasThread

	d := s.channelObjLocked(th)
	d["newly_created"] = true
	s.dispatchLocked("THREAD_CREATE", IntentGuilds, th.GuildID, func(*gwSession) any { return d })
	s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	return created(s.channelObjLocked(th))
}

// validEmoji accepts a unicode emoji or a custom emoji as name:id; shortcodes
// like "eyes" are unknown emoji to Discord.
func validEmoji(e string) bool {
	if _, _, custom := splitCustomEmoji(e); custom {
		return true
	}
	for _, r := range e {
		if r >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

func splitCustomEmoji(e string) (name, id string, ok bool) {
	name, id, found := strings.Cut(strings.TrimPrefix(e, "a:"), ":")
	if !found || name == "" || id == "" {
		return "", "", false
	}
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", "", false
	}
	return name, id, true
}

func (s *Server) reactionTargetLocked(c *call) (*channelState, *messageState, string, response, bool) {
	ch := s.channelLocked(c.path("channel"))
	if ch == nil {
		return nil, nil, "", errUnknownChannel, false
	}
	m := s.messageInLocked(ch, c.path("message"))
	if m == nil {
		return nil, nil, "", errUnknownMessage, false
	}
	emoji := c.path("emoji")
	if !validEmoji(emoji) {
		return nil, nil, "", errUnknownEmoji, false
	}
	return ch, m, emoji, response{}, true
}

func (s *Server) addReaction(c *call) response {
	if c.path("user") != "@me" {
		return errMethodNotAllowed
	}
	_, m, emoji, resp, valid := s.reactionTargetLocked(c)
	if !valid {
		return resp
	}
	s.addReactionLocked(m, emoji, s.cfg.botID, c.now)
	return noContent()
}

// addReactionLocked records a reaction and dispatches MESSAGE_REACTION_ADD;
// a repeated reaction changes nothing, as on Discord.
func (s *Server) addReactionLocked(m *messageState, emoji, userID string, now time.Time) {
	if slices.ContainsFunc(m.reactions, func(r Reaction) bool { return r.Emoji == emoji && r.UserID == userID }) {
		return
	}
	m.reactions = append(m.reactions, Reaction{Emoji: emoji, UserID: userID, At: now})
	d := s.reactionEventLocked(m, emoji, userID)
	d["message_author_id"] = m.AuthorID
	if g := s.guilds[m.GuildID]; g != nil {
		if mem, found := g.members[userID]; found {
			d["member"] = s.memberObjLocked(g, mem, true, false)
		}
	}
	s.dispatchLocked("MESSAGE_REACTION_ADD", reactionIntent(m), m.GuildID, func(*gwSession) any { return d })
}

func (s *Server) reactionEventLocked(m *messageState, emoji, userID string) obj {
	d := obj{
		"user_id":    userID,
		"channel_id": m.ChannelID,
		"message_id": m.ID,
		"emoji":      emojiObj(emoji),
		"burst":      false,
		"type":       0,
	}
	if m.GuildID != "" {
		d["guild_id"] = m.GuildID
	}
	return d
}

func reactionIntent(m *messageState) int {
	if m.GuildID == "" {
		return IntentDirectMessageReactions
	}
	return IntentGuildMessageReactions
}

func (s *Server) removeReaction(c *call) response {
	ch, m, emoji, resp, valid := s.reactionTargetLocked(c)
	if !valid {
		return resp
	}
	uid := c.path("user")
	if uid == "@me" {
		uid = s.cfg.botID
	} else if uid != s.cfg.botID && !s.botHasLocked(ch, permManageMessages) {
		return errMissingPermissions
	}
	i := slices.IndexFunc(m.reactions, func(r Reaction) bool { return r.Emoji == emoji && r.UserID == uid })
	if i >= 0 {
		m.reactions = slices.Delete(m.reactions, i, i+1)
		d := s.reactionEventLocked(m, emoji, uid)
		s.dispatchLocked("MESSAGE_REACTION_REMOVE", reactionIntent(m), m.GuildID, func(*gwSession) any { return d })
	}
	return noContent()
}

func (s *Server) listReactions(c *call) response {
	_, m, emoji, resp, valid := s.reactionTargetLocked(c)
	if !valid {
		return resp
	}
	out := []any{}
	for _, r := range m.reactions {
		if r.Emoji == emoji {
			out = append(out, s.userObjLocked(r.UserID))
		}
	}
	return ok(out)
}
