package slackfake

import (
	"encoding/json"
	"slices"
	"strings"
)

// Mentioned is who a message would notify: Slack's special mentions (here,
// channel, everyone), user groups (subteam ids or handles) and users.
type Mentioned struct {
	Special []string
	Groups  []string
	Users   []string
}

// Empty reports whether nobody would be notified.
func (m Mentioned) Empty() bool {
	return len(m.Special) == 0 && len(m.Groups) == 0 && len(m.Users) == 0
}

func (m *Mentioned) add(list *[]string, v string) {
	if v != "" && !slices.Contains(*list, v) {
		*list = append(*list, v)
	}
}

// Notice is a message the bot sent whose text would notify someone.
type Notice struct {
	Method  string // chat.postMessage or chat.update
	Channel string
	TS      string
	Text    string
	Mentioned
}

// Mentions returns who text (a message's text or a mrkdwn/markdown text
// object) would notify, read as Slack reads it:
//
//   - <!here>, <!channel>, <!everyone> (and the old <!group>), with or
//     without a |label, notify everyone concerned; <!subteam^ID> a user
//     group; <@U…> or <@W…> a person — anywhere, code included: the fake
//     takes the strict reading, since Slack resolves these before rendering.
//   - parse "full" or "client" (chat.update's default) also turns the plain
//     words @here, @channel and @everyone into mentions, and link_names a
//     plain @handle of a user group (handles lists the known ones).
//   - &lt;!here&gt; is text: Slack decodes entities after reading mentions.
func Mentions(text, parse string, linkNames bool, handles map[string]string) Mentioned {
	var m Mentioned
	for rest := text; ; {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '>')
		if j < 0 {
			break
		}
		target, _, _ := strings.Cut(rest[i+1:i+j], "|")
		rest = rest[i+j+1:]
		switch {
		case strings.HasPrefix(target, "@"):
			m.add(&m.Users, target[1:])
		case strings.HasPrefix(target, "!subteam^"):
			m.add(&m.Groups, strings.TrimPrefix(target, "!subteam^"))
		case target == "!here" || target == "!channel" || target == "!everyone":
			m.add(&m.Special, target[1:])
		case target == "!group":
			m.add(&m.Special, "channel")
		}
	}
	full := parse == "full" || parse == "client"
	if full || linkNames {
		for _, w := range atWords(text) {
			switch {
			case full && (w == "here" || w == "channel" || w == "everyone"):
				m.add(&m.Special, w)
			case handles[w] != "":
				m.add(&m.Groups, handles[w])
			}
		}
	}
	return m
}

// atWords returns the words written as @word in text.
func atWords(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && isHandleByte(text[i-1])) {
			continue
		}
		j := i + 1
		for j < len(text) && isHandleByte(text[j]) {
			j++
		}
		if j > i+1 {
			out = append(out, text[i+1:j])
		}
		i = j - 1
	}
	return out
}

func isHandleByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// blockText is a mrkdwn or markdown text of a message's blocks.
type blockText struct {
	text string
	// parsed says Slack parses the text as a client would: a mrkdwn text
	// object that is not verbatim ("certain mentions will be automatically
	// parsed"), or a markdown block, read as strictly.
	parsed bool
}

// blockTexts returns the text of every mrkdwn or markdown text in blocks
// (plain_text never notifies).
func blockTexts(raw json.RawMessage) []blockText {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []blockText
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if t, _ := x["type"].(string); t == "mrkdwn" || t == "markdown" {
				if s, ok := x["text"].(string); ok {
					verbatim, _ := x["verbatim"].(bool)
					out = append(out, blockText{text: s, parsed: t == "markdown" || !verbatim})
				}
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(v)
	return out
}

// noticeLocked records who a post or update of m would notify, if anyone.
func (s *Server) noticeLocked(method string, m *message, parse string, linkNames bool) {
	texts := append([]blockText{{text: m.Text}}, blockTexts(m.Blocks)...)
	var all Mentioned
	for _, t := range texts {
		p := parse
		if t.parsed {
			p = "full"
		}
		got := Mentions(t.text, p, linkNames, s.groupHandles)
		for _, v := range got.Special {
			all.add(&all.Special, v)
		}
		for _, v := range got.Groups {
			all.add(&all.Groups, v)
		}
		for _, v := range got.Users {
			all.add(&all.Users, v)
		}
	}
	if all.Empty() {
		return
	}
	s.notices = append(s.notices, Notice{Method: method, Channel: m.Channel, TS: m.TS, Text: m.Text, Mentioned: all})
}

// Notices returns the bot's posts and updates that would have notified
// someone, in order: what a test of "nothing the model writes pings anyone"
// checks is empty.
func (s *Server) Notices() []Notice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.notices)
}

// AddUserGroup registers a user group: <!subteam^id> mentions it, and so does
// @handle when a message is sent with link_names.
func (s *Server) AddUserGroup(id, handle string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groupHandles[handle] = id
}

// parseMode is the parse a post or update is read with: what it says, else
// the method's default (chat.update parses like a client, chat.postMessage
// not at all).
func parseMode(method string, p map[string][]string) (parse string, linkNames bool) {
	parse = first(p["parse"])
	if parse == "" {
		parse = "none"
		if method == "chat.update" {
			parse = "client"
		}
	}
	ln := first(p["link_names"])
	return parse, ln == "1" || ln == "true"
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
