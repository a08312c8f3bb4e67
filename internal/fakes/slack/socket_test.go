package slackfake_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

func TestSocketModeHelloMentionAndAck(t *testing.T) {
	srv := slackfake.New(t)
	c := startClient(t, srv)

	hello := c.next(t, socketmode.EventTypeHello)
	if got := hello.Request.NumConnections; got != 1 {
		t.Errorf("hello num_connections = %d, want 1", got)
	}
	if got := hello.Request.ConnectionInfo.AppID; got != srv.AppID() {
		t.Errorf("hello connection_info.app_id = %q, want %q", got, srv.AppID())
	}
	if hello.Request.DebugInfo.Host == "" || hello.Request.DebugInfo.ApproximateConnectionTime == 0 {
		t.Errorf("hello debug_info = %+v, want host and approximate_connection_time", hello.Request.DebugInfo)
	}

	ts := srv.Mention("C0DEV", "U0ALICE", "fix the build", "")

	var mention *slackevents.AppMentionEvent
	var message *slackevents.MessageEvent
	var ids []string
	var envelopes []string
	for range 2 {
		ev, req := c.nextEvent(t)
		if ev.Type != slackevents.CallbackEvent || ev.TeamID != srv.TeamID() || ev.APIAppID != srv.AppID() {
			t.Errorf("outer event type=%q team=%q app=%q, want event_callback %s %s", ev.Type, ev.TeamID, ev.APIAppID, srv.TeamID(), srv.AppID())
		}
		cb := ev.Data.(*slackevents.EventsAPICallbackEvent)
		if len(cb.Authorizations) != 1 || cb.Authorizations[0].UserID != srv.BotUserID() || !cb.Authorizations[0].IsBot {
			t.Errorf("authorizations = %+v, want the bot user", cb.Authorizations)
		}
		if cb.EventTime == 0 {
			t.Errorf("event_time is 0")
		}
		if req.RetryAttempt != 0 || req.RetryReason != "" || req.AcceptsResponsePayload {
			t.Errorf("envelope retry_attempt=%d retry_reason=%q accepts_response_payload=%v, want 0, \"\", false", req.RetryAttempt, req.RetryReason, req.AcceptsResponsePayload)
		}
		ids = append(ids, cb.EventID)
		envelopes = append(envelopes, req.EnvelopeID)
		switch inner := ev.InnerEvent.Data.(type) {
		case *slackevents.AppMentionEvent:
			mention = inner
		case *slackevents.MessageEvent:
			message = inner
		default:
			t.Fatalf("inner event %T, want app_mention and message", inner)
		}
		if err := c.sm.Ack(*req); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if mention == nil || message == nil {
		t.Fatalf("got mention=%v message=%v, want both", mention != nil, message != nil)
	}
	wantText := "<@" + srv.BotUserID() + "> fix the build"
	if mention.Channel != "C0DEV" || mention.TimeStamp != ts || mention.User != "U0ALICE" || mention.Text != wantText {
		t.Errorf("app_mention = %+v, want channel C0DEV ts %s user U0ALICE text %q", mention, ts, wantText)
	}
	if message.Channel != "C0DEV" || message.TimeStamp != ts || message.Text != wantText || message.ChannelType != "channel" {
		t.Errorf("message = channel %q ts %q text %q type %q, want C0DEV %s %q channel", message.Channel, message.TimeStamp, message.Text, message.ChannelType, ts, wantText)
	}
	if message.ThreadTimeStamp != "" || mention.ThreadTimeStamp != "" {
		t.Errorf("top-level mention carries thread_ts %q/%q, want none", mention.ThreadTimeStamp, message.ThreadTimeStamp)
	}
	if ids[0] == ids[1] {
		t.Errorf("both events have event_id %s, want different ids", ids[0])
	}

	ctx := testContext(t)
	for _, env := range envelopes {
		ack, err := srv.WaitAck(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if ack.Latency <= 0 || ack.Latency > waitTimeout {
			t.Errorf("ack latency of %s = %v, want positive and below %v", env, ack.Latency, waitTimeout)
		}
		if !slices.Contains(ids, ack.EventID) {
			t.Errorf("ack of %s names event %q, want one of %v", env, ack.EventID, ids)
		}
	}
	if got := srv.DeliveriesFor("C0DEV", ts); len(got) != 2 || !got[0].Acked || !got[1].Acked {
		t.Errorf("deliveries for the mention = %+v, want 2, both acked", got)
	}
	if got := srv.Messages("C0DEV", ts); len(got) != 1 || got[0].Text != wantText || got[0].User != "U0ALICE" {
		t.Errorf("stored thread = %+v, want the mention", got)
	}
}

func TestMentionInThreadCarriesThreadTS(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithMessageBeforeMention())
	c := startClient(t, srv)
	root := srv.UserMessage("C0DEV", "U0ALICE", "the build is red", "")
	c.nextEvent(t)
	ts := srv.Mention("C0DEV", "U0BOB", "<@"+srv.BotUserID()+"> can you look?", root)

	ev, _ := c.nextEvent(t)
	msg, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		t.Fatalf("first event %T, want message (WithMessageBeforeMention)", ev.InnerEvent.Data)
	}
	ev, _ = c.nextEvent(t)
	mention, ok := ev.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok {
		t.Fatalf("second event %T, want app_mention", ev.InnerEvent.Data)
	}
	if msg.ThreadTimeStamp != root || mention.ThreadTimeStamp != root || mention.TimeStamp != ts {
		t.Errorf("thread_ts message=%q mention=%q ts=%q, want %s, %s, %s", msg.ThreadTimeStamp, mention.ThreadTimeStamp, mention.TimeStamp, root, root, ts)
	}
	if want := "<@" + srv.BotUserID() + "> can you look?"; mention.Text != want {
		t.Errorf("mention text %q, want %q (no second tag)", mention.Text, want)
	}
}

