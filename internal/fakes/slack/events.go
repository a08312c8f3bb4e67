package slackfake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// verificationToken is the deprecated token Slack still puts in event payloads.
const verificationToken = "fakeverificationtoken0001"

// eventRecord is one event; every delivery of it carries the same payload.
type eventRecord struct {
	id      string
	typ     string
	subtype string
	channel string
	ts      string
	payload json.RawMessage // the event_callback, or an interaction's payload
	// interactive marks a click (Click): an "interactive" envelope, or a
	// form-encoded request to the interactivity URL.
	interactive bool
	deliveries  int
	acked       bool
	latest      *delivery
	// outstanding: delivered (not lost) and not yet acknowledged; Server.outstanding
	// counts these so WaitAllAcked stays cheap under bursts.
	outstanding bool
}

// updateOutstandingLocked recomputes rec.outstanding and the server's count.
func (s *Server) updateOutstandingLocked(rec *eventRecord) {
	now := !rec.acked && rec.latest != nil && !rec.latest.Lost
	if now != rec.outstanding {
		rec.outstanding = now
		if now {
			s.outstanding++
		} else {
			s.outstanding--
		}
	}
}

// delivery is one delivery attempt; Delivery is what tests see.
type delivery struct {
	Delivery
	rec   *eventRecord
	frame []byte // the Socket Mode envelope
}

// emitLocked wraps an inner event in an event_callback and delivers it.
func (s *Server) emitLocked(ev map[string]any, channel, ts string) string {
	s.seq++
	id := fmt.Sprintf("Ev0%09X", s.seq)
	now := s.cfg.now()
	payload := map[string]any{
		"token":                 verificationToken,
		"team_id":               s.cfg.teamID,
		"context_team_id":       s.cfg.teamID,
		"context_enterprise_id": nil,
		"api_app_id":            s.cfg.appID,
		"event":                 ev,
		"type":                  "event_callback",
		"event_id":              id,
		"event_time":            now.Unix(),
		"authorizations": []any{map[string]any{
			"enterprise_id": nil, "team_id": s.cfg.teamID, "user_id": s.cfg.botUserID,
			"is_bot": true, "is_enterprise_install": false,
		}},
		"is_ext_shared_channel": false,
		"event_context":         "4-" + base64.RawURLEncoding.EncodeToString([]byte(`{"tid":"`+s.cfg.teamID+`","cid":"`+channel+`"}`)),
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		s.t.Errorf("slackfake: encoding event: %v", err)
		return id
	}
	rec := &eventRecord{id: id, channel: channel, ts: ts, payload: raw}
	rec.typ, _ = ev["type"].(string)
	rec.subtype, _ = ev["subtype"].(string)
	s.events[id] = rec
	s.deliverLocked(rec, "")
	return id
}

// deliverLocked makes one delivery attempt of rec over the current transport.
func (s *Server) deliverLocked(rec *eventRecord, retryReason string) {
	if s.closed {
		return
	}
	d := &delivery{rec: rec, Delivery: Delivery{
		EventID: rec.id, EventType: rec.typ, SubType: rec.subtype, Channel: rec.channel, TS: rec.ts,
		RetryAttempt: rec.deliveries, RetryReason: retryReason,
	}}
	rec.deliveries++
	rec.latest = d
	switch {
	case s.outage:
		d.ID = randomID()
		d.Lost = true
	case s.http != nil:
		s.seq++
		d.ID = fmt.Sprintf("http-%d", s.seq)
		d.HTTP = true
		s.httpQueue = append(s.httpQueue, d)
		select {
		case s.httpWake <- struct{}{}:
		default:
		}
	default:
		d.ID = randomID()
		env := map[string]any{
			"envelope_id":              d.ID,
			"payload":                  rec.payload,
			"type":                     "events_api",
			"accepts_response_payload": false,
			"retry_attempt":            d.RetryAttempt,
			"retry_reason":             d.RetryReason,
		}
		if rec.interactive {
			// Interactions carry no retry fields; their envelopes accept a
			// response payload.
			env = map[string]any{
				"envelope_id": d.ID, "payload": rec.payload, "type": "interactive",
				"accepts_response_payload": true,
			}
		}
		frame, err := json.Marshal(env)
		if err != nil {
			s.t.Errorf("slackfake: encoding envelope: %v", err)
			return
		}
		d.frame = frame
		s.routeLocked(d)
	}
	s.deliveries = append(s.deliveries, d)
	s.byDelivery[d.ID] = d
	s.updateOutstandingLocked(rec)
	s.notifyLocked()
}

