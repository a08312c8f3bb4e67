package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// writeTimeout bounds every frame the fake writes, so a client that stopped reading
// cannot wedge the fake.
const writeTimeout = 5 * time.Second

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// wsConn is one Socket Mode connection. Its writer goroutine alone writes data
// frames, in queue order; pings go through WriteControl, which gorilla allows
// concurrently.
type wsConn struct {
	ws    *websocket.Conn
	info  Connection // guarded by Server.mu
	queue []outFrame // guarded by Server.mu
	// inflight are the deliveries written to this connection and not yet
	// acknowledged (SpreadEvents only; guarded by Server.mu).
	inflight  []*delivery
	wake      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// outFrame is a queued data frame; d is set for event envelopes.
type outFrame struct {
	data  []byte
	d     *delivery
	hello bool
}

// Connections describes every Socket Mode connection so far, oldest first.
func (s *Server) Connections() []Connection {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Connection, len(s.conns))
	for i, c := range s.conns {
		out[i] = c.info
	}
	return out
}

// WaitConnections waits until n Socket Mode connections in all have been sent their
// hello frame.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.hellos >= n })
	if err != nil {
		return fmt.Errorf("slackfake: waiting for %d socket connections: %w", n, err)
	}
	return nil
}

// WaitPongs waits until the connections together have answered n pings.
func (s *Server) WaitPongs(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool {
		total := 0
		for _, c := range s.conns {
			total += c.info.Pongs
		}
		return total >= n
	})
	if err != nil {
		return fmt.Errorf("slackfake: waiting for %d pongs: %w", n, err)
	}
	return nil
}

// Disconnect sends a disconnect frame with reason ("refresh_requested",
// "link_disabled", "warning", …) on every open connection, as Slack does before
// recycling a connection. Those connections get no further events; slack-go answers
// by opening a new one (apps.connections.open again).
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if c.info.Closed || c.info.Draining {
			continue
		}
		c.info.Draining = true
		frame, _ := json.Marshal(map[string]any{
			"type": "disconnect", "reason": reason,
			"debug_info": map[string]any{"host": fmt.Sprintf("applink-fake-%d", c.info.ID)},
		})
		s.enqueueLocked(c, outFrame{data: frame})
	}
	s.notifyLocked()
}

// DropSocket closes every open connection's TCP connection abruptly, without a close
// frame, as a network failure would.
func (s *Server) DropSocket() {
	s.mu.Lock()
	var open []*wsConn
	for _, c := range s.conns {
		if !c.info.Closed {
			open = append(open, c)
		}
	}
	s.mu.Unlock()
	for _, c := range open {
		s.closeConn(c) // gorilla's Close drops the TCP connection without a close frame
	}
}

// SetSocketAddr makes apps.connections.open hand out Socket Mode URLs on
// addr (host:port: a proxy in front of the fake) from now on; "" restores
// the fake's own address.
func (s *Server) SetSocketAddr(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.socketAddr = addr
}

// Outage plays Slack's side of a network outage: it drops every Socket Mode
// connection, answers apps.connections.open with service_unavailable, and loses the
// events raised meanwhile (Deliveries lists them with Lost set), as Slack does once
// its retries run out. The messages themselves are stored, so conversations.replies
// still finds them: this is how a test makes an adapter catch up after a reconnect.
// Calling end ends the outage; slack-go reconnects at its next backoff (100 ms,
// doubling).
func (s *Server) Outage() (end func()) {
	s.mu.Lock()
	s.outage = true
	s.mu.Unlock()
	s.DropSocket()
	return func() {
		s.mu.Lock()
		s.outage = false
		s.notifyLocked()
		s.mu.Unlock()
	}
}

