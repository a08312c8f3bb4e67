package slackfake

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Slack's limits on a message's text: chat.postMessage refuses more than
// 40,000 characters, chat.update more than 4,000 (msg_too_long).
const (
	maxPostRunes   = 40000
	maxUpdateRunes = 4000
)

// Messages returns a thread as the fake stores it, with edits applied and deletions
// left out: the root then its replies, oldest first. threadTS may name the root or any
// reply; "" returns the channel's top-level messages instead.
func (s *Server) Messages(channel, threadTS string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[channel]
	if !ok {
		return nil
	}
	var out []Message
	if threadTS == "" {
		for _, ts := range ch.top {
			if m := ch.msgs[ts]; !m.deleted {
				out = append(out, m.snapshot())
			}
		}
		return out
	}
	root := threadTS
	if m, ok := ch.msgs[threadTS]; ok && m.ThreadTS != "" {
		root = m.ThreadTS
	}
	if m, ok := ch.msgs[root]; ok && !m.deleted {
		out = append(out, m.snapshot())
	}
	for _, m := range ch.liveReplies(root) {
		out = append(out, m.snapshot())
	}
	return out
}

// Reactions returns the reactions on a message, in the order first added.
func (s *Server) Reactions(channel, ts string) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[channel]
	if !ok {
		return nil
	}
	m, ok := ch.msgs[ts]
	if !ok {
		return nil
	}
	out := make([]Reaction, 0, len(m.reactions))
	for _, r := range m.reactions {
		out = append(out, Reaction{Name: r.Name, Users: slices.Clone(r.Users)})
	}
	return out
}

// Ephemerals returns the messages sent with chat.postEphemeral, in order, and
// whether their user could see them (Visible).
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ephemerals)
}

// Statuses returns the assistant.threads.setStatus calls accepted, in order.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses)
}

// lookupChannelLocked finds a channel named by a Web API call.
func (s *Server) lookupChannelLocked(id string) (*channel, string) {
	ch, ok := s.channels[id]
	if !ok {
		return nil, "channel_not_found"
	}
	return ch, ""
}

// messageContent checks the text/blocks/attachments of a post or update
// against the method's text limit.
func messageContent(p url.Values, maxRunes int) string {
	if p.Get("text") == "" && p.Get("blocks") == "" && p.Get("attachments") == "" {
		return "no_text"
	}
	if utf8.RuneCountInString(p.Get("text")) > maxRunes {
		return "msg_too_long"
	}
	if b := p.Get("blocks"); b != "" && (!json.Valid([]byte(b)) || !validBlocks(json.RawMessage(b))) {
		return "invalid_blocks"
	}
	return ""
}

// validBlocks checks what Block Kit refuses in the blocks the bot sends:
// a section's text empty or over 3,000 characters, an actions block with no
// elements or more than 25, a button without plain_text text (at most 75
// characters), action_ids repeated in a message, a value over 2,000
// characters or a url over 3,000, a static_select beyond its limits
// (validSelect); markdown blocks (whose text is a string,
// not a text object) empty or over 12,000 characters together.
func validBlocks(raw json.RawMessage) bool {
	var blocks []struct {
		Type     string            `json:"type"`
		Text     json.RawMessage   `json:"text"`
		Elements []json.RawMessage `json:"elements"`
	}
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) > 50 {
		return false
	}
	ids := map[string]bool{}
	markdown := 0
	for _, b := range blocks {
		switch b.Type {
		case "section":
			var text *struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(b.Text, &text) != nil || text == nil || text.Text == "" || utf8.RuneCountInString(text.Text) > 3000 {
				return false
			}
		case "markdown":
			var text string
			if json.Unmarshal(b.Text, &text) != nil || text == "" {
				return false
			}
			if markdown += utf8.RuneCountInString(text); markdown > 12000 {
				return false
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > 25 {
				return false
			}
		}
	}
	for _, sel := range selectsOf(raw) {
		if !validSelect(sel) || ids[sel.ActionID] {
			return false
		}
		ids[sel.ActionID] = true
	}
	for _, btn := range buttonsOf(raw) {
		if btn.Text.Type != "plain_text" || btn.Text.Text == "" || utf8.RuneCountInString(btn.Text.Text) > 75 ||
			ids[btn.ActionID] || len(btn.Value) > 2000 || len(btn.URL) > 3000 {
			return false
		}
		if btn.ActionID != "" {
			ids[btn.ActionID] = true
		}
	}
	return true
}