// armRedeliveryLocked schedules the next attempt of d's event if none of its
// deliveries is acknowledged in time.
func (s *Server) armRedeliveryLocked(d *delivery, reason string) {
	if s.cfg.redelivery <= 0 || s.closed || d.rec.deliveries > s.cfg.maxRetries {
		return
	}
	var tm *time.Timer
	tm = time.AfterFunc(s.cfg.redelivery, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.timers, tm)
		if s.closed || d.rec.acked || d.rec.latest != d {
			return
		}
		s.deliverLocked(d.rec, reason)
	})
	s.timers[tm] = struct{}{}
}

// Redeliver delivers an event again, as Slack does when it saw no ack in time:
// same payload and event_id, a new envelope, retry_attempt one higher, retry_reason
// "timeout" ("http_timeout" over HTTP).
func (s *Server) Redeliver(eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.events[eventID]
	if !ok {
		s.t.Errorf("slackfake: Redeliver(%q): no such event", eventID)
		return
	}
	reason := "timeout"
	if s.http != nil {
		reason = "http_timeout"
	}
	s.deliverLocked(rec, reason)
}

// Deliveries returns every delivery attempt so far, in order.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Delivery, len(s.deliveries))
	for i, d := range s.deliveries {
		out[i] = d.Delivery
	}
	return out
}

// DeliveriesFor returns the delivery attempts of events about one message
// (channel, ts), in order: a mention's app_mention and message events, their
// redeliveries, and events about its edits or deletion.
func (s *Server) DeliveriesFor(channel, ts string) []Delivery {
	var out []Delivery
	for _, d := range s.Deliveries() {
		if d.Channel == channel && d.TS == ts {
			out = append(out, d)
		}
	}
	return out
}

// Acks returns every acknowledgement so far, in order.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acks)
}

// WaitAck waits for the acknowledgement of one delivery (an envelope_id).
func (s *Server) WaitAck(ctx context.Context, deliveryID string) (Ack, error) {
	var ack Ack
	err := s.waitFor(ctx, func() bool {
		var ok bool
		ack, ok = s.ackOf[deliveryID]
		return ok
	})
	if err != nil {
		return Ack{}, fmt.Errorf("slackfake: waiting for ack of %s: %w", deliveryID, err)
	}
	return ack, nil
}

// WaitEventAck waits for the first successful acknowledgement of any delivery of
// an event.
func (s *Server) WaitEventAck(ctx context.Context, eventID string) (Ack, error) {
	var ack Ack
	err := s.waitFor(ctx, func() bool {
		var ok bool
		ack, ok = s.eventAck[eventID]
		return ok
	})
	if err != nil {
		return Ack{}, fmt.Errorf("slackfake: waiting for ack of event %s: %w", eventID, err)
	}
	return ack, nil
}

// WaitAllAcked waits until every event delivered so far has been acknowledged.
// Events lost to an Outage and never redelivered do not count.
func (s *Server) WaitAllAcked(ctx context.Context) error {
	err := s.waitFor(ctx, func() bool { return s.outstanding == 0 })
	if err != nil {
		return fmt.Errorf("slackfake: waiting for all events to be acked: %w", err)
	}
	return nil
}

