package slackfake

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"
)

// channel is a conversation and its messages. Timestamps are handed out in
// increasing order, so appending keeps top and replies sorted.
type channel struct {
	info    Channel
	created time.Time
	msgs    map[string]*message
	top     []string            // top-level ts, oldest first (broadcast replies too)
	replies map[string][]string // root ts -> reply ts, oldest first
	members map[string]bool     // users in the conversation
}

func newChannel(c Channel, created time.Time) *channel {
	if c.Kind == "" {
		c.Kind = kindFromID(c.ID)
	}
	if c.Name == "" && c.Kind != "im" {
		c.Name = strings.ToLower(c.ID)
	}
	ch := &channel{info: c, created: created, msgs: map[string]*message{}, replies: map[string][]string{}, members: map[string]bool{}}
	if c.User != "" {
		ch.members[c.User] = true
	}
	return ch
}

func kindFromID(id string) string {
	switch {
	case strings.HasPrefix(id, "D"):
		return "im"
	case strings.HasPrefix(id, "G"):
		return "group"
	default:
		return "channel"
	}
}

// message is a stored message; Message holds what tests see.
type message struct {
	Message
	clientMsgID string
	appID       string // set on the bot's own posts
	editor      string
	upload      bool
	inviter     string
	deleted     bool
	reactions   []*Reaction
	stream      streamState
}

// storedFile is a file the fake serves at its url_private.
type storedFile struct {
	File
	created time.Time
}

// channelLocked returns the channel, creating it for scenario helpers.
func (s *Server) channelLocked(id string) *channel {
	ch, ok := s.channels[id]
	if !ok {
		ch = newChannel(Channel{ID: id}, s.cfg.now())
		s.channels[id] = ch
	}
	return ch
}

// userLocked returns the user, registering it for scenario helpers.
func (s *Server) userLocked(id string) *User {
	u, ok := s.users[id]
	if !ok {
		name := strings.ToLower(id)
		u = &User{ID: id, Name: name, RealName: "User " + id, Email: name + "@example.com"}
		s.users[id] = u
	}
	return u
}

// dmChannelLocked returns the im channel between the bot and user.
func (s *Server) dmChannelLocked(user string) *channel {
	if id, ok := s.dms[user]; ok {
		return s.channels[id]
	}
	id := s.newIDLocked("D")
	ch := newChannel(Channel{ID: id, Kind: "im", User: user}, s.cfg.now())
	s.channels[id] = ch
	s.dms[user] = id
	return ch
}

// rootOf returns the live root message of the thread ts belongs to, or nil.
func (ch *channel) rootOf(ts string) *message {
	m, ok := ch.msgs[ts]
	if !ok {
		return nil
	}
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		m = ch.msgs[m.ThreadTS]
	}
	if m == nil || m.deleted {
		return nil
	}
	return m
}

// addLocked stores m with a fresh ts. A thread_ts naming no live message posts the
// message to the channel instead, as Slack does when a thread's parent was deleted.
func (s *Server) addLocked(ch *channel, m *message) {
	m.Channel = ch.info.ID
	m.TS = s.nextTSLocked()
	if m.ThreadTS != "" {
		if root := ch.rootOf(m.ThreadTS); root != nil {
			m.ThreadTS = root.TS
		} else {
			m.ThreadTS = ""
			m.Broadcast = false
		}
	}
	ch.msgs[m.TS] = m
	if m.ThreadTS == "" {
		ch.top = append(ch.top, m.TS)
		return
	}
	ch.replies[m.ThreadTS] = append(ch.replies[m.ThreadTS], m.TS)
	if m.Broadcast {
		m.SubType = "thread_broadcast"
		ch.top = append(ch.top, m.TS)
	}
}

// liveReplies returns the thread's undeleted replies, oldest first.
func (ch *channel) liveReplies(root string) []*message {
	var out []*message
	for _, ts := range ch.replies[root] {
		if m := ch.msgs[ts]; !m.deleted {
			out = append(out, m)
		}
	}
	return out
}

// snapshot copies m for tests, so later edits do not show through.
func (m *message) snapshot() Message {
	out := m.Message
	out.Files = slices.Clone(m.Files)
	out.Blocks = slices.Clone(m.Blocks)
	out.Metadata = slices.Clone(m.Metadata)
	return out
}

