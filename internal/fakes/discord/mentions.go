package discordfake

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// AllowedMentions is a message's allowed_mentions object.
type AllowedMentions struct {
	Parse       []string `json:"parse"`
	Users       []string `json:"users"`
	Roles       []string `json:"roles"`
	RepliedUser bool     `json:"replied_user"`
}

// Mentioned is who a message would ping.
type Mentioned struct {
	// Everyone is set for a ping of @everyone or @here.
	Everyone bool
	Users    []string
	Roles    []string
}

// Empty reports whether nobody would be pinged.
func (m Mentioned) Empty() bool { return !m.Everyone && len(m.Users) == 0 && len(m.Roles) == 0 }

// Notice is a message the bot created or edited whose content would ping
// someone.
type Notice struct {
	// Route is the REST route that wrote it ("POST /api/v9/channels/{channel}/messages", …).
	Route     string
	ChannelID string
	MessageID string
	Content   string
	// Edit says the content came with an edit: Discord does not ping again
	// for an edit, but the fake counts it, strictly.
	Edit bool
	Mentioned
}

var (
	userMentionRE = regexp.MustCompile(`<@!?(\d+)>`)
	roleMentionRE = regexp.MustCompile(`<@&(\d+)>`)
)

// Notified returns whom content would ping, as Discord decides it: the
// mentions in the content (<@id>, <@!id>, <@&role>, @everyone, @here) that
// allowed_mentions lets through. Without allowed_mentions (nil) every
// mention in the content pings; with it, users only if its parse holds
// "users" or its users list names them, roles likewise, and @everyone and
// @here only if parse holds "everyone". Mentions inside code pings as well:
// Discord parses them before Markdown.
func Notified(content string, am *AllowedMentions) Mentioned {
	var m Mentioned
	allowUser := func(id string) bool {
		return am == nil || slices.Contains(am.Parse, "users") || slices.Contains(am.Users, id)
	}
	allowRole := func(id string) bool {
		return am == nil || slices.Contains(am.Parse, "roles") || slices.Contains(am.Roles, id)
	}
	for _, sm := range userMentionRE.FindAllStringSubmatch(content, -1) {
		if allowUser(sm[1]) && !slices.Contains(m.Users, sm[1]) {
			m.Users = append(m.Users, sm[1])
		}
	}
	for _, sm := range roleMentionRE.FindAllStringSubmatch(content, -1) {
		if allowRole(sm[1]) && !slices.Contains(m.Roles, sm[1]) {
			m.Roles = append(m.Roles, sm[1])
		}
	}
	if (am == nil || slices.Contains(am.Parse, "everyone")) &&
		(strings.Contains(content, "@everyone") || strings.Contains(content, "@here")) {
		m.Everyone = true
	}
	return m
}

// allowedMentionsOf reads allowed_mentions from a JSON body (nil when absent
// or null) and checks it as Discord does: a type in parse excludes a list of
// ids of that type.
func allowedMentionsOf(body json.RawMessage) (*AllowedMentions, response, bool) {
	var raw struct {
		AllowedMentions *AllowedMentions `json:"allowed_mentions"`
	}
	if len(body) == 0 || json.Unmarshal(body, &raw) != nil || raw.AllowedMentions == nil {
		return nil, response{}, true
	}
	am := raw.AllowedMentions
	for _, p := range am.Parse {
		if p != "users" && p != "roles" && p != "everyone" {
			return nil, invalidForm(map[string]string{"allowed_mentions.parse": "ENUM_TYPE_COERCE: Value must be one of {'users', 'roles', 'everyone'}."}), false
		}
	}
	if slices.Contains(am.Parse, "users") && len(am.Users) > 0 {
		return nil, invalidForm(map[string]string{"allowed_mentions": "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE: parse:[\"users\"] and users: [ids...] are mutually exclusive."}), false
	}
	if slices.Contains(am.Parse, "roles") && len(am.Roles) > 0 {
		return nil, invalidForm(map[string]string{"allowed_mentions": "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE: parse:[\"roles\"] and roles: [ids...] are mutually exclusive."}), false
	}
	if len(am.Users) > 100 || len(am.Roles) > 100 {
		return nil, invalidForm(map[string]string{"allowed_mentions": "BASE_TYPE_MAX_LENGTH: Must be 100 or fewer in length."}), false
	}
	return am, response{}, true
}

// noticeLocked records whom m, as just written with am, would ping.
// Ephemeral messages ping nobody.
func (s *Server) noticeLocked(route string, m *messageState, am *AllowedMentions, edit bool) {
	if m.Flags&MessageFlagEphemeral != 0 {
		return
	}
	got := Notified(m.Content, am)
	if got.Empty() {
		return
	}
	s.notices = append(s.notices, Notice{
		Route: route, ChannelID: m.ChannelID, MessageID: m.ID, Content: m.Content, Edit: edit, Mentioned: got,
	})
}

// Notices returns the bot's messages and edits that would have pinged
// someone, in order.
func (s *Server) Notices() []Notice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.notices)
}