// recordAckLocked records an acknowledgement of delivery id.
func (s *Server) recordAckLocked(ack Ack, ok bool) {
	if d, found := s.byDelivery[ack.DeliveryID]; found {
		ack.EventID = d.EventID
		if !d.Sent.IsZero() {
			ack.Latency = ack.Received.Sub(d.Sent)
		}
		if ok {
			d.Acked = true
			d.rec.acked = true
			s.updateOutstandingLocked(d.rec)
			if _, seen := s.eventAck[d.EventID]; !seen {
				s.eventAck[d.EventID] = ack
			}
		}
	}
	if _, seen := s.ackOf[ack.DeliveryID]; !seen {
		s.ackOf[ack.DeliveryID] = ack
	}
	s.acks = append(s.acks, ack)
	s.notifyLocked()
}

// messageEvent renders the message event Slack sends for a new message.
func (s *Server) messageEvent(ch *channel, m *message) map[string]any {
	ev := s.messageObject(ch, m)
	for _, k := range []string{"reply_count", "reply_users_count", "reply_users", "latest_reply", "is_locked", "subscribed", "reactions"} {
		delete(ev, k)
	}
	if m.ThreadTS == "" {
		delete(ev, "thread_ts")
	}
	ev["channel"] = ch.info.ID
	ev["event_ts"] = m.TS
	ev["channel_type"] = channelType(ch)
	return ev
}

// changedEvent renders message_changed; prev is the message before the edit.
func (s *Server) changedEvent(ch *channel, m *message, prev map[string]any) map[string]any {
	ts := s.nextTSLocked()
	return map[string]any{
		"type": "message", "subtype": "message_changed", "hidden": true,
		"message": s.messageObject(ch, m), "previous_message": prev,
		"channel": ch.info.ID, "ts": ts, "event_ts": ts, "channel_type": channelType(ch),
	}
}

// deletedEvent renders message_deleted; prev is the message as it was.
func (s *Server) deletedEvent(ch *channel, m *message, prev map[string]any) map[string]any {
	ts := s.nextTSLocked()
	return map[string]any{
		"type": "message", "subtype": "message_deleted", "hidden": true, "deleted_ts": m.TS,
		"previous_message": prev,
		"channel":          ch.info.ID, "ts": ts, "event_ts": ts, "channel_type": channelType(ch),
	}
}

// echoLocked delivers an event about the bot's own message, unless WithoutBotEcho.
func (s *Server) echoLocked(ch *channel, m *message, ev map[string]any) {
	if s.cfg.botEcho {
		s.emitLocked(ev, ch.info.ID, m.TS)
	}
}

// userPostLocked stores a message a user typed.
func (s *Server) userPostLocked(channel, user, text, threadTS string) (*channel, *message) {
	ch := s.channelLocked(channel)
	s.userLocked(user)
	ch.members[user] = true
	m := &message{Message: Message{User: user, Text: text, ThreadTS: threadTS}, clientMsgID: randomID()}
	s.addLocked(ch, m)
	return ch, m
}

// Mention has user mention the bot in channel (in the thread threadTS, or at the top
// level when ""), prefixing text with <@bot> unless it mentions the bot already. The
// message is stored and delivered twice, as Slack does: as an app_mention event and
// as a message event, with different event ids and the same channel and ts. It
// returns the message's ts.
func (s *Server) Mention(channel, user, text, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	tag := "<@" + s.cfg.botUserID + ">"
	if !strings.Contains(text, tag) {
		text = tag + " " + text
	}
	ch, m := s.userPostLocked(channel, user, text, threadTS)
	mention := map[string]any{
		"type": "app_mention", "user": user, "text": m.Text, "ts": m.TS,
		"client_msg_id": m.clientMsgID, "team": s.cfg.teamID, "channel": ch.info.ID, "event_ts": m.TS,
	}
	if m.ThreadTS != "" {
		mention["thread_ts"] = m.ThreadTS
	}
	msg := s.messageEvent(ch, m)
	if s.cfg.messageFirst {
		s.emitLocked(msg, ch.info.ID, m.TS)
		s.emitLocked(mention, ch.info.ID, m.TS)
	} else {
		s.emitLocked(mention, ch.info.ID, m.TS)
		s.emitLocked(msg, ch.info.ID, m.TS)
	}
	return m.TS
}

