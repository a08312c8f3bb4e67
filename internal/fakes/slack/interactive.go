package slackfake

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Button is a button of a message's actions blocks, as Click finds it.
type Button struct {
	BlockID  string `json:"-"`
	ActionID string `json:"action_id"`
	Value    string `json:"value"`
	URL      string `json:"url"`
	Style    string `json:"style"`
	Text     struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		Emoji bool   `json:"emoji"`
	} `json:"text"`
}

// Buttons returns the buttons of a message's actions blocks, in order.
func (s *Server) Buttons(channel, ts string) []Button {
	s.mu.Lock()
	defer s.mu.Unlock()
	return buttonsOf(s.blocksLocked(channel, ts))
}

// messageLocked finds message ts in channel: m is nil for a message not
// there or deleted. The caller holds s.mu.
func (s *Server) messageLocked(chID, ts string) (*channel, *message) {
	ch, ok := s.channels[chID]
	if !ok {
		return nil, nil
	}
	m, ok := ch.msgs[ts]
	if !ok || m.deleted {
		return ch, nil
	}
	return ch, m
}

// blocksLocked are the blocks of message ts in channel; nil for a message
// not there or deleted. The caller holds s.mu.
func (s *Server) blocksLocked(channel, ts string) json.RawMessage {
	if _, m := s.messageLocked(channel, ts); m != nil {
		return m.Blocks
	}
	return nil
}

func buttonsOf(raw json.RawMessage) []Button {
	return actionElements(raw, "button", func(b *Button, block string) { b.BlockID = block })
}

