package discordfake

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// This file renders the fake's state as Discord's JSON objects. Field names and
// types follow Discord's documentation; discordgo decodes a subset of them.

type obj = map[string]any

// timestamp renders t the way Discord does (ISO 8601, microseconds, +00:00).
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000+00:00") }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) userObjLocked(id string) obj {
	u, ok := s.users[id]
	if !ok {
		u = user{ID: id, Username: "unknown-" + id}
	}
	o := obj{
		"id":            u.ID,
		"username":      u.Username,
		"discriminator": "0",
		"global_name":   u.Username,
		"avatar":        nil,
		"public_flags":  0,
		"flags":         0,
	}
	if u.Bot {
		o["bot"] = true
		o["global_name"] = nil
	}
	return o
}

func (g *guildState) permissions(m Member) int64 {
	p := g.roles[g.ID].Permissions
	for _, r := range m.Roles {
		p |= g.roles[r].Permissions
	}
	return p
}

// memberObjLocked renders a guild member; user and permissions are present
// only where Discord sends them (GET member, GUILD_CREATE; interactions).
func (s *Server) memberObjLocked(g *guildState, m Member, withUser, withPerms bool) obj {
	o := obj{
		"roles":                        nonNil(slices.Clone(m.Roles)),
		"joined_at":                    timestamp(s.joinedAt(g)),
		"nick":                         orNil(m.Nick),
		"avatar":                       nil,
		"banner":                       nil,
		"premium_since":                nil,
		"deaf":                         false,
		"mute":                         false,
		"flags":                        0,
		"pending":                      false,
		"communication_disabled_until": nil,
	}
	if withUser {
		o["user"] = s.userObjLocked(m.UserID)
	}
	if withPerms {
		o["permissions"] = strconv.FormatInt(g.permissions(m), 10)
	}
	return o
}

// joinedAt is when members joined: the guild's first channel's creation time.
func (s *Server) joinedAt(g *guildState) time.Time {
	if len(g.Channels) > 0 {
		return g.Channels[0].CreatedAt
	}
	return time.Unix(discordEpochMS/1000, 0)
}

func (s *Server) roleObj(r Role, pos int) obj {
	return obj{
		"id":            r.ID,
		"name":          r.Name,
		"color":         0,
		"hoist":         false,
		"icon":          nil,
		"unicode_emoji": nil,
		"position":      pos,
		"permissions":   strconv.FormatInt(r.Permissions, 10),
		"managed":       false,
		"mentionable":   false,
		"flags":         0,
	}
}

func (s *Server) channelObjLocked(c *channelState) obj {
	switch c.Type {
	case ChannelTypeDM:
		return obj{
			"id":              c.ID,
			"type":            c.Type,
			"last_message_id": orNil(c.lastID),
			"flags":           0,
			"recipients":      []any{s.userObjLocked(c.RecipientID)},
		}
	case ChannelTypePublicThread:
		n := 0
		for _, m := range c.messages {
			if !m.deleted {
				n++
			}
		}
		return obj{
			"id":                  c.ID,
			"type":                c.Type,
			"guild_id":            c.GuildID,
			"parent_id":           c.ParentID,
			"owner_id":            c.OwnerID,
			"name":                c.Name,
			"last_message_id":     orNil(c.lastID),
			"rate_limit_per_user": 0,
			"flags":               0,
			"message_count":       n,
			"total_message_sent":  n,
			"member_count":        1,
			"thread_metadata": obj{
				"archived":              false,
				"auto_archive_duration": c.AutoArchiveDuration,
				"archive_timestamp":     timestamp(c.CreatedAt),
				"locked":                false,
				"create_timestamp":      timestamp(c.CreatedAt),
			},
		}
	default:
		pos := 0
		if g := s.guilds[c.GuildID]; g != nil {
			pos = slices.IndexFunc(g.Channels, func(x Channel) bool { return x.ID == c.ID })
		}
		return obj{
			"id":                    c.ID,
			"type":                  c.Type,
			"guild_id":              c.GuildID,
			"name":                  c.Name,
			"position":              pos,
			"permission_overwrites": []any{},
			"parent_id":             nil,
			"topic":                 nil,
			"nsfw":                  false,
			"last_message_id":       orNil(c.lastID),
			"rate_limit_per_user":   0,
			"flags":                 0,
		}
	}
}