func TestDisconnectFrameMakesSlackGoReconnect(t *testing.T) {
	srv := slackfake.New(t)
	c := startClient(t, srv)
	ctx := testContext(t)
	if err := srv.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c.next(t, socketmode.EventTypeHello)

	srv.Disconnect("refresh_requested")
	if err := srv.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.CallsTo("apps.connections.open")); got != 2 {
		t.Errorf("apps.connections.open calls = %d, want 2", got)
	}
	conns := srv.Connections()
	if len(conns) != 2 || !conns[0].Draining {
		t.Fatalf("connections = %+v, want the first draining and a second", conns)
	}

	// Events go to the new connection and are acknowledged there.
	c.next(t, socketmode.EventTypeHello)
	ts := srv.UserMessage("C0DEV", "U0ALICE", "after refresh", "")
	ev, req := c.nextEvent(t)
	if m, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent); !ok || m.TimeStamp != ts {
		t.Fatalf("event after reconnect = %#v, want message %s", ev.InnerEvent.Data, ts)
	}
	if err := c.sm.Ack(*req); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitAck(ctx, req.EnvelopeID); err != nil {
		t.Fatal(err)
	}
}

func TestDroppedSocketReconnectsAndQueuedEventsArrive(t *testing.T) {
	srv := slackfake.New(t)
	ctx := testContext(t)
	// An event raised before any client connects waits for the connection.
	early := srv.UserMessage("C0DEV", "U0ALICE", "before connect", "")
	c := startClient(t, srv)
	ev, req := c.nextEvent(t)
	if m := ev.InnerEvent.Data.(*slackevents.MessageEvent); m.TimeStamp != early {
		t.Fatalf("first event ts %s, want the queued %s", m.TimeStamp, early)
	}
	_ = c.sm.Ack(*req)

	srv.DropSocket()
	if err := srv.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if conns := srv.Connections(); !conns[0].Closed {
		t.Errorf("first connection %+v, want closed", conns[0])
	}
	later := srv.UserMessage("C0DEV", "U0ALICE", "after drop", "")
	ev, _ = c.nextEvent(t)
	if m := ev.InnerEvent.Data.(*slackevents.MessageEvent); m.TimeStamp != later {
		t.Fatalf("event after drop ts %s, want %s", m.TimeStamp, later)
	}
}