// actionElements decodes the elements of type typ in the actions blocks of
// raw, in order, telling each which block it is in.
func actionElements[T any](raw json.RawMessage, typ string, inBlock func(*T, string)) []T {
	var blocks []struct {
		Type     string            `json:"type"`
		BlockID  string            `json:"block_id"`
		Elements []json.RawMessage `json:"elements"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []T
	for _, b := range blocks {
		if b.Type != "actions" {
			continue
		}
		for _, el := range b.Elements {
			var probe struct {
				Type string `json:"type"`
			}
			var v T
			if json.Unmarshal(el, &probe) != nil || probe.Type != typ || json.Unmarshal(el, &v) != nil {
				continue
			}
			inBlock(&v, b.BlockID)
			out = append(out, v)
		}
	}
	return out
}

// Click has user click the button actionID of a message, as Slack reports it
// to an app with interactivity: a block_actions payload, over Socket Mode as
// an "interactive" envelope, or (after UseHTTPEvents) POSTed form-encoded as
// payload=…, signed, to HTTPEvents.InteractiveURL (default URL). A link
// button's click is reported too, with its url and no value. It returns the
// id under which the click is recorded (for Redeliver, WaitEventAck,
// Deliveries). Clicking a button the message does not have, or a message of
// someone else, fails the test: Slack would show no such button.
func (s *Server) Click(channel, ts, user, actionID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m := s.messageLocked(channel, ts)
	if m == nil {
		s.t.Errorf("slackfake: Click: no message %s in %s", ts, channel)
		return ""
	}
	var btn *Button
	for _, b := range buttonsOf(m.Blocks) {
		if b.ActionID == actionID {
			btn = &b
			break
		}
	}
	if btn == nil {
		s.t.Errorf("slackfake: Click: message %s has no button %q (it has %v)", ts, actionID, buttonsOf(m.Blocks))
		return ""
	}
	action := map[string]any{
		"action_id": btn.ActionID, "block_id": btn.BlockID, "type": "button",
		"text": btn.Text,
	}
	if btn.Value != "" {
		action["value"] = btn.Value
	}
	if btn.URL != "" {
		action["url"] = btn.URL
	}
	if btn.Style != "" {
		action["style"] = btn.Style
	}
	return s.blockActionLocked(ch, m, user, action)
}

// blockActionLocked reports action, done by user on message m of ch, as a
// block_actions payload, and returns the id it is recorded under.
func (s *Server) blockActionLocked(ch *channel, m *message, user string, action map[string]any) string {
	s.seq++
	id := fmt.Sprintf("Ia0%09X", s.seq)
	action["action_ts"] = s.nextTSLocked()
	username := user
	if u, ok := s.users[user]; ok && u.Name != "" {
		username = u.Name
	}
	container := map[string]any{
		"type": "message", "message_ts": m.TS, "channel_id": ch.info.ID, "is_ephemeral": false,
	}
	if m.ThreadTS != "" {
		container["thread_ts"] = m.ThreadTS
	}
	payload := map[string]any{
		"type":                  "block_actions",
		"user":                  map[string]any{"id": user, "username": username, "name": username, "team_id": s.cfg.teamID},
		"api_app_id":            s.cfg.appID,
		"token":                 verificationToken,
		"container":             container,
		"trigger_id":            fmt.Sprintf("%d.%d.%s", s.seq, s.seq*7, strings.ReplaceAll(randomID(), "-", "")),
		"team":                  map[string]any{"id": s.cfg.teamID, "domain": "fake"},
		"enterprise":            nil,
		"is_enterprise_install": false,
		"channel":               map[string]any{"id": ch.info.ID, "name": ch.info.Name},
		"message":               s.messageObject(ch, m),
		"state":                 map[string]any{"values": map[string]any{}},
		"response_url":          "https://hooks.slack.com/actions/" + s.cfg.teamID + "/" + id + "/fake",
		"actions":               []any{action},
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		s.t.Errorf("slackfake: encoding block_actions: %v", err)
		return id
	}
	rec := &eventRecord{id: id, typ: "block_actions", channel: ch.info.ID, ts: m.TS, payload: raw, interactive: true}
	s.events[id] = rec
	s.deliverLocked(rec, "")
	return id
}

// interactiveForm is the body of an interactivity request over HTTP.
func interactiveForm(payload []byte) []byte {
	return []byte(url.Values{"payload": {string(payload)}}.Encode())
}

// Select is a static_select of a message's actions blocks, as Choose finds
// it.
type Select struct {
	BlockID     string `json:"-"`
	ActionID    string `json:"action_id"`
	Placeholder struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"placeholder"`
	Options []SelectOption `json:"options"`
}

// SelectOption is one option of a static_select.
type SelectOption struct {
	Text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"text"`
	Value string `json:"value"`
}

// Selects returns the static_selects of a message's actions blocks, in
// order.
func (s *Server) Selects(channel, ts string) []Select {
	s.mu.Lock()
	defer s.mu.Unlock()
	return selectsOf(s.blocksLocked(channel, ts))
}

func selectsOf(raw json.RawMessage) []Select {
	return actionElements(raw, "static_select", func(sel *Select, block string) { sel.BlockID = block })
}

// Choose has user pick the option value in the static_select actionID of a
// message, as Slack reports it: a block_actions payload whose action carries
// the selected_option, delivered as Click's are. It returns the id under
// which the choice is recorded. A menu the message does not have, or a value
// it does not offer, fails the test: Slack lets people pick only what the
// menu shows.
func (s *Server) Choose(channel, ts, user, actionID, value string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m := s.messageLocked(channel, ts)
	if m == nil {
		s.t.Errorf("slackfake: Choose: no message %s in %s", ts, channel)
		return ""
	}
	for _, sel := range selectsOf(m.Blocks) {
		if sel.ActionID != actionID {
			continue
		}
		for _, o := range sel.Options {
			if o.Value == value {
				return s.blockActionLocked(ch, m, user, map[string]any{
					"action_id": sel.ActionID, "block_id": sel.BlockID, "type": "static_select",
					"selected_option": o, "placeholder": sel.Placeholder,
				})
			}
		}
		s.t.Errorf("slackfake: Choose: the menu %q of message %s has no option %q (it has %+v)", actionID, ts, value, sel.Options)
		return ""
	}
	s.t.Errorf("slackfake: Choose: message %s has no menu %q", ts, actionID)
	return ""
}
