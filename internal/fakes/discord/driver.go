package discordfake

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// This file drives the fake the way Discord users would: they write
// messages, react, and run slash commands. Misuse (unknown channel, a user
// who is not a member) fails the test with t.Errorf and changes nothing.

// UserMessage posts a message by userID in channelID (a guild channel, a
// thread, or a DM channel from DMChannel), stores it and dispatches
// MESSAGE_CREATE. Attachments get ids and URLs served by the fake. The
// author's bot flag comes from the member configuration.
func (s *Server) UserMessage(channelID, userID, content string, attachments ...Attachment) Message {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.userChannelLocked(channelID, userID)
	if !ok {
		return Message{}
	}
	m := s.newMessageLocked(ch, userID, content, s.cfg.clock.Now())
	for _, a := range attachments {
		a.ID = ""
		m.Attachments = append(m.Attachments, s.storeAttachmentLocked(ch.ID, a))
	}
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	s.notifyLocked()
	return m.clone()
}

// userChannelLocked checks that userID may write in channelID.
func (s *Server) userChannelLocked(channelID, userID string) (*channelState, bool) {
	ch := s.channels[channelID]
	if ch == nil {
		s.t.Errorf("discordfake: unknown channel %s", channelID)
		return nil, false
	}
	if ch.Type == ChannelTypeDM {
		if ch.RecipientID != userID {
			s.t.Errorf("discordfake: user %s is not in DM channel %s", userID, channelID)
			return nil, false
		}
		return ch, true
	}
	if _, member := s.guilds[ch.GuildID].members[userID]; !member {
		s.t.Errorf("discordfake: user %s is not a member of guild %s", userID, ch.GuildID)
		return nil, false
	}
	return ch, true
}

// React adds userID's reaction to a message and dispatches MESSAGE_REACTION_ADD.
func (s *Server) React(channelID, messageID, userID, emoji string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.userChannelLocked(channelID, userID)
	if !ok {
		return
	}
	m := s.messageInLocked(ch, messageID)
	if m == nil {
		s.t.Errorf("discordfake: unknown message %s in channel %s", messageID, channelID)
		return
	}
	s.addReactionLocked(m, emoji, userID, s.cfg.clock.Now())
	s.notifyLocked()
}

// DMChannel returns the id of the DM channel between userID and the bot,
// opening it on first use.
// RefuseDMs makes the bot's messages to userID's DM channel fail with 50007
// "Cannot send messages to this user", as for a person who accepts no direct
// messages from server members.
func (s *Server) RefuseDMs(userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noDMs[userID] = true
}

func (s *Server) DMChannel(userID string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.users[userID]; !known || userID == s.cfg.botID {
		s.t.Errorf("discordfake: unknown user %s", userID)
		return ""
	}
	ch := s.dmChannelLocked(userID, s.cfg.clock.Now())
	s.notifyLocked()
	return ch.ID
}

// SlashCommand has userID run /name with options in channelID and dispatches
// INTERACTION_CREATE; it returns the interaction id. When the application
// registered the command (guild first, then global) its id and option types
// are used and the options are checked against it as Discord's client would;
// otherwise types are inferred from the Go values (string, integers, float64,
// bool). Options are sent in registration order (else sorted by name).
func (s *Server) SlashCommand(channelID, userID, name string, options map[string]any) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.userChannelLocked(channelID, userID)
	if !ok {
		return ""
	}
	now := s.cfg.clock.Now()
	cmd := s.findCommandLocked(ch.GuildID, name)
	if cmd != nil && ch.Type == ChannelTypeDM && cmd.GuildID != "" {
		cmd = nil
	}
	opts, resolved, err := s.commandOptionsLocked(cmd, ch.GuildID, options)
	if err != nil {
		s.t.Errorf("discordfake: /%s: %v", name, err)
		return ""
	}
	in := &interactionState{Interaction: Interaction{
		ID:           s.nextIDLocked(),
		Token:        newInteractionToken(),
		CommandName:  name,
		Options:      maps.Clone(options),
		GuildID:      ch.GuildID,
		ChannelID:    ch.ID,
		UserID:       userID,
		DispatchedAt: now,
	}}
	data := obj{"name": name, "type": cmdChatInput}
	if cmd != nil {
		in.CommandID = cmd.ID
		if cmd.GuildID != "" {
			data["guild_id"] = cmd.GuildID
		}
	} else {
		in.CommandID = s.nextIDLocked()
	}
	data["id"] = in.CommandID
	if len(opts) > 0 {
		data["options"] = opts
	}
	if len(resolved) > 0 {
		data["resolved"] = resolved
	}
	return s.dispatchInteractionLocked(in, ch, 2, obj{"data": data})
}