func TestPingsKeepSlackGoConnected(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithPingInterval(20*time.Millisecond))
	startClient(t, srv, socketmode.OptionPingInterval(200*time.Millisecond))
	ctx := testContext(t)
	if err := srv.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// 40 answered pings take 800 ms: four of slack-go's ping timeouts.
	if err := srv.WaitPongs(ctx, 40); err != nil {
		t.Fatal(err)
	}
	conns := srv.Connections()
	if len(conns) != 1 || conns[0].Closed {
		t.Fatalf("connections = %+v, want the first one still open", conns)
	}
	if conns[0].PingsSent < 40 {
		t.Errorf("pings sent = %d, want at least the 40 answered", conns[0].PingsSent)
	}
	if got := len(srv.CallsTo("apps.connections.open")); got != 1 {
		t.Errorf("apps.connections.open calls = %d, want 1 (no reconnect)", got)
	}
}

func TestWithoutPingsSlackGoReconnects(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithPingInterval(0))
	startClient(t, srv, socketmode.OptionPingInterval(100*time.Millisecond))
	if err := srv.WaitConnections(testContext(t), 2); err != nil {
		t.Fatal(err)
	}
	if conns := srv.Connections(); conns[0].PingsSent != 0 {
		t.Errorf("pings sent = %d, want 0", conns[0].PingsSent)
	}
}

func TestRedeliveryAfterTimeout(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithRedelivery(50*time.Millisecond))
	c := startClient(t, srv)
	ts := srv.UserMessage("C0DEV", "U0ALICE", "hello?", "")

	ev, first := c.nextEvent(t) // not acknowledged
	id := eventID(t, ev)
	ev, second := c.nextEvent(t)
	if got := eventID(t, ev); got != id {
		t.Fatalf("redelivered event_id %s, want %s", got, id)
	}
	if second.RetryAttempt != 1 || second.RetryReason != "timeout" || second.EnvelopeID == first.EnvelopeID {
		t.Fatalf("redelivery retry_attempt=%d reason=%q envelope=%s, want 1, timeout, not %s", second.RetryAttempt, second.RetryReason, second.EnvelopeID, first.EnvelopeID)
	}
	if err := c.sm.Ack(*second); err != nil {
		t.Fatal(err)
	}
	ack, err := srv.WaitEventAck(testContext(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if ack.DeliveryID != second.EnvelopeID {
		t.Errorf("event acked by %s, want %s", ack.DeliveryID, second.EnvelopeID)
	}
	if got := srv.DeliveriesFor("C0DEV", ts); len(got) < 2 || got[0].Acked || !got[1].Acked {
		t.Errorf("deliveries = %+v, want the first unacked and the second acked", got)
	}
}

func TestRedeliveryStopsAfterThreeRetries(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithRedelivery(10*time.Millisecond))
	c := startClient(t, srv)
	srv.UserMessage("C0DEV", "U0ALICE", "nobody acks me", "")
	for want := range 4 {
		_, req := c.nextEvent(t)
		if req.RetryAttempt != want {
			t.Fatalf("delivery %d has retry_attempt %d", want, req.RetryAttempt)
		}
	}
	// Let the fourth delivery's 10 ms timer run out: two more answered pings take
	// at least one 100 ms ping interval.
	pongs := 0
	for _, conn := range srv.Connections() {
		pongs += conn.Pongs
	}
	if err := srv.WaitPongs(testContext(t), pongs+2); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.Deliveries()); got != 4 {
		t.Errorf("deliveries = %d, want 4 (one plus three retries)", got)
	}
}

func TestManualRedeliver(t *testing.T) {
	srv := slackfake.New(t)
	c := startClient(t, srv)
	srv.UserMessage("C0DEV", "U0ALICE", "again", "")
	ev, req := c.nextEvent(t)
	_ = c.sm.Ack(*req)
	srv.Redeliver(eventID(t, ev))
	ev2, req2 := c.nextEvent(t)
	if eventID(t, ev2) != eventID(t, ev) || req2.RetryAttempt != 1 || req2.RetryReason != "timeout" {
		t.Errorf("redelivery event %s attempt %d reason %q, want %s 1 timeout", eventID(t, ev2), req2.RetryAttempt, req2.RetryReason, eventID(t, ev))
	}
}

