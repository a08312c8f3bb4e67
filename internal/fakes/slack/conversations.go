package slackfake

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// Page sizes as Slack documents them: conversations.replies defaults to (and caps at)
// 1000 messages, conversations.history defaults to 100.
const (
	repliesDefaultLimit = 1000
	historyDefaultLimit = 100
	maxLimit            = 1000
)

// tsFilter is the oldest/latest/inclusive window of a history call.
type tsFilter struct {
	oldest, latest int64
	inclusive      bool
}

func parseFilter(p url.Values) (tsFilter, string) {
	f := tsFilter{latest: -1, inclusive: p.Get("inclusive") == "1" || p.Get("inclusive") == "true"}
	if v := p.Get("oldest"); v != "" {
		us, ok := parseTS(v)
		if !ok {
			return f, "invalid_ts_oldest"
		}
		f.oldest = us
	}
	if v := p.Get("latest"); v != "" {
		us, ok := parseTS(v)
		if !ok {
			return f, "invalid_ts_latest"
		}
		f.latest = us
	}
	return f, ""
}

func (f tsFilter) admits(ts string) bool {
	us, _ := parseTS(ts)
	if f.inclusive {
		return us >= f.oldest && (f.latest < 0 || us <= f.latest)
	}
	return us > f.oldest && (f.latest < 0 || us < f.latest)
}

func parseLimit(p url.Values, def int) int {
	n, err := strconv.Atoi(p.Get("limit"))
	if err != nil || n <= 0 {
		return def
	}
	return min(n, maxLimit)
}

// Cursors look like Slack's: base64 of "next_ts:<ts in micros>".
func encodeCursor(ts string) string {
	us, _ := parseTS(ts)
	return base64.StdEncoding.EncodeToString([]byte("next_ts:" + strconv.FormatInt(us, 10)))
}

