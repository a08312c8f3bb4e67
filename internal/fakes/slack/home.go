package slackfake

import (
	"encoding/json"
	"net/url"
	"unicode/utf8"
)

// The app's Home tab: OpenHome delivers app_home_opened as Slack does when a
// person opens the app and picks its Home tab; views.publish stores the view
// a person's Home tab shows, checked as Slack checks it.

// WithoutHomeTab turns the app's Home tab off (a manifest without
// features.app_home.home_tab_enabled): views.publish of a home view answers
// not_enabled.
func WithoutHomeTab() Option { return func(c *config) { c.noHomeTab = true } }

// OpenHome has user open the app's Home tab: an app_home_opened event (tab
// "home", in the user's DM with the app, with the view published for them
// before, if any). It returns the event id, or "" when the app does not
// subscribe to the event.
func (s *Server) OpenHome(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.subscribedLocked("app_home_opened") {
		return ""
	}
	s.userLocked(user)
	ch := s.dmChannelLocked(user)
	ev := map[string]any{
		"type": "app_home_opened", "user": user, "channel": ch.info.ID, "tab": "home", "event_ts": s.nextTSLocked(),
	}
	if v, ok := s.homes[user]; ok {
		ev["view"] = v
	}
	return s.emitLocked(ev, ch.info.ID, "")
}

// HomeView returns the view last published on user's Home tab.
func (s *Server) HomeView(user string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.homes[user]
	return v, ok
}

// Limits of a published view, from Slack's reference: a view holds at most
// 100 blocks; private_metadata at most 3,000 characters, callback_id and
// external_id 255; the whole view at most 250 kB; a header's text is
// plain_text of at most 150 characters.
const (
	maxViewBlocks   = 100
	maxViewMetadata = 3000
	maxViewID       = 255
	maxViewBytes    = 250 << 10
	maxHeaderRunes  = 150
)

// viewsPublish stores a Home tab view. A missing or unknown user_id, a view
// that is not JSON, not of type home, with no blocks or more than 100, or
// blocks Block Kit refuses answers invalid_arguments; a view over 250 kB
// view_too_large; a home view while the Home tab is off not_enabled.
func (s *Server) viewsPublish(p url.Values) (map[string]any, string) {
	user := p.Get("user_id")
	if user == "" || s.users[user] == nil {
		return nil, "invalid_arguments"
	}
	raw := p.Get("view")
	if len(raw) > maxViewBytes {
		return nil, "view_too_large"
	}
	var v struct {
		Type            string            `json:"type"`
		Blocks          []json.RawMessage `json:"blocks"`
		PrivateMetadata string            `json:"private_metadata"`
		CallbackID      string            `json:"callback_id"`
		ExternalID      string            `json:"external_id"`
	}
	if raw == "" || json.Unmarshal([]byte(raw), &v) != nil || v.Type != "home" {
		return nil, "invalid_arguments"
	}
	if len(v.Blocks) == 0 || len(v.Blocks) > maxViewBlocks || utf8.RuneCountInString(v.PrivateMetadata) > maxViewMetadata ||
		len(v.CallbackID) > maxViewID || len(v.ExternalID) > maxViewID || !validViewBlocks(v.Blocks) {
		return nil, "invalid_arguments"
	}
	if s.cfg.noHomeTab {
		return nil, "not_enabled"
	}
	s.homes[user] = json.RawMessage(raw)
	return map[string]any{"view": map[string]any{
		"id": s.newIDLocked("V"), "team_id": s.cfg.teamID, "type": "home", "blocks": v.Blocks,
		"app_id": s.cfg.appID, "bot_id": s.cfg.botID,
	}}, ""
}

// validViewBlocks checks the blocks of a view as a message's (validBlocks),
// without a message's 50-block limit, and its headers: plain_text of 1 to
// 150 characters.
func validViewBlocks(blocks []json.RawMessage) bool {
	var others []json.RawMessage
	for _, b := range blocks {
		var h struct {
			Type string `json:"type"`
			Text *struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
		}
		if json.Unmarshal(b, &h) != nil || h.Type == "" {
			return false
		}
		if h.Type != "header" {
			others = append(others, b)
			continue
		}
		if h.Text == nil || h.Text.Type != "plain_text" || h.Text.Text == "" || utf8.RuneCountInString(h.Text.Text) > maxHeaderRunes {
			return false
		}
	}
	for len(others) > 0 {
		n := min(len(others), 50)
		raw, err := json.Marshal(others[:n])
		if err != nil || !validBlocks(raw) {
			return false
		}
		others = others[n:]
	}
	return true
}