// TestRawFrames checks the wire shapes byte-level clients depend on.
func TestRawFrames(t *testing.T) {
	srv := slackfake.New(t)
	api := newAPI(srv)
	_, url, err := api.StartSocketModeContext(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(waitTimeout))

	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil {
		t.Fatal(err)
	}
	if hello["type"] != "hello" || hello["num_connections"] != float64(1) {
		t.Errorf("hello = %v, want type hello, num_connections 1", hello)
	}
	for _, k := range []string{"debug_info", "connection_info"} {
		if _, ok := hello[k].(map[string]any); !ok {
			t.Errorf("hello lacks object %q: %v", k, hello)
		}
	}

	srv.UserMessage("C0DEV", "U0ALICE", "raw", "")
	var env map[string]json.RawMessage
	if err := ws.ReadJSON(&env); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"envelope_id", "payload", "type", "accepts_response_payload", "retry_attempt", "retry_reason"} {
		if _, ok := env[k]; !ok {
			t.Errorf("envelope lacks %q: %s", k, env)
		}
	}
	var payload map[string]any
	if err := json.Unmarshal(env["payload"], &payload); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"team_id", "api_app_id", "event", "event_id", "event_time", "authorizations", "type"} {
		if _, ok := payload[k]; !ok {
			t.Errorf("payload lacks %q: %v", k, payload)
		}
	}
	var envID string
	_ = json.Unmarshal(env["envelope_id"], &envID)
	if err := ws.WriteJSON(map[string]any{"envelope_id": envID, "payload": map[string]string{"text": "ok"}}); err != nil {
		t.Fatal(err)
	}
	ack, err := srv.WaitAck(testContext(t), envID)
	if err != nil {
		t.Fatal(err)
	}
	if string(ack.Payload) != `{"text":"ok"}` {
		t.Errorf("ack payload %s, want {\"text\":\"ok\"}", ack.Payload)
	}

	// The URL is single-use, like Slack's tickets.
	_, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("second dial of a used URL: err=%v resp=%v, want 401", err, resp)
	}
}

func TestOutageLosesEventsButKeepsMessages(t *testing.T) {
	srv := slackfake.New(t)
	c := startClient(t, srv)
	ctx := testContext(t)
	root := srv.Mention("C0DEV", "U0ALICE", "start", "")
	for range 2 {
		_, req := c.nextEvent(t)
		_ = c.sm.Ack(*req)
	}
	if err := srv.WaitAllAcked(ctx); err != nil { // acks are written asynchronously
		t.Fatal(err)
	}

	end := srv.Outage()
	calls, err := srv.WaitCalls(ctx, "apps.connections.open", 2)
	if err != nil {
		t.Fatal(err)
	}
	if calls[1].Error != "service_unavailable" {
		t.Errorf("apps.connections.open during the outage answered %q, want service_unavailable", calls[1].Error)
	}
	gap := srv.UserMessage("C0DEV", "U0BOB", "typed during the gap", root)
	end()
	if err := srv.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	after := srv.UserMessage("C0DEV", "U0BOB", "after the gap", root)
	ev, req := c.nextEvent(t)
	if m := ev.InnerEvent.Data.(*slackevents.MessageEvent); m.TimeStamp != after {
		t.Errorf("first event after the outage is %s, want %s (the gap's event lost)", m.TimeStamp, after)
	}
	_ = c.sm.Ack(*req)
	if d := srv.DeliveriesFor("C0DEV", gap); len(d) != 1 || !d[0].Lost || !d[0].Sent.IsZero() {
		t.Errorf("deliveries of the gap message = %+v, want one, lost, never sent", d)
	}
	if got := srv.Messages("C0DEV", root); len(got) != 3 || got[1].TS != gap {
		t.Errorf("thread = %+v, want the gap message stored for conversations.replies", got)
	}
	if err := srv.WaitAllAcked(ctx); err != nil {
		t.Error(err)
	}
}