func decodeCursor(c string) (int64, bool) {
	b, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	v, ok := strings.CutPrefix(string(b), "next_ts:")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// conversationsReplies returns a thread: the root first on the first page, whatever
// oldest/latest say (as Slack does), then the replies in the window, oldest first.
// Continuation pages hold replies only.
func (s *Server) conversationsReplies(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	m, ok := ch.msgs[p.Get("ts")]
	if !ok {
		return nil, "thread_not_found"
	}
	rootTS := m.TS
	if m.ThreadTS != "" {
		rootTS = m.ThreadTS
	}
	root := ch.msgs[rootTS]
	replies := ch.liveReplies(rootTS)
	if root == nil || (root.deleted && len(replies) == 0) {
		return nil, "thread_not_found"
	}
	f, code := parseFilter(p)
	if code != "" {
		return nil, code
	}
	limit := parseLimit(p, repliesDefaultLimit)
	meta := wantsMetadata(p)

	var items []map[string]any
	var from int64
	if c := p.Get("cursor"); c != "" {
		if from, ok = decodeCursor(c); !ok {
			return nil, "invalid_cursor"
		}
	} else if root.deleted {
		items = append(items, tombstone(root))
	} else {
		items = append(items, s.readObject(ch, root, meta))
	}
	next := ""
	for _, r := range replies {
		us, _ := parseTS(r.TS)
		if us < from || !f.admits(r.TS) {
			continue
		}
		if len(items) == limit {
			next = r.TS
			break
		}
		items = append(items, s.readObject(ch, r, meta))
	}
	return pageResponse(items, next), ""
}

// conversationsHistory returns a channel's top-level messages, newest first.
func (s *Server) conversationsHistory(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	f, code := parseFilter(p)
	if code != "" {
		return nil, code
	}
	limit := parseLimit(p, historyDefaultLimit)
	from := int64(-1)
	if c := p.Get("cursor"); c != "" {
		var ok bool
		if from, ok = decodeCursor(c); !ok {
			return nil, "invalid_cursor"
		}
	}
	var items []map[string]any
	next := ""
	for i := len(ch.top) - 1; i >= 0; i-- {
		m := ch.msgs[ch.top[i]]
		us, _ := parseTS(m.TS)
		if m.deleted || (from >= 0 && us > from) || !f.admits(m.TS) {
			continue
		}
		if len(items) == limit {
			next = m.TS
			break
		}
		items = append(items, s.readObject(ch, m, wantsMetadata(p)))
	}
	res := pageResponse(items, next)
	res["pin_count"] = 0
	return res, ""
}

// wantsMetadata says a history read asked for messages' metadata.
func wantsMetadata(p url.Values) bool {
	v := p.Get("include_all_metadata")
	return v == "1" || v == "true"
}

// readObject renders m for a history read, with its metadata if asked.
func (s *Server) readObject(ch *channel, m *message, meta bool) map[string]any {
	o := s.messageObject(ch, m)
	if meta && len(m.Metadata) > 0 {
		o["metadata"] = json.RawMessage(m.Metadata)
	}
	return o
}

func pageResponse(items []map[string]any, next string) map[string]any {
	msgs := make([]any, len(items))
	for i, it := range items {
		msgs[i] = it
	}
	meta := map[string]any{"next_cursor": ""}
	if next != "" {
		meta["next_cursor"] = encodeCursor(next)
	}
	return map[string]any{"messages": msgs, "has_more": next != "", "response_metadata": meta}
}

func (s *Server) conversationsInfo(p url.Values) (map[string]any, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	c := ch.info
	created := ch.created.Unix()
	if c.Kind == "im" {
		return map[string]any{"channel": map[string]any{
			"id": c.ID, "created": created, "is_im": true, "is_org_shared": false,
			"user": c.User, "is_user_deleted": false, "priority": 0, "is_open": true,
			"context_team_id": s.cfg.teamID,
		}}, ""
	}
	empty := map[string]any{"value": "", "creator": "", "last_set": 0}
	return map[string]any{"channel": map[string]any{
		"id": c.ID, "name": c.Name, "name_normalized": c.Name, "created": created,
		"is_channel": c.Kind == "channel", "is_group": c.Kind == "group", "is_im": false,
		"is_mpim": c.Kind == "mpim", "is_private": c.Kind != "channel",
		"is_archived": false, "is_general": false, "unlinked": 0, "is_shared": false,
		"is_org_shared": false, "is_ext_shared": false, "is_pending_ext_shared": false,
		"is_member": true, "context_team_id": s.cfg.teamID, "shared_team_ids": []string{s.cfg.teamID},
		"creator": "", "updated": created * 1000, "topic": empty, "purpose": empty,
		"previous_names": []string{},
	}}, ""
}

func (s *Server) usersInfo(p url.Values) (map[string]any, string) {
	u, ok := s.users[p.Get("user")]
	if !ok {
		return nil, "user_not_found"
	}
	profile := map[string]any{
		"real_name": u.RealName, "real_name_normalized": u.RealName,
		"display_name": u.Name, "display_name_normalized": u.Name,
		"team": s.cfg.teamID,
	}
	if s.hasScope("users:read.email") {
		profile["email"] = u.Email
	}
	if u.IsBot && u.ID == s.cfg.botUserID {
		profile["bot_id"] = s.cfg.botID
	}
	return map[string]any{"user": map[string]any{
		"id": u.ID, "team_id": s.cfg.teamID, "name": u.Name, "deleted": false,
		"real_name": u.RealName, "tz": "UTC", "tz_label": "Coordinated Universal Time",
		"tz_offset": 0, "profile": profile, "is_admin": false, "is_owner": false,
		"is_primary_owner": false, "is_restricted": false, "is_ultra_restricted": false,
		"is_bot": u.IsBot, "is_app_user": false, "updated": 1700000000,
	}}, ""
}

func (s *Server) authTest(url.Values) (map[string]any, string) {
	return map[string]any{
		"url": "https://" + s.cfg.teamName + ".slack.com/", "team": s.cfg.teamName,
		"user": s.cfg.botName, "team_id": s.cfg.teamID, "user_id": s.cfg.botUserID,
		"bot_id": s.cfg.botID, "is_enterprise_install": false,
	}, ""
}

// appsConnectionsOpen hands out a single-use websocket URL, as Slack does.
func (s *Server) appsConnectionsOpen(url.Values) (map[string]any, string) {
	if s.outage {
		return nil, "service_unavailable"
	}
	ticket := randomID()
	s.tickets[ticket] = true
	base := "ws" + strings.TrimPrefix(s.srv.URL, "http")
	if s.socketAddr != "" {
		base = "ws://" + s.socketAddr
	}
	ws := base + "/socket?ticket=" + ticket + "&app_id=" + s.cfg.appID
	return map[string]any{"url": ws}, ""
}