func (s *Server) guildObjLocked(g *guildState) obj {
	roles := make([]any, 0, len(g.Roles))
	for i, r := range g.Roles {
		roles = append(roles, s.roleObj(r, i))
	}
	return obj{
		"id":                            g.ID,
		"name":                          g.Name,
		"icon":                          nil,
		"splash":                        nil,
		"discovery_splash":              nil,
		"owner_id":                      g.OwnerID,
		"afk_channel_id":                nil,
		"afk_timeout":                   300,
		"verification_level":            0,
		"default_message_notifications": 0,
		"explicit_content_filter":       0,
		"roles":                         roles,
		"emojis":                        []any{},
		"stickers":                      []any{},
		"features":                      []any{},
		"mfa_level":                     0,
		"application_id":                nil,
		"system_channel_id":             nil,
		"system_channel_flags":          0,
		"rules_channel_id":              nil,
		"vanity_url_code":               nil,
		"description":                   nil,
		"banner":                        nil,
		"premium_tier":                  0,
		"preferred_locale":              "en-US",
		"public_updates_channel_id":     nil,
		"nsfw_level":                    0,
		"premium_progress_bar_enabled":  false,
	}
}

// guildCreateObjLocked is GUILD_CREATE for one session: without the
// GUILD_MEMBERS intent only the bot's own member is listed, as on Discord.
func (s *Server) guildCreateObjLocked(gid string, sess *gwSession) obj {
	g := s.guilds[gid]
	o := s.guildObjLocked(g)
	var channels, threads, members []any
	for _, c := range g.Channels {
		channels = append(channels, s.channelObjLocked(s.channels[c.ID]))
	}
	for _, id := range s.threads {
		if th := s.channels[id]; th.GuildID == gid {
			threads = append(threads, s.channelObjLocked(th))
		}
	}
	for _, m := range g.Members {
		if sess.intents&IntentGuildMembers != 0 || m.UserID == s.cfg.botID {
			members = append(members, s.memberObjLocked(g, m, true, false))
		}
	}
	o["joined_at"] = timestamp(s.joinedAt(g))
	o["large"] = false
	o["unavailable"] = false
	o["member_count"] = len(g.Members)
	o["voice_states"] = []any{}
	o["members"] = nonNil(members)
	o["channels"] = nonNil(channels)
	o["threads"] = nonNil(threads)
	o["presences"] = []any{}
	o["stage_instances"] = []any{}
	o["guild_scheduled_events"] = []any{}
	return o
}

func (s *Server) attachmentObj(a Attachment) obj {
	// Every rendering hands out a link signed now, as Discord refreshes
	// them when a message is fetched.
	a.URL = s.signedURLLocked(a.URL)
	return obj{
		"id":           a.ID,
		"filename":     a.Filename,
		"size":         len(a.Data),
		"url":          a.URL,
		"proxy_url":    a.URL,
		"content_type": a.ContentType,
	}
}