// validSelect checks a static_select as Block Kit does: an action_id of at
// most 255 characters, a plain_text placeholder of at most 150, 1 to 100
// options, each with plain_text text of 1 to 75 characters and a value of
// 1 to 150, the values unique.
func validSelect(sel Select) bool {
	if len(sel.ActionID) > 255 || (sel.Placeholder.Text != "" && (sel.Placeholder.Type != "plain_text" || utf8.RuneCountInString(sel.Placeholder.Text) > 150)) ||
		len(sel.Options) == 0 || len(sel.Options) > 100 {
		return false
	}
	values := map[string]bool{}
	for _, o := range sel.Options {
		if o.Text.Type != "plain_text" || o.Text.Text == "" || utf8.RuneCountInString(o.Text.Text) > 75 ||
			o.Value == "" || len(o.Value) > 150 || values[o.Value] {
			return false
		}
		values[o.Value] = true
	}
	return true
}

func rawBlocks(p url.Values) json.RawMessage {
	if b := p.Get("blocks"); b != "" {
		return json.RawMessage(b)
	}
	return nil
}

func (s *Server) chatPostMessage(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	if code := messageContent(p, maxPostRunes); code != "" {
		return nil, code
	}
	m := &message{
		Message: Message{
			User: s.cfg.botUserID, BotID: s.cfg.botID, Text: p.Get("text"),
			ThreadTS: p.Get("thread_ts"), Blocks: rawBlocks(p),
			Broadcast: p.Get("thread_ts") != "" && p.Get("reply_broadcast") == "true",
		},
		appID: s.cfg.appID,
	}
	warning := ""
	if md := p.Get("metadata"); md != "" {
		valid, ok := metadataOf(md)
		if !ok {
			return nil, "invalid_metadata_format"
		}
		if valid {
			m.Metadata = json.RawMessage(md)
		} else {
			warning = "invalid_metadata_schema"
		}
	}
	s.addLocked(ch, m)
	parse, linkNames := parseMode("chat.postMessage", p)
	s.noticeLocked("chat.postMessage", m, parse, linkNames)
	obj := s.messageObject(ch, m)
	s.echoLocked(ch, m, s.messageEvent(ch, m))
	res := map[string]any{"channel": ch.info.ID, "ts": m.TS, "message": obj}
	if warning != "" {
		res["warning"] = warning
	}
	return res, ""
}

// eventType is what Slack takes for a metadata event_type: letters, digits,
// underscores and hyphens.
var eventType = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// metadataOf checks a post's metadata as Slack does: ok is false when it is
// no JSON object (invalid_metadata_format); valid is false when its
// event_type or event_payload is wrong, which Slack answers with an
// invalid_metadata_schema warning, posting the message without the metadata.
func metadataOf(md string) (valid, ok bool) {
	var v struct {
		EventType    *string         `json:"event_type"`
		EventPayload json.RawMessage `json:"event_payload"`
	}
	if json.Unmarshal([]byte(md), &v) != nil {
		return false, false
	}
	var payload map[string]any
	return v.EventType != nil && eventType.MatchString(*v.EventType) &&
		json.Unmarshal(v.EventPayload, &payload) == nil && payload != nil, true
}

func (s *Server) chatUpdate(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	m, ok := ch.msgs[p.Get("ts")]
	if !ok || m.deleted {
		return nil, "message_not_found"
	}
	if m.User != s.cfg.botUserID {
		return nil, "cant_update_message"
	}
	if code := messageContent(p, maxUpdateRunes); code != "" {
		return nil, code
	}
	prev := s.messageObject(ch, m)
	if p.Has("text") {
		m.Text = p.Get("text")
	}
	if p.Has("blocks") {
		m.Blocks = rawBlocks(p)
	}
	parse, linkNames := parseMode("chat.update", p)
	s.noticeLocked("chat.update", m, parse, linkNames)
	m.editor = s.cfg.botUserID
	m.EditedTS = s.nextTSLocked()
	obj := s.messageObject(ch, m)
	s.echoLocked(ch, m, s.changedEvent(ch, m, prev))
	return map[string]any{"channel": ch.info.ID, "ts": m.TS, "text": m.Text, "message": obj}, ""
}

func (s *Server) chatDelete(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	m, ok := ch.msgs[p.Get("ts")]
	if !ok || m.deleted {
		return nil, "message_not_found"
	}
	if m.User != s.cfg.botUserID {
		return nil, "cant_delete_message"
	}
	prev := s.messageObject(ch, m)
	m.deleted = true
	s.echoLocked(ch, m, s.deletedEvent(ch, m, prev))
	return map[string]any{"channel": ch.info.ID, "ts": m.TS}, ""
}

