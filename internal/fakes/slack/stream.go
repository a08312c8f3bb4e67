package slackfake

import (
	"encoding/json"
	"net/url"
	"reflect"
	"unicode/utf8"
)

// maxStreamRunes is the limit Slack documents for markdown_text on
// chat.startStream, chat.appendStream and chat.stopStream.
const maxStreamRunes = 12000

// streamState is a message's place in Slack's streaming protocol: a message
// started with chat.startStream is streaming until chat.stopStream; a
// stopped one takes no more appends.
type streamState uint8

const (
	notStreamed streamState = iota
	streaming
	streamStopped
)

// WithoutStreaming makes the workspace refuse the streaming methods
// (chat.startStream answers code, e.g. "not_allowed" or "unknown_method"),
// as a workspace or plan without Slack's AI app features does.
func WithoutStreaming(code string) Option {
	return func(c *config) { c.noStreaming = code }
}

// StreamStops returns how many of the bot's streams were stopped.
func (s *Server) StreamStops() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streamStops
}

// streamChunks checks a chunks argument: a JSON array of objects whose type
// is markdown_text (text), task_update (id and title), plan_update (title)
// or blocks (1 to 50 valid blocks). It returns the text its markdown_text
// chunks carry, and "invalid_chunks" when one is wrong.
func streamChunks(raw string) (string, string) {
	if raw == "" {
		return "", ""
	}
	var chunks []struct {
		Type   string          `json:"type"`
		Text   *string         `json:"text"`
		ID     string          `json:"id"`
		Title  string          `json:"title"`
		Blocks json.RawMessage `json:"blocks"`
	}
	if json.Unmarshal([]byte(raw), &chunks) != nil {
		return "", "invalid_chunks"
	}
	var text string
	for _, c := range chunks {
		switch c.Type {
		case "markdown_text":
			if c.Text == nil {
				return "", "invalid_chunks"
			}
			text += *c.Text
		case "task_update":
			if c.ID == "" || c.Title == "" {
				return "", "invalid_chunks"
			}
		case "plan_update":
			if c.Title == "" {
				return "", "invalid_chunks"
			}
		case "blocks":
			if len(c.Blocks) == 0 || !validBlocks(c.Blocks) {
				return "", "invalid_chunks"
			}
		default:
			return "", "invalid_chunks"
		}
	}
	return text, ""
}

// streamText is the text a streaming call adds: markdown_text and the
// markdown_text chunks, each within Slack's limit.
func streamText(p url.Values) (string, string) {
	md := p.Get("markdown_text")
	if utf8.RuneCountInString(md) > maxStreamRunes {
		return "", "msg_too_long"
	}
	chunked, code := streamChunks(p.Get("chunks"))
	if code != "" {
		return "", code
	}
	if utf8.RuneCountInString(chunked) > maxStreamRunes {
		return "", "msg_too_long"
	}
	return md + chunked, ""
}

// chatStartStream starts a streaming message: a reply in a thread (Slack
// streams only replies to a person's request), or in a DM. Outside a DM the
// recipient (recipient_user_id and recipient_team_id) is required.
func (s *Server) chatStartStream(p url.Values) (map[string]any, string) {
	if s.cfg.noStreaming != "" {
		return nil, s.cfg.noStreaming
	}
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, code
	}
	dm := ch.info.Kind == "im"
	if p.Get("thread_ts") == "" && !dm {
		return nil, "invalid_arguments"
	}
	if !dm && (p.Get("recipient_user_id") == "" || p.Get("recipient_team_id") == "") {
		return nil, "invalid_arguments"
	}
	if u := p.Get("recipient_user_id"); u != "" && u[0] != 'U' && u[0] != 'W' {
		return nil, "user_not_found"
	}
	if t := p.Get("recipient_team_id"); t != "" && t != s.cfg.teamID {
		return nil, "team_not_found"
	}
	if mode := p.Get("task_display_mode"); mode != "" && mode != "timeline" && mode != "plan" {
		return nil, "invalid_arguments"
	}
	text, code := streamText(p)
	if code != "" {
		return nil, code
	}
	m := &message{
		Message: Message{User: s.cfg.botUserID, BotID: s.cfg.botID, Text: text, ThreadTS: p.Get("thread_ts")},
		appID:   s.cfg.appID,
		stream:  streaming,
	}
	s.addLocked(ch, m)
	// Streamed markdown is read as a markdown block is, as strictly as a
	// client's parsing: written <!channel> markup and a plain @channel
	// notify.
	s.noticeLocked("chat.startStream", m, streamParse, false)
	s.echoLocked(ch, m, s.messageEvent(ch, m))
	return map[string]any{"channel": ch.info.ID, "ts": m.TS}, ""
}

