package discordfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxContent is Discord's limit on message content, in characters.
const maxContent = 2000

// maxFiles is how many files one message may carry.
const maxFiles = 10

var mentionRE = regexp.MustCompile(`<@!?(\d+)>`)

// newMessageLocked stores a message at the end of ch and returns it; the
// caller dispatches it.
func (s *Server) newMessageLocked(ch *channelState, authorID, content string, now time.Time) *messageState {
	m := &messageState{Message: Message{
		ID:        s.nextIDLocked(),
		ChannelID: ch.ID,
		GuildID:   ch.GuildID,
		AuthorID:  authorID,
		Content:   content,
		CreatedAt: now,
	}}
	u := s.users[authorID]
	m.AuthorName, m.AuthorBot = u.Username, u.Bot
	m.mentions = s.mentionsLocked(content)
	s.messages[m.ID] = m
	ch.messages = append(ch.messages, m)
	ch.lastID = m.ID
	return m
}

func (s *Server) mentionsLocked(content string) []string {
	var ids []string
	for _, sm := range mentionRE.FindAllStringSubmatch(content, -1) {
		if _, ok := s.users[sm[1]]; ok && !slices.Contains(ids, sm[1]) {
			ids = append(ids, sm[1])
		}
	}
	return ids
}

// attachLocked turns uploaded files into attachments served by the fake.
func (s *Server) attachLocked(channelID string, files []File) []Attachment {
	var out []Attachment
	for _, f := range files {
		a := Attachment{ID: s.nextIDLocked(), Filename: f.Filename, ContentType: f.ContentType, Data: f.Data}
		out = append(out, s.storeAttachmentLocked(channelID, a))
	}
	return out
}

func (s *Server) storeAttachmentLocked(channelID string, a Attachment) Attachment {
	if a.ID == "" {
		a.ID = s.nextIDLocked()
	}
	if a.Filename == "" {
		a.Filename = "file"
	}
	a.URL = s.URL() + "attachments/" + channelID + "/" + a.ID + "/" + url.PathEscape(a.Filename)
	stored := a
	a.URL = s.signedURLLocked(a.URL)
	s.attachments[a.ID] = &stored
	return a
}

// contentGuarded reports whether the MESSAGE_CONTENT intent guards m's
// content: guild messages by others that do not mention the bot.
func (s *Server) contentGuarded(m *messageState) bool {
	return m.GuildID != "" && m.AuthorID != s.cfg.botID && !slices.Contains(m.mentions, s.cfg.botID)
}

// dispatchMessageLocked sends MESSAGE_CREATE or MESSAGE_UPDATE for m.
// Ephemeral messages are never dispatched.
func (s *Server) dispatchMessageLocked(t string, m *messageState) {
	if m.Flags&MessageFlagEphemeral != 0 {
		return
	}
	intent := IntentGuildMessages
	if m.GuildID == "" {
		intent = IntentDirectMessages
	}
	s.dispatchLocked(t, intent, m.GuildID, func(sess *gwSession) any {
		return s.messageObjLocked(m, true, sess.intents&IntentMessageContent == 0 && s.contentGuarded(m))
	})
}

func (s *Server) dispatchMessageDeleteLocked(m *messageState) {
	if m.Flags&MessageFlagEphemeral != 0 {
		return
	}
	intent := IntentGuildMessages
	if m.GuildID == "" {
		intent = IntentDirectMessages
	}
	d := obj{"id": m.ID, "channel_id": m.ChannelID}
	if m.GuildID != "" {
		d["guild_id"] = m.GuildID
	}
	s.dispatchLocked("MESSAGE_DELETE", intent, m.GuildID, func(*gwSession) any { return d })
}

// messagePayload is the part of a message create body the fake reads.
type messagePayload struct {
	Content          *string           `json:"content"`
	Embeds           []json.RawMessage `json:"embeds"`
	Components       json.RawMessage   `json:"components"`
	Flags            int               `json:"flags"`
	StickerIDs       []string          `json:"sticker_ids"`
	MessageReference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
	Nonce        json.RawMessage `json:"nonce"`
	EnforceNonce bool            `json:"enforce_nonce"`
}

// nonceWindow is how long Discord remembers a nonce for enforce_nonce ("the
// past few minutes").
const nonceWindow = 5 * time.Minute

// nonceOf reads a nonce (a string or an integer) and checks its length.
func nonceOf(raw json.RawMessage) (string, response, bool) {
	if emptyJSON(raw) {
		return "", response{}, true
	}
	var str string
	if json.Unmarshal(raw, &str) != nil {
		str = string(raw) // an integer
	}
	if utf8.RuneCountInString(str) > 25 {
		return "", invalidForm(map[string]string{"nonce": "BASE_TYPE_MAX_LENGTH: Must be 25 or fewer in length."}), false
	}
	return str, response{}, true
}

func emptyJSON(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null" || string(raw) == "[]"
}

// validateContent checks content and the message as a whole the way Discord does.
func validateMessage(content string, embeds []json.RawMessage, components json.RawMessage, files int, stickers int) (response, bool) {
	if utf8.RuneCountInString(content) > maxContent {
		return invalidForm(map[string]string{
			"content": "BASE_TYPE_MAX_LENGTH: Must be " + strconv.Itoa(maxContent) + " or fewer in length.",
		}), false
	}
	if len(embeds) > 10 {
		return invalidForm(map[string]string{"embeds": "BASE_TYPE_MAX_LENGTH: Must be 10 or fewer in length."}), false
	}
	if files > maxFiles {
		return invalidForm(map[string]string{"files": "BASE_TYPE_MAX_LENGTH: Must be 10 or fewer in length."}), false
	}
	if content == "" && len(embeds) == 0 && emptyJSON(components) && files == 0 && stickers == 0 {
		return errEmptyMessage, false
	}
	return validateComponents(components)
}

