package discordfake

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opPresenceUpdate = 3
	opVoiceState     = 4
	opResume         = 6
	opReconnect      = 7
	opRequestMembers = 8
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// validIntents is every intent bit Discord defines today.
const validIntents = 1<<26 - 1

// gwSession is a gateway session: what READY created and RESUME continues.
// Guarded by Server.mu.
type gwSession struct {
	id       string
	intents  int
	compress bool
	shard    [2]int
	seq      int64
	log      []gwFrame // every dispatch, for replay on RESUME
	conn     *gwConn   // nil while disconnected
}

type gwFrame struct {
	seq     int64
	typ     string
	payload []byte
}

// gwConn is one websocket connection. session is guarded by Server.mu; the
// outbound queue by its own mutex so that enqueueing never blocks on the network.
type gwConn struct {
	srv *Server
	n   int
	ws  *websocket.Conn

	session     *gwSession // Server.mu
	compress    bool       // Server.mu
	clientClose int        // close code the client sent; reader only

	mu      sync.Mutex
	queue   []outFrame
	closing bool // a close frame is queued: send nothing after it
	signal  chan struct{}
	done    chan struct{}
	killed  sync.Once
}

type outFrame struct {
	msgType   int
	data      []byte
	closeCode int
	closeText string
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	if r.URL.Query().Get("encoding") == "etf" {
		// Only JSON is spoken here; discordgo asks for encoding=json.
		http.Error(w, "etf is not supported by the fake", http.StatusBadRequest)
		return
	}
	ws, err := s.wsUp.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade answered the client already
	}
	c := &gwConn{srv: s, ws: ws, signal: make(chan struct{}, 1), done: make(chan struct{})}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.connSeq++
	c.n = s.connSeq
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.sendOpLocked(c, opHello, map[string]any{
		"heartbeat_interval": s.cfg.heartbeat.Milliseconds(),
		"_trace":             []string{"discordfake"},
	})
	s.notifyLocked()
	s.mu.Unlock()
	s.log.Debug("gateway connected", "conn", c.n, "query", r.URL.RawQuery)

	go c.writeLoop()
	c.readLoop()

	c.kill()
	close(c.done)
	s.mu.Lock()
	delete(s.conns, c)
	if sess := c.session; sess != nil && sess.conn == c {
		sess.conn = nil
		// A client that closes with 1000 or 1001 ends its session for good.
		if c.clientClose == websocket.CloseNormalClosure || c.clientClose == websocket.CloseGoingAway {
			delete(s.sessions, sess.id)
		}
	}
	s.notifyLocked()
	s.mu.Unlock()
	s.log.Debug("gateway disconnected", "conn", c.n, "client_close", c.clientClose)
}

func (c *gwConn) readLoop() {
	s := c.srv
	for {
		mt, data, err := c.ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				c.clientClose = ce.Code
			}
			return
		}
		var p struct {
			Op *int            `json:"op"`
			D  json.RawMessage `json:"d"`
			S  *int64          `json:"s"`
			T  *string         `json:"t"`
		}
		decodeErr := json.Unmarshal(data, &p)
		s.mu.Lock()
		if c.isClosing() {
			s.mu.Unlock()
			continue
		}
		if decodeErr != nil || p.Op == nil {
			s.recordReceivedLocked(c, -1, data, mt == websocket.BinaryMessage)
			s.closeConnLocked(c, 4002, "Error while decoding payload.")
			s.mu.Unlock()
			continue
		}
		s.recordReceivedLocked(c, *p.Op, p.D, false)
		switch *p.Op {
		case opHeartbeat:
			s.sendOpLocked(c, opHeartbeatACK, nil)
		case opIdentify:
			s.identifyLocked(c, p.D)
		case opResume:
			s.resumeLocked(c, p.D)
		case opPresenceUpdate, opVoiceState, opRequestMembers:
			if c.session == nil {
				s.closeConnLocked(c, 4003, "Not authenticated.")
			}
		default:
			s.closeConnLocked(c, 4001, "Unknown opcode.")
		}
		s.notifyLocked()
		s.mu.Unlock()
	}
}