func (s *Server) chatPostEphemeral(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	user := p.Get("user")
	if _, ok := s.users[user]; !ok {
		return nil, "user_not_found"
	}
	if !ch.members[user] {
		return nil, "user_not_in_channel"
	}
	if code := messageContent(p, maxPostRunes); code != "" {
		return nil, code
	}
	ts := s.nextTSLocked()
	s.ephemerals = append(s.ephemerals, Ephemeral{
		Channel: ch.info.ID, User: user, Text: p.Get("text"), ThreadTS: p.Get("thread_ts"), TS: ts,
		Visible: ephemeralVisible(ch, p.Get("thread_ts")),
	})
	return map[string]any{"message_ts": ts}, ""
}

// ephemeralVisible says whether Slack shows an ephemeral message posted with
// threadTS: at the channel's top level always; in a thread only when the
// thread has replies (Slack accepts the call, but a message that has none
// shows no thread to open, so the note is never seen).
func ephemeralVisible(ch *channel, threadTS string) bool {
	if threadTS == "" {
		return true
	}
	m, ok := ch.msgs[threadTS]
	if !ok {
		return false
	}
	root := m.TS
	if m.ThreadTS != "" {
		root = m.ThreadTS
	}
	return len(ch.liveReplies(root)) > 0
}

// chatGetPermalink answers with Slack's link form for a message:
// https://<workspace>.slack.com/archives/<channel>/p<ts without the dot>.
func (s *Server) chatGetPermalink(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	ts := p.Get("message_ts")
	if ts == "" {
		return nil, "message_not_found"
	}
	link := "https://fake.slack.test/archives/" + ch.info.ID + "/p" + strings.ReplaceAll(ts, ".", "")
	return map[string]any{"channel": ch.info.ID, "permalink": link}, ""
}

// reactionTarget finds the message a reactions.* call names.
func (s *Server) reactionTarget(p url.Values) (*message, string, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, "", code
	}
	name := strings.Trim(p.Get("name"), ":")
	if name == "" {
		return nil, "", "invalid_name"
	}
	m, ok := ch.msgs[p.Get("timestamp")]
	if !ok || m.deleted {
		return nil, "", "message_not_found"
	}
	return m, name, ""
}

func (s *Server) reactionsAdd(p url.Values) (map[string]any, string) {
	m, name, code := s.reactionTarget(p)
	if code != "" {
		return nil, code
	}
	for _, r := range m.reactions {
		if r.Name == name {
			if slices.Contains(r.Users, s.cfg.botUserID) {
				return nil, "already_reacted"
			}
			r.Users = append(r.Users, s.cfg.botUserID)
			return nil, ""
		}
	}
	m.reactions = append(m.reactions, &Reaction{Name: name, Users: []string{s.cfg.botUserID}})
	return nil, ""
}

func (s *Server) reactionsRemove(p url.Values) (map[string]any, string) {
	m, name, code := s.reactionTarget(p)
	if code != "" {
		return nil, code
	}
	for i, r := range m.reactions {
		if r.Name != name {
			continue
		}
		j := slices.Index(r.Users, s.cfg.botUserID)
		if j < 0 {
			break
		}
		r.Users = slices.Delete(r.Users, j, j+1)
		if len(r.Users) == 0 {
			m.reactions = slices.Delete(m.reactions, i, i+1)
		}
		return nil, ""
	}
	return nil, "no_reaction"
}

func (s *Server) assistantThreadsSetStatus(p url.Values) (map[string]any, string) {
	if !s.cfg.assistant {
		return nil, "not_allowed"
	}
	ch, code := s.lookupChannelLocked(p.Get("channel_id"))
	if code != "" {
		return nil, code
	}
	ts := p.Get("thread_ts")
	if ts == "" {
		return nil, "invalid_arguments"
	}
	loading, ok := loadingMessages(p.Get("loading_messages"))
	if !ok || len(loading) > maxLoadingMessages {
		return nil, "invalid_arguments"
	}
	st := Status{Channel: ch.info.ID, ThreadTS: ts, Status: p.Get("status"), LoadingMessages: loading}
	s.statuses = append(s.statuses, st)
	s.assistantStatuses[st.Channel+"/"+ts] = &assistantStatus{status: st.Status, loading: loading, set: s.cfg.now()}
	return nil, ""
}