// streamTarget is the bot's streaming message a call names.
func (s *Server) streamTarget(p url.Values) (*channel, *message, string) {
	ch, code := s.lookupChannelLocked(p.Get("channel"))
	if code != "" {
		return nil, nil, code
	}
	if p.Get("ts") == "" {
		return nil, nil, "invalid_arguments"
	}
	m, ok := ch.msgs[p.Get("ts")]
	if !ok || m.deleted {
		return nil, nil, "message_not_found"
	}
	if m.User != s.cfg.botUserID {
		return nil, nil, "message_not_owned_by_app"
	}
	if m.stream != streaming {
		return nil, nil, "message_not_in_streaming_state"
	}
	return ch, m, ""
}

// chatAppendStream appends markdown_text (required) and chunks to a
// streaming message.
func (s *Server) chatAppendStream(p url.Values) (map[string]any, string) {
	ch, m, code := s.streamTarget(p)
	if code != "" {
		return nil, code
	}
	if p.Get("markdown_text") == "" && p.Get("chunks") == "" {
		return nil, "invalid_arguments"
	}
	text, code := streamText(p)
	if code != "" {
		return nil, code
	}
	prev := s.messageObject(ch, m)
	before := m.Text
	m.Text += text
	s.noticeAppendLocked("chat.appendStream", m, before, text)
	s.echoLocked(ch, m, s.changedEvent(ch, m, prev))
	return map[string]any{"channel": ch.info.ID, "ts": m.TS}, ""
}

// chatStopStream ends a streaming message, with optional last text and
// blocks (at most 50) shown below it. The message is an ordinary one after.
func (s *Server) chatStopStream(p url.Values) (map[string]any, string) {
	ch, m, code := s.streamTarget(p)
	if code != "" {
		return nil, code
	}
	text, code := streamText(p)
	if code != "" {
		return nil, code
	}
	if b := p.Get("blocks"); b != "" && !validBlocks(json.RawMessage(b)) {
		return nil, "invalid_blocks"
	}
	prev := s.messageObject(ch, m)
	if text != "" {
		before := m.Text
		m.Text += text
		s.noticeAppendLocked("chat.stopStream", m, before, text)
	}
	if b := rawBlocks(p); b != nil {
		m.Blocks = b
	}
	m.stream = streamStopped
	s.streamStops++
	s.echoLocked(ch, m, s.changedEvent(ch, m, prev))
	return map[string]any{"channel": ch.info.ID, "ts": m.TS, "message": s.messageObject(ch, m)}, ""
}

// noticeAppendLocked records a notice for text appended to streaming
// message m (whose text was before): Slack reads the message as a whole, so
// markup split across appends ("<!chan" then "nel>") notifies as written in
// one piece. The notice is the added text's own mentions, or the whole
// message's when appending changed them.
func (s *Server) noticeAppendLocked(method string, m *message, before, text string) {
	if !Mentions(text, streamParse, false, s.groupHandles).Empty() ||
		!reflect.DeepEqual(Mentions(before, streamParse, false, s.groupHandles), Mentions(m.Text, streamParse, false, s.groupHandles)) {
		s.noticeLocked(method, m, streamParse, false)
	}
}

// streamParse is how streamed markdown_text is read for mentions: as a
// markdown block, parsed as a client would.
const streamParse = "full"
