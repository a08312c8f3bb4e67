package slackfake_test

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// rawConn is a Socket Mode connection read frame by frame.
type rawConn struct {
	t  *testing.T
	ws *websocket.Conn
}

// envelope is the part of an events_api envelope these tests read.
type envelope struct {
	EnvelopeID   string `json:"envelope_id"`
	RetryAttempt int    `json:"retry_attempt"`
	RetryReason  string `json:"retry_reason"`
	Payload      struct {
		EventID string `json:"event_id"`
	} `json:"payload"`
}

// dialRaw opens a Socket Mode connection and reads its hello.
func dialRaw(t *testing.T, srv *slackfake.Server) *rawConn {
	t.Helper()
	_, url, err := newAPI(srv).StartSocketModeContext(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &rawConn{t: t, ws: ws}
	var hello map[string]any
	c.read(&hello)
	if hello["type"] != "hello" {
		t.Fatalf("first frame %v, want hello", hello)
	}
	return c
}

func (c *rawConn) read(v any) {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(waitTimeout))
	if err := c.ws.ReadJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) next() envelope {
	c.t.Helper()
	var env envelope
	c.read(&env)
	return env
}

func (c *rawConn) ack(env envelope) {
	c.t.Helper()
	if err := c.ws.WriteJSON(map[string]string{"envelope_id": env.EnvelopeID}); err != nil {
		c.t.Fatal(err)
	}
}

// quiet checks that nothing more arrives on c for a moment (a negative
// check: the events routed elsewhere were all read by then).
func (c *rawConn) quiet() {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var v map[string]any
	if err := c.ws.ReadJSON(&v); err == nil {
		c.t.Fatalf("unexpected frame %v", v)
	}
}

func TestDefaultSendsEveryEventToTheNewestConnection(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithPingInterval(0))
	old := dialRaw(t, srv)
	newest := dialRaw(t, srv)
	for range 4 {
		srv.UserMessage("C0DEV", "U0ALICE", "hi", "")
	}
	for range 4 {
		newest.ack(newest.next())
	}
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	old.quiet()
}

func TestSpreadEventsRoundRobin(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithPingInterval(0), slackfake.SpreadEvents())
	conns := []*rawConn{dialRaw(t, srv), dialRaw(t, srv), dialRaw(t, srv)}
	var ids []string
	for range 6 {
		ts := srv.UserMessage("C0DEV", "U0ALICE", "hi", "")
		ids = append(ids, srv.DeliveriesFor("C0DEV", ts)[0].EventID)
	}
	// Event i went to connection i mod 3, in order.
	for i, id := range ids {
		c := conns[i%3]
		env := c.next()
		if env.Payload.EventID != id {
			t.Errorf("event %d: connection %d got %s, want %s", i, i%3+1, env.Payload.EventID, id)
		}
		c.ack(env)
	}
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	perConn := map[int]int{}
	for _, d := range srv.Deliveries() {
		perConn[d.Conn]++
	}
	if perConn[1] != 2 || perConn[2] != 2 || perConn[3] != 2 {
		t.Errorf("deliveries per connection %v, want 2 on each of 1, 2, 3", perConn)
	}
	for _, c := range conns {
		c.quiet()
	}
}

func TestSpreadEventsRedeliversWhatAClosedConnectionDidNotAck(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithPingInterval(0), slackfake.SpreadEvents())
	a := dialRaw(t, srv)
	b := dialRaw(t, srv)

	srv.UserMessage("C0DEV", "U0ALICE", "acked on a", "")
	srv.UserMessage("C0DEV", "U0ALICE", "acked on b", "")
	a.ack(a.next())
	b.ack(b.next())
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	// The next event goes to a, which dies without acknowledging it.
	ts := srv.UserMessage("C0DEV", "U0ALICE", "lost with a", "")
	first := a.next()
	a.ws.Close()

	again := b.next()
	if again.Payload.EventID != first.Payload.EventID || again.EnvelopeID == first.EnvelopeID {
		t.Fatalf("redelivery event %s envelope %s, want event %s in a new envelope (was %s)",
			again.Payload.EventID, again.EnvelopeID, first.Payload.EventID, first.EnvelopeID)
	}
	if again.RetryAttempt != 1 || again.RetryReason != "timeout" {
		t.Errorf("redelivery retry_attempt=%d retry_reason=%q, want 1, timeout", again.RetryAttempt, again.RetryReason)
	}
	b.ack(again)
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	ds := srv.DeliveriesFor("C0DEV", ts)
	if len(ds) != 2 || ds[0].Conn != 1 || ds[0].Acked || ds[1].Conn != 2 || !ds[1].Acked {
		t.Errorf("deliveries %+v, want one unacked on connection 1, then one acked on 2", ds)
	}
	// The events a acknowledged are not delivered again.
	b.quiet()
	if n := len(srv.Deliveries()); n != 4 {
		t.Errorf("%d deliveries, want 4", n)
	}
}

func TestSpreadEventsWaitForAConnectionWhenNoneIsOpen(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithPingInterval(0), slackfake.SpreadEvents())
	a := dialRaw(t, srv)
	srv.UserMessage("C0DEV", "U0ALICE", "x", "")
	env := a.next()
	a.ws.Close()
	// a is gone and no other connection is open: the retry waits for one.
	b := dialRaw(t, srv)
	again := b.next()
	if again.Payload.EventID != env.Payload.EventID || again.RetryAttempt != 1 {
		t.Fatalf("got event %s attempt %d, want %s attempt 1", again.Payload.EventID, again.RetryAttempt, env.Payload.EventID)
	}
	b.ack(again)
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
}