func (s *Server) identifyLocked(c *gwConn, d json.RawMessage) {
	var id struct {
		Token          string            `json:"token"`
		Intents        *int              `json:"intents"`
		Properties     map[string]string `json:"properties"`
		Compress       bool              `json:"compress"`
		LargeThreshold int               `json:"large_threshold"`
		Shard          []int             `json:"shard"`
	}
	if err := json.Unmarshal(d, &id); err != nil {
		s.closeConnLocked(c, 4002, "Error while decoding payload.")
		return
	}
	rec := Identify{
		Conn:           c.n,
		TokenValid:     s.tokenValid(id.Token),
		Compress:       id.Compress,
		LargeThreshold: id.LargeThreshold,
		Shard:          id.Shard,
		Properties:     id.Properties,
	}
	if id.Intents != nil {
		rec.Intents = *id.Intents
	}
	s.identifies = append(s.identifies, rec)

	switch {
	case c.session != nil:
		s.closeConnLocked(c, 4005, "Already authenticated.")
		return
	case !rec.TokenValid:
		s.closeConnLocked(c, 4004, "Authentication failed.")
		return
	case id.Intents == nil || *id.Intents&^validIntents != 0:
		s.closeConnLocked(c, 4013, "Invalid intent(s).")
		return
	case *id.Intents&s.cfg.disabledIntents != 0:
		s.closeConnLocked(c, 4014, "Disallowed intent(s).")
		return
	}
	shard := [2]int{0, 1}
	if id.Shard != nil {
		if len(id.Shard) != 2 || id.Shard[1] < 1 || id.Shard[0] < 0 || id.Shard[0] >= id.Shard[1] {
			s.closeConnLocked(c, 4010, "Invalid shard.")
			return
		}
		shard = [2]int{id.Shard[0], id.Shard[1]}
	}
	sess := &gwSession{id: newSessionID(), intents: *id.Intents, compress: id.Compress, shard: shard, conn: c}
	s.sessions[sess.id] = sess
	c.session = sess
	c.compress = id.Compress

	var guilds []map[string]any
	for _, gid := range s.guildOrder {
		if sess.hasGuild(gid) {
			guilds = append(guilds, map[string]any{"id": gid, "unavailable": true})
		}
	}
	ready := map[string]any{
		"v":                  9,
		"user":               s.userObjLocked(s.cfg.botID),
		"guilds":             nonNil(guilds),
		"session_id":         sess.id,
		"session_type":       "normal",
		"resume_gateway_url": s.GatewayURL(),
		"application":        map[string]any{"id": s.cfg.appID, "flags": s.applicationFlags()},
		"private_channels":   []any{},
		"relationships":      []any{},
		"presences":          []any{},
		"user_settings":      map[string]any{},
		"auth":               map[string]any{},
		"_trace":             []string{"discordfake"},
	}
	if id.Shard != nil {
		ready["shard"] = shard
	}
	s.sendDispatchLocked(sess, "READY", ready)
	s.readies++
	if sess.intents&IntentGuilds != 0 {
		for _, gid := range s.guildOrder {
			if sess.hasGuild(gid) {
				s.sendDispatchLocked(sess, "GUILD_CREATE", s.guildCreateObjLocked(gid, sess))
			}
		}
	}
	s.log.Debug("gateway identified", "conn", c.n, "intents", sess.intents)
}

func (s *Server) resumeLocked(c *gwConn, d json.RawMessage) {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(d, &rs); err != nil {
		s.closeConnLocked(c, 4002, "Error while decoding payload.")
		return
	}
	if c.session != nil {
		s.closeConnLocked(c, 4005, "Already authenticated.")
		return
	}
	if !s.tokenValid(rs.Token) {
		s.closeConnLocked(c, 4004, "Authentication failed.")
		return
	}
	sess := s.sessions[rs.SessionID]
	if sess == nil || rs.Seq > sess.seq || rs.Seq < 0 {
		s.sendOpLocked(c, opInvalidSession, false)
		return
	}
	if old := sess.conn; old != nil && old != c {
		old.kill() // the zombie connection the client gave up on
	}
	sess.conn = c
	c.session = sess
	c.compress = sess.compress
	for _, f := range sess.log {
		if f.seq > rs.Seq {
			s.enqueueFrameLocked(c, f)
		}
	}
	s.sendDispatchLocked(sess, "RESUMED", map[string]any{"_trace": []string{"discordfake"}})
	s.resumed++
	s.log.Debug("gateway resumed", "conn", c.n, "from_seq", rs.Seq, "to_seq", sess.seq)
}