func (s *Server) handleSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	ok := s.tickets[ticket] && !s.closed && !s.outage
	delete(s.tickets, ticket)
	s.mu.Unlock()
	if !ok {
		http.Error(w, "invalid or used ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	c := &wsConn{ws: ws, wake: make(chan struct{}, 1), done: make(chan struct{})}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	open := 1
	for _, o := range s.conns {
		if !o.info.Closed {
			open++
		}
	}
	c.info = Connection{ID: len(s.conns) + 1, Opened: time.Now()}
	s.conns = append(s.conns, c)
	hello, _ := json.Marshal(map[string]any{
		"type":            "hello",
		"num_connections": open,
		"debug_info": map[string]any{
			"host": fmt.Sprintf("applink-fake-%d", c.info.ID), "build_number": 1,
			"approximate_connection_time": 18060,
		},
		"connection_info": map[string]any{"app_id": s.cfg.appID},
	})
	s.enqueueLocked(c, outFrame{data: hello, hello: true})
	pending := s.pending
	s.pending = nil
	for _, d := range pending {
		s.enqueueLocked(c, outFrame{data: d.frame, d: d})
	}
	s.wg.Add(3)
	s.mu.Unlock()

	go s.writeLoop(c)
	go s.readLoop(c)
	go s.pingLoop(c)
}

func (s *Server) enqueueLocked(c *wsConn, f outFrame) {
	c.queue = append(c.queue, f)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// routeLocked sends d on the newest connection that is not draining (with
// SpreadEvents, on the next one in turn), or keeps it for the next connection.
func (s *Server) routeLocked(d *delivery) {
	if s.cfg.spread {
		var open []*wsConn
		for _, c := range s.conns {
			if !c.info.Closed && !c.info.Draining {
				open = append(open, c)
			}
		}
		if len(open) > 0 {
			c := open[s.rr%len(open)]
			s.rr++
			s.enqueueLocked(c, outFrame{data: d.frame, d: d})
			return
		}
	}
	for i := len(s.conns) - 1; i >= 0; i-- {
		if c := s.conns[i]; !c.info.Closed && !c.info.Draining {
			s.enqueueLocked(c, outFrame{data: d.frame, d: d})
			return
		}
	}
	s.pending = append(s.pending, d)
}

func (s *Server) writeLoop(c *wsConn) {
	defer s.wg.Done()
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		s.mu.Lock()
		frames := c.queue
		c.queue = nil
		s.mu.Unlock()
		for i, f := range frames {
			if f.d != nil {
				// Stamped frame by frame: ack latency starts when this frame goes out,
				// not when its batch was taken from the queue.
				s.mu.Lock()
				f.d.Sent = time.Now()
				f.d.Conn = c.info.ID
				// In flight before it is written: a client that reads it and
				// closes at once must find it redelivered (closeConn), not
				// lost between the write and this bookkeeping.
				if s.cfg.spread && !f.d.rec.acked {
					if len(c.inflight) >= 64 {
						c.inflight = slices.DeleteFunc(c.inflight, func(d *delivery) bool { return d.rec.acked })
					}
					c.inflight = append(c.inflight, f.d)
				}
				s.mu.Unlock()
			}
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, f.data); err != nil {
				if f.d != nil {
					s.mu.Lock()
					f.d.Conn = 0
					c.inflight = slices.DeleteFunc(c.inflight, func(d *delivery) bool { return d == f.d })
					s.mu.Unlock()
				}
				s.requeue(c, frames[i:])
				s.closeConn(c)
				return
			}
			s.mu.Lock()
			if f.hello {
				s.hellos++
				s.notifyLocked()
			}
			if f.d != nil {
				s.armRedeliveryLocked(f.d, "timeout")
			}
			s.mu.Unlock()
		}
	}
}

// requeue puts back the frames a failing connection could not write, ahead of its
// queue, for closeConn to hand on; if c is closed already, it hands them on itself.
func (s *Server) requeue(c *wsConn, frames []outFrame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !c.info.Closed {
		c.queue = append(frames, c.queue...)
		return
	}
	s.rerouteLocked(frames)
}

// rerouteLocked sends the unacknowledged deliveries among frames to another
// connection, or keeps them for the next.
func (s *Server) rerouteLocked(frames []outFrame) {
	for _, f := range frames {
		// latest: closeConn may have redelivered it already, as in flight.
		if f.d != nil && !f.d.rec.acked && f.d.rec.latest == f.d && !s.closed {
			f.d.Sent = time.Time{}
			s.routeLocked(f.d)
		}
	}
}

func (s *Server) readLoop(c *wsConn) {
	defer s.wg.Done()
	c.ws.SetPongHandler(func(string) error {
		s.mu.Lock()
		c.info.Pongs++
		s.notifyLocked()
		s.mu.Unlock()
		return nil
	})
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			s.closeConn(c)
			return
		}
		if typ != websocket.TextMessage {
			continue
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(data, &ack); err != nil || ack.EnvelopeID == "" {
			continue // Slack ignores frames it cannot read
		}
		s.mu.Lock()
		s.recordAckLocked(Ack{DeliveryID: ack.EnvelopeID, Payload: ack.Payload, Received: time.Now()}, true)
		s.mu.Unlock()
	}
}

func (s *Server) pingLoop(c *wsConn) {
	defer s.wg.Done()
	if s.cfg.pingInterval <= 0 {
		return
	}
	tick := time.NewTicker(s.cfg.pingInterval)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-tick.C:
		case <-c.done:
			return
		}
		// Counted before writing, so a pong can never outrun its ping's count.
		s.mu.Lock()
		c.info.PingsSent++
		s.mu.Unlock()
		if err := c.ws.WriteControl(websocket.PingMessage, fmt.Appendf(nil, "ping-%d", n), time.Now().Add(writeTimeout)); err != nil {
			s.closeConn(c)
			return
		}
	}
}

// closeConn closes c once and hands its unsent deliveries on.
func (s *Server) closeConn(c *wsConn) {
	c.closeOnce.Do(func() {
		s.mu.Lock()
		c.info.Closed = true
		close(c.done)
		leftover := c.queue
		c.queue = nil
		// SpreadEvents: what this connection was sent and did not acknowledge
		// goes to another one, as a retry, in the order it was sent.
		inflight := c.inflight
		c.inflight = nil
		for _, d := range inflight {
			if !d.rec.acked && d.rec.latest == d && !s.closed {
				s.deliverLocked(d.rec, "timeout")
			}
		}
		s.rerouteLocked(leftover)
		s.notifyLocked()
		s.mu.Unlock()
		_ = c.ws.Close()
	})
}