// messageObjLocked renders a message. Gateway dispatches carry guild_id and
// the author's member; strip empties what the MESSAGE_CONTENT intent guards.
func (s *Server) messageObjLocked(m *messageState, gateway, strip bool) obj {
	mentions := make([]any, 0, len(m.mentions))
	for _, id := range m.mentions {
		mentions = append(mentions, s.userObjLocked(id))
	}
	attachments := make([]any, 0, len(m.Attachments))
	for _, a := range m.Attachments {
		attachments = append(attachments, s.attachmentObj(a))
	}
	embeds := make([]any, 0, len(m.Embeds))
	for _, e := range m.Embeds {
		embeds = append(embeds, e)
	}
	var components any = []any{}
	if len(m.Components) > 0 {
		components = m.Components
	}
	o := obj{
		"id":               m.ID,
		"channel_id":       m.ChannelID,
		"author":           s.userObjLocked(m.AuthorID),
		"content":          m.Content,
		"timestamp":        timestamp(m.CreatedAt),
		"edited_timestamp": nil,
		"tts":              false,
		"mention_everyone": false,
		"mentions":         mentions,
		"mention_roles":    []any{},
		"attachments":      attachments,
		"embeds":           embeds,
		"components":       components,
		"pinned":           false,
		"type":             m.Type,
		"flags":            m.Flags,
	}
	if !m.EditedAt.IsZero() {
		o["edited_timestamp"] = timestamp(m.EditedAt)
	}
	if strip {
		o["content"] = ""
		o["embeds"] = []any{}
		o["attachments"] = []any{}
		o["components"] = []any{}
	}
	if m.WebhookID != "" {
		o["webhook_id"] = m.WebhookID
		o["application_id"] = m.WebhookID
	}
	if m.InteractionID != "" && m.Type == 20 {
		o["interaction_metadata"] = obj{
			"id":                             m.InteractionID,
			"type":                           2,
			"name":                           m.interactionName,
			"command_type":                   1,
			"user":                           s.userObjLocked(m.interactionUser),
			"authorizing_integration_owners": obj{"0": m.GuildID},
		}
		o["interaction"] = obj{
			"id":   m.InteractionID,
			"type": 2,
			"name": m.interactionName,
			"user": s.userObjLocked(m.interactionUser),
		}
	}
	if m.ReferenceID != "" {
		ref := obj{"type": 0, "message_id": m.ReferenceID, "channel_id": m.ChannelID}
		if m.GuildID != "" {
			ref["guild_id"] = m.GuildID
		}
		o["message_reference"] = ref
	}
	if m.ThreadID != "" {
		if th := s.channels[m.ThreadID]; th != nil {
			o["thread"] = s.channelObjLocked(th)
		}
	}
	if len(m.reactions) > 0 {
		o["reactions"] = s.reactionSummaryLocked(m)
	}
	if gateway && m.GuildID != "" {
		o["guild_id"] = m.GuildID
		if g := s.guilds[m.GuildID]; g != nil && m.WebhookID == "" {
			if mem, ok := g.members[m.AuthorID]; ok {
				o["member"] = s.memberObjLocked(g, mem, false, false)
			}
		}
	}
	return o
}

func (s *Server) reactionSummaryLocked(m *messageState) []any {
	type agg struct {
		emoji string
		count int
		me    bool
	}
	var order []*agg
	by := map[string]*agg{}
	for _, r := range m.reactions {
		a := by[r.Emoji]
		if a == nil {
			a = &agg{emoji: r.Emoji}
			by[r.Emoji] = a
			order = append(order, a)
		}
		a.count++
		a.me = a.me || r.UserID == s.cfg.botID
	}
	out := make([]any, 0, len(order))
	for _, a := range order {
		out = append(out, obj{
			"count":         a.count,
			"count_details": obj{"burst": 0, "normal": a.count},
			"me":            a.me,
			"me_burst":      false,
			"burst_colors":  []any{},
			"emoji":         emojiObj(a.emoji),
		})
	}
	return out
}

// emojiObj renders "👀" as {"id":null,"name":"👀"} and "name:id" as a custom emoji.
func emojiObj(e string) obj {
	if name, id, ok := splitCustomEmoji(e); ok {
		return obj{"id": id, "name": name}
	}
	return obj{"id": nil, "name": e}
}

// mustJSON encodes v; the fake only encodes maps and slices it built itself.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("discordfake: encoding JSON: " + err.Error())
	}
	return b
}