func (s *Server) tokenValid(tok string) bool {
	return tok != "" && strings.TrimPrefix(tok, "Bot ") == s.cfg.token
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// hasGuild reports whether the session's shard receives events of guildID;
// DMs (guildID "") go to shard 0, as on Discord.
func (sess *gwSession) hasGuild(guildID string) bool {
	if sess.shard[1] <= 1 {
		return true
	}
	if guildID == "" {
		return sess.shard[0] == 0
	}
	return int((parseSnowflake(guildID)>>22)%uint64(sess.shard[1])) == sess.shard[0]
}

// dispatchLocked sends event t to every session whose intents admit it
// (intent 0: every session) and whose shard holds guildID. build returns the
// data for one session, or nil to skip it.
func (s *Server) dispatchLocked(t string, intent int, guildID string, build func(*gwSession) any) {
	for _, sess := range s.sessions {
		if intent != 0 && sess.intents&intent == 0 {
			continue
		}
		if !sess.hasGuild(guildID) {
			continue
		}
		if d := build(sess); d != nil {
			s.sendDispatchLocked(sess, t, d)
		}
	}
}

func (s *Server) sendDispatchLocked(sess *gwSession, t string, d any) {
	sess.seq++
	payload, err := json.Marshal(map[string]any{"op": opDispatch, "d": d, "s": sess.seq, "t": t})
	if err != nil {
		s.t.Errorf("discordfake: encoding %s: %v", t, err)
		return
	}
	f := gwFrame{seq: sess.seq, typ: t, payload: payload}
	sess.log = append(sess.log, f)
	if sess.conn != nil {
		s.enqueueFrameLocked(sess.conn, f)
	}
}

func (s *Server) enqueueFrameLocked(c *gwConn, f gwFrame) {
	compressed := c.compress && s.cfg.compressThreshold > 0 &&
		(f.typ == "READY" || len(f.payload) >= s.cfg.compressThreshold)
	out := outFrame{msgType: websocket.TextMessage, data: f.payload}
	if compressed {
		var buf bytes.Buffer
		zw := zlib.NewWriter(&buf)
		zw.Write(f.payload)
		zw.Close()
		out = outFrame{msgType: websocket.BinaryMessage, data: buf.Bytes()}
	}
	if c.enqueue(out) {
		s.sent = append(s.sent, GatewayPayload{
			Conn: c.n, Op: opDispatch, Type: f.typ, Seq: f.seq, Data: dataOf(f.payload),
			Compressed: compressed, At: s.cfg.clock.Now(),
		})
	}
}

func (s *Server) sendOpLocked(c *gwConn, op int, d any) {
	payload, _ := json.Marshal(map[string]any{"op": op, "d": d, "s": nil, "t": nil})
	if c.enqueue(outFrame{msgType: websocket.TextMessage, data: payload}) {
		s.sent = append(s.sent, GatewayPayload{Conn: c.n, Op: op, Data: dataOf(payload), At: s.cfg.clock.Now()})
	}
}

// closeConnLocked queues a close frame with code after whatever is queued;
// the connection is cut once it is written.
func (s *Server) closeConnLocked(c *gwConn, code int, text string) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, outFrame{closeCode: code, closeText: text})
	c.closing = true
	c.mu.Unlock()
	c.wake()
	d, _ := json.Marshal(map[string]any{"code": code, "reason": text})
	s.sent = append(s.sent, GatewayPayload{Conn: c.n, Op: -1, Type: "CLOSE", Data: d, At: s.cfg.clock.Now()})
	s.log.Debug("gateway closing", "conn", c.n, "code", code)
}