// UserMessage has user post text in channel (in the thread threadTS, or at the top
// level when "") without mentioning the bot: one message event. It returns the ts.
func (s *Server) UserMessage(channel, user, text, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m := s.userPostLocked(channel, user, text, threadTS)
	s.emitLocked(s.messageEvent(ch, m), ch.info.ID, m.TS)
	return m.TS
}

// BotMessage has another bot (botID, B…) post text: a bot_message event.
func (s *Server) BotMessage(channel, botID, text, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channelLocked(channel)
	m := &message{Message: Message{SubType: "bot_message", BotID: botID, Username: "bot " + botID, Text: text, ThreadTS: threadTS}}
	s.addLocked(ch, m)
	s.emitLocked(s.messageEvent(ch, m), ch.info.ID, m.TS)
	return m.TS
}

// EditMessage has a message's author change its text: a message_changed event.
func (s *Server) EditMessage(channel, ts, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m := s.messageLocked(channel, ts)
	if m == nil {
		s.t.Errorf("slackfake: EditMessage(%q, %q): no such message", channel, ts)
		return
	}
	prev := s.messageObject(ch, m)
	m.Text = text
	m.editor = m.User
	m.EditedTS = s.nextTSLocked()
	s.emitLocked(s.changedEvent(ch, m, prev), ch.info.ID, m.TS)
}

// DeleteMessage deletes a message: a message_deleted event.
func (s *Server) DeleteMessage(channel, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m := s.messageLocked(channel, ts)
	if m == nil {
		s.t.Errorf("slackfake: DeleteMessage(%q, %q): no such message", channel, ts)
		return
	}
	prev := s.messageObject(ch, m)
	m.deleted = true
	s.emitLocked(s.deletedEvent(ch, m, prev), ch.info.ID, m.TS)
}

// ChannelJoin has user join channel: a channel_join message. It returns its ts.
func (s *Server) ChannelJoin(channel, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channelLocked(channel)
	s.userLocked(user)
	ch.members[user] = true
	m := &message{Message: Message{SubType: "channel_join", User: user, Text: "<@" + user + "> has joined the channel"}}
	s.addLocked(ch, m)
	s.emitLocked(s.messageEvent(ch, m), ch.info.ID, m.TS)
	return m.TS
}

// LeaveChannel has user leave channel: chat.postEphemeral to them there then
// fails with user_not_in_channel, as on Slack. Nothing is posted.
func (s *Server) LeaveChannel(channel, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.channelLocked(channel).members, user)
}

// DMChannel returns the im channel between the bot and user, creating it.
func (s *Server) DMChannel(user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(user)
	return s.dmChannelLocked(user).info.ID
}

// DM has user write to the bot directly: a message event with channel_type im. It
// returns the im channel and the message's ts; replies in that DM thread are
// UserMessage(channel, user, text, ts).
func (s *Server) DM(user, text string) (channel, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(user)
	ch := s.dmChannelLocked(user)
	_, m := s.userPostLocked(ch.info.ID, user, text, "")
	s.emitLocked(s.messageEvent(ch, m), ch.info.ID, m.TS)
	return ch.info.ID, m.TS
}

// ShareFile has user share a file in channel (in the thread threadTS, or at the top
// level): a file_share message whose files[0].url_private the fake serves to the bot
// token. It returns the message's ts and the file.
func (s *Server) ShareFile(channel, user, threadTS, name, mimetype string, content []byte) (string, File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channelLocked(channel)
	s.userLocked(user)
	ch.members[user] = true
	f := s.newFileLocked("", user, name, "", mimetype, slices.Clone(content))
	m := &message{Message: Message{SubType: "file_share", User: user, ThreadTS: threadTS, Files: []File{f.File}}, clientMsgID: randomID()}
	s.addLocked(ch, m)
	s.emitLocked(s.messageEvent(ch, m), ch.info.ID, m.TS)
	return m.TS, f.File
}