// messageObject renders m as the Web API and events render a message.
func (s *Server) messageObject(ch *channel, m *message) map[string]any {
	o := map[string]any{"type": "message", "text": m.Text, "ts": m.TS}
	if m.User != "" {
		o["user"] = m.User
	}
	if m.SubType != "" {
		o["subtype"] = m.SubType
	}
	if m.BotID != "" {
		o["bot_id"] = m.BotID
	}
	if m.Username != "" {
		o["username"] = m.Username
	}
	if m.appID != "" {
		o["app_id"] = m.appID
		o["bot_profile"] = map[string]any{
			"id": m.BotID, "app_id": m.appID, "name": s.cfg.botName, "deleted": false,
			"team_id": s.cfg.teamID, "updated": ch.created.Unix(),
			"icons": map[string]any{"image_36": "", "image_48": "", "image_72": ""},
		}
	}
	if m.clientMsgID != "" {
		o["client_msg_id"] = m.clientMsgID
	}
	if m.SubType == "" || m.SubType == "file_share" || m.SubType == "thread_broadcast" {
		o["team"] = s.cfg.teamID
	}
	if len(m.Blocks) > 0 {
		o["blocks"] = json.RawMessage(m.Blocks)
	}
	if len(m.Files) > 0 {
		files := make([]any, 0, len(m.Files))
		for _, f := range m.Files {
			if sf, ok := s.files[f.ID]; ok {
				files = append(files, s.fileObject(sf))
			}
		}
		o["files"] = files
		o["upload"] = m.upload
		o["display_as_bot"] = false
	}
	if m.inviter != "" {
		o["inviter"] = m.inviter
	}
	if m.EditedTS != "" {
		o["edited"] = map[string]any{"user": m.editor, "ts": m.EditedTS}
	}
	if m.ThreadTS != "" {
		o["thread_ts"] = m.ThreadTS
		if root := ch.msgs[m.ThreadTS]; root != nil {
			o["parent_user_id"] = root.User
		}
	} else if replies := ch.liveReplies(m.TS); len(replies) > 0 {
		var users []string
		for _, r := range replies {
			if r.User != "" && !slices.Contains(users, r.User) {
				users = append(users, r.User)
			}
		}
		o["thread_ts"] = m.TS
		o["reply_count"] = len(replies)
		o["reply_users_count"] = len(users)
		o["reply_users"] = users
		o["latest_reply"] = replies[len(replies)-1].TS
		o["is_locked"] = false
		o["subscribed"] = false
	}
	if len(m.reactions) > 0 {
		rs := make([]any, 0, len(m.reactions))
		for _, r := range m.reactions {
			rs = append(rs, map[string]any{"name": r.Name, "users": r.Users, "count": len(r.Users)})
		}
		o["reactions"] = rs
	}
	return o
}

// tombstone renders a deleted thread root that still has replies.
func tombstone(m *message) map[string]any {
	return map[string]any{
		"type": "message", "subtype": "tombstone", "text": "This message was deleted.",
		"user": "USLACKBOT", "hidden": true, "ts": m.TS, "thread_ts": m.TS,
	}
}

// fileObject renders a file as files.info and message files[] render it.
func (s *Server) fileObject(f *storedFile) map[string]any {
	return map[string]any{
		"id": f.ID, "created": f.created.Unix(), "timestamp": f.created.Unix(),
		"name": f.Name, "title": f.Title, "mimetype": f.Mimetype, "filetype": f.Filetype,
		"pretty_type": strings.ToUpper(f.Filetype), "user": f.User, "user_team": s.cfg.teamID,
		"editable": false, "size": f.Size, "mode": "hosted", "is_external": false,
		"external_type": "", "is_public": true, "public_url_shared": false,
		"display_as_bot": false, "username": "",
		"url_private": f.URLPrivate, "url_private_download": f.URLPrivateDownload,
		"permalink":        s.srv.URL + "/files/" + f.User + "/" + f.ID + "/" + f.Name,
		"permalink_public": s.srv.URL + "/" + s.cfg.teamID + "-" + f.ID,
		"has_rich_preview": false, "file_access": "visible",
	}
}

// newFileLocked stores a file and gives it the URLs the fake serves.
func (s *Server) newFileLocked(id, user, name, title, mimetype string, content []byte) *storedFile {
	if id == "" {
		id = s.newIDLocked("F")
	}
	if title == "" {
		title = name
	}
	base := s.srv.URL + "/files-pri/" + s.cfg.teamID + "-" + id + "/"
	f := &storedFile{
		File: File{
			ID: id, Name: name, Title: title, Mimetype: mimetype, Filetype: filetype(name, mimetype),
			User: user, Size: len(content), Content: content,
			URLPrivate: base + name, URLPrivateDownload: base + "download/" + name,
		},
		created: s.cfg.now(),
	}
	s.files[id] = f
	return f
}

// filetype guesses Slack's filetype from a name or mimetype.
func filetype(name, mimetype string) string {
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(name)), ".")
	switch ext {
	case "jpeg":
		return "jpg"
	case "txt":
		return "text"
	case "md":
		return "markdown"
	case "patch":
		return "diff"
	case "":
	default:
		return ext
	}
	switch {
	case strings.HasPrefix(mimetype, "text/"):
		return "text"
	case strings.HasPrefix(mimetype, "image/"):
		return strings.TrimPrefix(mimetype, "image/")
	}
	return "binary"
}

// channelType is the channel_type of message events in ch.
func channelType(ch *channel) string {
	return ch.info.Kind
}