func (s *Server) recordReceivedLocked(c *gwConn, op int, d []byte, compressed bool) {
	if op == opIdentify || op == opResume {
		var m map[string]any
		if json.Unmarshal(d, &m) == nil {
			if _, ok := m["token"]; ok {
				m["token"] = "[redacted]"
			}
			d, _ = json.Marshal(m)
		}
	}
	s.received = append(s.received, GatewayPayload{
		Conn: c.n, Op: op, Data: append(json.RawMessage(nil), d...), Compressed: compressed, At: s.cfg.clock.Now(),
	})
}

func dataOf(payload []byte) json.RawMessage {
	var p struct {
		D json.RawMessage `json:"d"`
	}
	json.Unmarshal(payload, &p)
	return p.D
}

// enqueue adds a frame unless a close frame is already queued.
func (c *gwConn) enqueue(f outFrame) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	c.wake()
	return true
}

func (c *gwConn) wake() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *gwConn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// kill cuts the TCP connection without a close frame, as a network failure would.
func (c *gwConn) kill() {
	c.killed.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.ws.UnderlyingConn().Close()
	})
}

func (c *gwConn) writeLoop() {
	defer c.srv.wg.Done()
	for {
		select {
		case <-c.signal:
		case <-c.done:
			return
		}
		c.mu.Lock()
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, f := range q {
			c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if f.closeCode != 0 {
				c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(f.closeCode, f.closeText))
				c.kill()
				return
			}
			if err := c.ws.WriteMessage(f.msgType, f.data); err != nil {
				c.kill()
				return
			}
		}
	}
}

func (s *Server) applicationFlags() int {
	const (
		presenceLimited       = 1 << 13
		guildMembersLimited   = 1 << 15
		messageContentLimited = 1 << 19
	)
	flags := 0
	if s.cfg.disabledIntents&IntentGuildPresences == 0 {
		flags |= presenceLimited
	}
	if s.cfg.disabledIntents&IntentGuildMembers == 0 {
		flags |= guildMembersLimited
	}
	if s.cfg.disabledIntents&IntentMessageContent == 0 {
		flags |= messageContentLimited
	}
	return flags
}

// DropGateway cuts every gateway connection without a close frame, as a
// network failure would. Sessions stay resumable; dispatches until the client
// resumes are kept for replay. It returns how many connections were cut.
func (s *Server) DropGateway() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		c.kill()
		n++
	}
	return n
}

// Reconnect sends op 7 RECONNECT on every identified connection; the client
// should close and resume.
func (s *Server) Reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.session != nil {
			s.sendOpLocked(c, opReconnect, nil)
		}
	}
	s.notifyLocked()
}

// InvalidateSession sends op 9 INVALID_SESSION with d=resumable on every
// identified connection and detaches it from its session, so the client may
// identify again on it. A non-resumable session is forgotten with its backlog.
func (s *Server) InvalidateSession(resumable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		sess := c.session
		if sess == nil {
			continue
		}
		s.sendOpLocked(c, opInvalidSession, resumable)
		c.session = nil
		sess.conn = nil
		if !resumable {
			delete(s.sessions, sess.id)
		}
	}
	s.notifyLocked()
}

// CloseGateway closes every connection with a close frame carrying code and
// reason. As on Discord, 4004, 4007, 4009 and codes from 4010 up also end the
// session; other codes leave it resumable.
func (s *Server) CloseGateway(code int, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if sess := c.session; sess != nil && (code == 4004 || code == 4007 || code == 4009 || code >= 4010) {
			delete(s.sessions, sess.id)
		}
		s.closeConnLocked(c, code, reason)
	}
	s.notifyLocked()
}

// RequestHeartbeat sends op 1 on every connection; clients must answer with a
// heartbeat at once.
func (s *Server) RequestHeartbeat() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.sendOpLocked(c, opHeartbeat, nil)
	}
	s.notifyLocked()
}