// applyEditLocked applies an edit body (message or webhook edit) to m:
// present keys replace, "attachments" keeps the listed ids, files append.
func (s *Server) applyEditLocked(m *messageState, body json.RawMessage, files []File, now time.Time) (response, bool) {
	var raw map[string]json.RawMessage
	if len(body) > 0 {
		if err := json.Unmarshal(body, &raw); err != nil {
			return errInvalidJSON, false
		}
	}
	next := m.Message.clone()
	if v, ok := raw["content"]; ok {
		var content *string
		if err := json.Unmarshal(v, &content); err != nil {
			return invalidForm(map[string]string{"content": "BASE_TYPE_STRING: Must be a string."}), false
		}
		next.Content = ""
		if content != nil {
			next.Content = *content
		}
	}
	if v, ok := raw["embeds"]; ok {
		next.Embeds = nil
		if err := json.Unmarshal(v, &next.Embeds); err != nil {
			return invalidForm(map[string]string{"embeds": "BASE_TYPE_ARRAY: Must be an array."}), false
		}
	}
	if v, ok := raw["components"]; ok {
		next.Components = append(json.RawMessage(nil), v...)
	}
	if v, ok := raw["flags"]; ok {
		var flags int
		json.Unmarshal(v, &flags)
		const editable = 1 << 2 // SUPPRESS_EMBEDS
		next.Flags = next.Flags&^editable | flags&editable
	}
	if v, ok := raw["attachments"]; ok {
		var keep []struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(v, &keep)
		kept := map[string]bool{}
		for _, k := range keep {
			kept[strings.Trim(string(k.ID), `"`)] = true
		}
		next.Attachments = slices.DeleteFunc(next.Attachments, func(a Attachment) bool { return !kept[a.ID] })
	}
	if len(files) > 0 {
		next.Attachments = append(next.Attachments, s.attachLocked(m.ChannelID, files)...)
	}
	loading := next.Flags&MessageFlagLoading != 0
	if !loading || len(raw) > 0 || len(files) > 0 {
		if resp, ok := validateMessage(next.Content, next.Embeds, next.Components, len(next.Attachments), 0); !ok {
			return resp, false
		}
	}
	next.Flags &^= MessageFlagLoading
	next.EditedAt = now
	next.Edits++
	m.Message = next
	m.mentions = s.mentionsLocked(next.Content)
	return response{}, true
}

// visibleMessages lists ch's messages as REST shows them, oldest first.
func visibleMessages(ch *channelState) []*messageState {
	var out []*messageState
	for _, m := range ch.messages {
		if !m.deleted && m.Flags&MessageFlagEphemeral == 0 {
			out = append(out, m)
		}
	}
	return out
}

// restStrip reports whether REST reads strip m's content: when the
// MESSAGE_CONTENT intent is off for the application.
func (s *Server) restStrip(m *messageState) bool {
	return s.cfg.disabledIntents&IntentMessageContent != 0 && s.contentGuarded(m)
}

func (s *Server) channelLocked(id string) *channelState { return s.channels[id] }

func (s *Server) messageInLocked(ch *channelState, id string) *messageState {
	m := s.messages[id]
	if m == nil || m.deleted || m.ChannelID != ch.ID || m.Flags&MessageFlagEphemeral != 0 {
		return nil
	}
	return m
}

// dmChannelLocked returns the bot's DM channel with userID, opening it on first use.
func (s *Server) dmChannelLocked(userID string, now time.Time) *channelState {
	if id, ok := s.dms[userID]; ok {
		return s.channels[id]
	}
	ch := &channelState{Channel: Channel{ID: s.nextIDLocked(), Type: ChannelTypeDM, RecipientID: userID, CreatedAt: now}}
	s.channels[ch.ID] = ch
	s.dms[userID] = ch.ID
	return ch
}

// AttachmentURLLifetime is how long an attachment URL the fake hands out
// works: Discord's CDN links are signed (ex, is, hm) and expire after about
// a day; a message fetched again carries fresh ones.
const AttachmentURLLifetime = 24 * time.Hour

// signedURLLocked is base signed as Discord's CDN signs attachment links:
// ex (expiry) and is (issued), hexadecimal Unix seconds, and hm, an HMAC of
// the path and both, which serveAttachment checks against the clock.
func (s *Server) signedURLLocked(base string) string {
	now := s.cfg.clock.Now()
	ex := strconv.FormatInt(now.Add(AttachmentURLLifetime).Unix(), 16)
	is := strconv.FormatInt(now.Unix(), 16)
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := url.Values{"ex": {ex}, "is": {is}, "hm": {s.cdnMAC(u.EscapedPath(), ex, is)}}
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Server) cdnMAC(path, ex, is string) string {
	m := hmac.New(sha256.New, s.cdnKey[:])
	m.Write([]byte(path + "\x00" + ex + "\x00" + is))
	return hex.EncodeToString(m.Sum(nil))
}

// cdnLinkValid says whether r carries a signature the fake made for its
// path that has not expired at now.
func (s *Server) cdnLinkValid(r *http.Request, now time.Time) bool {
	q := r.URL.Query()
	ex, is, hm := q.Get("ex"), q.Get("is"), q.Get("hm")
	want := s.cdnMAC(r.URL.EscapedPath(), ex, is)
	if !hmac.Equal([]byte(hm), []byte(want)) {
		return false
	}
	until, err := strconv.ParseInt(ex, 16, 64)
	return err == nil && now.Unix() < until
}
