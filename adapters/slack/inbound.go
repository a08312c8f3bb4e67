package slack

import (
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/threadsmith/threadsmith/chat"
)

// message is what the adapter needs of a Slack message, whichever way it came:
// an app_mention event, a message event, or conversations.replies.
type message struct {
	Channel     string
	ChannelType string // "channel", "group", "im", "mpim"; "" when unknown
	User        string
	BotID       string
	SubType     string
	Text        string
	TS          string
	ThreadTS    string
	Files       []slackapi.File
	Edited      bool
	Hidden      bool
	// AppMention says the message came as an app_mention event.
	AppMention bool
}

// inputSubtypes are the message subtypes a person sends as input: a plain
// message, a message sharing files, and a thread reply also sent to the channel.
var inputSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true}

// fromEvent extracts the message of an Events API event_callback, with its
// event id. ok is false for events that are not about a new message (such as
// reaction_added), which the adapter acknowledges and drops.
func fromEvent(ev slackevents.EventsAPIEvent) (m message, eventID string, ok bool) {
	if cb, isCB := ev.Data.(*slackevents.EventsAPICallbackEvent); isCB {
		eventID = cb.EventID
	}
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AgentSessionStoppedEvent:
		// Slack's own stop button on a processing agent session: the
		// thread's !stop, from the person who clicked it.
		return message{
			Channel: e.Channel, User: e.User, Text: chat.ActionText("stop"), ThreadTS: e.ThreadTimestamp,
		}, eventID, e.ThreadTimestamp != ""
	case *slackevents.AppMentionEvent:
		return message{
			Channel: e.Channel, User: e.User, BotID: e.BotID, Text: e.Text,
			TS: e.TimeStamp, ThreadTS: e.ThreadTimeStamp, Files: e.Files,
			Edited: e.Edited != nil, AppMention: true,
		}, eventID, true
	case *slackevents.MessageEvent:
		m := message{
			Channel: e.Channel, ChannelType: e.ChannelType, User: e.User, BotID: e.BotID,
			SubType: e.SubType, Text: e.Text, TS: e.TimeStamp, ThreadTS: e.ThreadTimeStamp,
		}
		if e.Message != nil {
			m.Files = e.Message.Files
			m.Hidden = e.Message.Hidden
			if m.BotID == "" {
				m.BotID = e.Message.BotID
			}
		}
		return m, eventID, true
	}
	return message{}, eventID, false
}

// fromMsg is a message of conversations.replies.
func fromMsg(channel string, msg slackapi.Msg) message {
	return message{
		Channel: channel, User: msg.User, BotID: msg.BotID, SubType: msg.SubType,
		Text: msg.Text, TS: msg.Timestamp, ThreadTS: msg.ThreadTimestamp, Files: msg.Files,
		Hidden: msg.Hidden,
	}
}

// isDM says whether m was sent in a direct conversation with the bot. Events
// that carry no channel_type (app_mention, conversations.replies) fall back on
// the channel id: Slack's im ids start with D.
func (m message) isDM() bool {
	if m.ChannelType != "" {
		return m.ChannelType == "im"
	}
	return strings.HasPrefix(m.Channel, "D")
}

// isInput says whether m is something a person typed: not a bot's (the bot's
// own included), not an edit, deletion, join or other subtype.
func (m message) isInput(id identity) bool {
	switch {
	case m.BotID != "", m.User == "", m.User == id.UserID, m.Hidden, m.Edited:
		return false
	case m.AppMention:
		return true
	}
	return inputSubtypes[m.SubType]
}

// inbound converts an input message. The author has only an id; the dispatcher
// looks up the rest.
func (m message) inbound(id identity, eventID string) chat.Inbound {
	root := m.ThreadTS
	if root == "" {
		root = m.TS
	}
	dm := m.isDM()
	team := id.TeamID
	if dm {
		team = "" // chat.ThreadRef: no team for direct conversations
	}
	tag := "<@" + id.UserID
	in := chat.Inbound{
		Thread:    chat.ThreadRef{Platform: Platform, Team: team, Channel: m.Channel, Thread: root},
		EventID:   eventID,
		MessageID: m.TS,
		Author:    chat.Author{ID: m.User},
		Text:      stripMention(m.Text, id.UserID),
		// The message event of a mention says so too: whichever of the two
		// arrives first opens the session, the other is a duplicate.
		Mention: m.AppMention || dm || strings.Contains(m.Text, tag+">") || strings.Contains(m.Text, tag+"|"),
		DM:      dm,
		Time:    tsTime(m.TS),
	}
	for _, f := range m.Files {
		in.Attachments = append(in.Attachments, chat.Attachment{
			Name: f.Name, MimeType: f.Mimetype, Size: int64(f.Size), URL: f.URLPrivate,
		})
	}
	return in
}

// stripMention removes the mention of the bot that starts text ("<@BOT> !status"
// is "!status"), as a command after a mention is the same as without one.
func stripMention(text, botUser string) string {
	t := strings.TrimLeft(text, " \t\n")
	rest, ok := strings.CutPrefix(t, "<@"+botUser)
	if !ok {
		return text
	}
	end := strings.IndexByte(rest, '>')
	if end < 0 || (end > 0 && rest[0] != '|') {
		return text // <@BOT2…>: another user whose id starts like the bot's
	}
	return strings.TrimLeft(rest[end+1:], " \t\n")
}

// tsTime is the time a Slack ts ("1700000000.000100") stands for.
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	var us int64
	if frac != "" {
		frac = (frac + "000000")[:6]
		us, _ = strconv.ParseInt(frac, 10, 64)
	}
	return time.Unix(s, us*1000)
}

// tsAfter reports whether Slack ts a is later than b ("" is before everything).
func tsAfter(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) > len(bs)
	}
	if as != bs {
		return as > bs
	}
	af = (af + "000000")[:6]
	bf = (bf + "000000")[:6]
	return af > bf
}