// dispatchInteractionLocked registers in, an interaction of type typ by
// in.UserID in ch, and dispatches its INTERACTION_CREATE: the fields every
// interaction has, with those of fields (data, and a component's message),
// and the guild's or the direct conversation's. It returns in's id.
func (s *Server) dispatchInteractionLocked(in *interactionState, ch *channelState, typ int, fields obj) string {
	s.interactions[in.ID] = in
	s.interOrder = append(s.interOrder, in.ID)
	s.byToken[in.Token] = in
	d := obj{
		"id":                    in.ID,
		"application_id":        s.cfg.appID,
		"type":                  typ,
		"channel_id":            ch.ID,
		"channel":               s.channelObjLocked(ch),
		"token":                 in.Token,
		"version":               1,
		"locale":                "en-US",
		"entitlements":          []any{},
		"attachment_size_limit": maxBody - 1<<20,
	}
	maps.Copy(d, fields)
	userID := in.UserID
	if g := s.guilds[ch.GuildID]; g != nil {
		d["guild_id"] = g.ID
		d["guild_locale"] = "en-US"
		d["guild"] = obj{"id": g.ID, "locale": "en-US", "features": []any{}}
		d["member"] = s.memberObjLocked(g, g.members[userID], true, true)
		d["app_permissions"] = strconv.FormatInt(g.permissions(g.members[s.cfg.botID]), 10)
		d["authorizing_integration_owners"] = obj{"0": g.ID}
		d["context"] = 0
	} else {
		d["user"] = s.userObjLocked(userID)
		d["app_permissions"] = strconv.FormatInt(DefaultPermissions, 10)
		d["authorizing_integration_owners"] = obj{"0": "0"}
		d["context"] = 1
	}
	s.dispatchLocked("INTERACTION_CREATE", 0, ch.GuildID, func(*gwSession) any { return d })
	s.notifyLocked()
	return in.ID
}

func newInteractionToken() string {
	b := make([]byte, 48)
	rand.Read(b)
	return "aW50ZXJhY3Rpb246" + base64.RawURLEncoding.EncodeToString(b)
}

// commandOptionsLocked renders options as interaction data options, typed
// by the registered command when there is one.
func (s *Server) commandOptionsLocked(cmd *commandState, guildID string, options map[string]any) ([]any, obj, error) {
	var order []string
	types := map[string]int{}
	if cmd != nil {
		for _, o := range cmd.Options {
			if o.Type == optSubCommand || o.Type == optSubCommandGroup {
				return nil, nil, fmt.Errorf("subcommands are not supported by SlashCommand")
			}
			if _, given := options[o.Name]; o.Required && !given {
				return nil, nil, fmt.Errorf("required option %q missing", o.Name)
			}
			order = append(order, o.Name)
			types[o.Name] = o.Type
		}
		for k := range options {
			if _, known := types[k]; !known {
				return nil, nil, fmt.Errorf("option %q is not registered (have %v)", k, order)
			}
		}
	} else {
		order = slices.Sorted(maps.Keys(options))
		for _, k := range order {
			types[k] = inferOptionType(options[k])
		}
	}
	var out []any
	resolved := obj{}
	for _, k := range order {
		v, given := options[k]
		if !given {
			continue
		}
		typ := types[k]
		val, err := optionValue(typ, v)
		if err != nil {
			return nil, nil, fmt.Errorf("option %q: %w", k, err)
		}
		out = append(out, obj{"name": k, "type": typ, "value": val})
		s.resolveLocked(resolved, typ, fmt.Sprint(val), guildID)
	}
	return out, resolved, nil
}

func inferOptionType(v any) int {
	switch v.(type) {
	case bool:
		return 5
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return 4
	case float32, float64:
		return 10
	default:
		return 3
	}
}

func optionValue(typ int, v any) (any, error) {
	switch typ {
	case 3, 6, 7, 8, 9: // string, user, channel, role, mentionable: strings on the wire
		str, isString := v.(string)
		if !isString {
			return nil, fmt.Errorf("want a string, got %T", v)
		}
		return str, nil
	case 5:
		b, isBool := v.(bool)
		if !isBool {
			return nil, fmt.Errorf("want a bool, got %T", v)
		}
		return b, nil
	case 4, 10:
		var f float64
		switch n := v.(type) {
		case int:
			f = float64(n)
		case int64:
			f = float64(n)
		case int32:
			f = float64(n)
		case float64:
			f = n
		case float32:
			f = float64(n)
		default:
			return nil, fmt.Errorf("want a number, got %T", v)
		}
		if typ == 4 && f != math.Trunc(f) {
			return nil, fmt.Errorf("want an integer, got %v", f)
		}
		return f, nil
	default:
		return nil, fmt.Errorf("option type %d is not supported by SlashCommand", typ)
	}
}

// resolveLocked adds the users, members, channels and roles that option
// values name to the interaction's resolved data.
func (s *Server) resolveLocked(resolved obj, typ int, id, guildID string) {
	add := func(kind string, v any) {
		m, _ := resolved[kind].(obj)
		if m == nil {
			m = obj{}
			resolved[kind] = m
		}
		m[id] = v
	}
	g := s.guilds[guildID]
	switch typ {
	case 6, 9:
		if _, known := s.users[id]; known {
			add("users", s.userObjLocked(id))
			if g != nil {
				if mem, member := g.members[id]; member {
					add("members", s.memberObjLocked(g, mem, false, true))
				}
			}
		}
	case 7:
		if ch := s.channels[id]; ch != nil {
			o := s.channelObjLocked(ch)
			o["permissions"] = strconv.FormatInt(DefaultPermissions, 10)
			add("channels", o)
		}
	}
	if (typ == 8 || typ == 9) && g != nil {
		if r, known := g.roles[id]; known {
			add("roles", s.roleObj(r, 0))
		}
	}
}
