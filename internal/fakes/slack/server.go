package slackfake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake Slack workspace on 127.0.0.1. All its methods are safe for
// concurrent use.
type Server struct {
	t   testing.TB
	cfg config
	srv *httptest.Server

	// ctx is cancelled by Close; background work (HTTP event delivery) runs under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	changed chan struct{} // closed and replaced whenever recorded state changes
	seq     int           // for generated ids
	lastTS  int64         // unix micros of the last ts handed out

	users    map[string]*User
	channels map[string]*channel
	dms      map[string]string // user id -> im channel id
	files    map[string]*storedFile
	uploads  []*Upload
	upKeys   map[string]*Upload // upload URL key -> upload

	calls       []Call
	rateLimited int
	buckets     map[string]*bucket
	injected    map[string][]injection
	ephemerals  []Ephemeral
	notices     []Notice
	streamStops int
	statuses    []Status
	// agentStatuses are the accepted agents.sessions.setStatus calls.
	agentStatuses []AgentStatus
	agentSessions map[string]*AgentSession   // by channel/thread_ts
	homes         map[string]json.RawMessage // the Home tab views published, by user
	// assistantStatuses are the threads' assistant statuses as last set.
	assistantStatuses map[string]*assistantStatus
	// groupHandles maps user group handles to their ids (AddUserGroup).
	groupHandles map[string]string
	// lose are the methods whose next response is never written.
	lose      map[string]int
	downloads []Download

	events      map[string]*eventRecord
	deliveries  []*delivery
	byDelivery  map[string]*delivery
	acks        []Ack
	ackOf       map[string]Ack // delivery id -> its first ack
	eventAck    map[string]Ack // event id -> its first successful ack
	outstanding int
	timers      map[*time.Timer]struct{}

	outage bool
	// socketAddr, when set, is the host:port the Socket Mode URLs point
	// at instead of the fake's own (a proxy in front of it).
	socketAddr string
	tickets    map[string]bool
	conns      []*wsConn // every connection ever opened, oldest first
	hellos     int
	pending    []*delivery // Socket Mode deliveries waiting for a connection
	rr         int         // SpreadEvents: the count of events routed, for round robin

	http      *HTTPEvents
	httpQueue []*delivery
	httpWake  chan struct{}
	httpStart sync.Once
}

// New starts a fake Slack on 127.0.0.1 and stops it at t.Cleanup.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		t:          t,
		cfg:        cfg,
		ctx:        ctx,
		cancel:     cancel,
		changed:    make(chan struct{}),
		users:      map[string]*User{},
		channels:   map[string]*channel{},
		dms:        map[string]string{},
		files:      map[string]*storedFile{},
		upKeys:     map[string]*Upload{},
		buckets:    map[string]*bucket{},
		injected:   map[string][]injection{},
		lose:       map[string]int{},
		events:     map[string]*eventRecord{},
		byDelivery: map[string]*delivery{},
		ackOf:      map[string]Ack{},
		eventAck:   map[string]Ack{},
		timers:     map[*time.Timer]struct{}{},
		tickets:    map[string]bool{},
		httpWake:   make(chan struct{}, 1),

		groupHandles: map[string]string{},

		agentSessions:     map[string]*AgentSession{},
		homes:             map[string]json.RawMessage{},
		assistantStatuses: map[string]*assistantStatus{},
	}
	s.users[cfg.botUserID] = &User{ID: cfg.botUserID, Name: cfg.botName, RealName: cfg.botName, IsBot: true}

	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.handleAPI)
	mux.HandleFunc("/socket", s.handleSocket)
	mux.HandleFunc("/upload/v1/", s.handleUpload)
	mux.HandleFunc("/files-pri/", s.handleFile)
	mux.HandleFunc("/{$}", s.handleSignIn)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, its connections and timers. It is called at t.Cleanup and
// may be called earlier; later calls do nothing.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for tm := range s.timers {
		tm.Stop()
	}
	clear(s.timers)
	conns := append([]*wsConn(nil), s.conns...)
	s.notifyLocked()
	s.mu.Unlock()

	s.cancel()
	for _, c := range conns {
		s.closeConn(c)
	}
	s.srv.Close()
	s.wg.Wait()
}

// URL is the server's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the Web API base with its trailing slash, for slack.OptionAPIURL.
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// BotToken is the xoxb- token the fake accepts for Web API calls.
func (s *Server) BotToken() string { return s.cfg.botToken }

// AppToken is the xapp- token the fake accepts for apps.connections.open.
func (s *Server) AppToken() string { return s.cfg.appToken }

// BotUserID is the bot's user id, as auth.test reports it.
func (s *Server) BotUserID() string { return s.cfg.botUserID }

// BotID is the bot id (B…) the bot's messages carry.
func (s *Server) BotID() string { return s.cfg.botID }

// TeamID is the workspace id.
func (s *Server) TeamID() string { return s.cfg.teamID }

// AppID is the app id.
func (s *Server) AppID() string { return s.cfg.appID }

// AddUser registers a workspace member for users.info. Scenario helpers register
// unknown user ids themselves, named after the id.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := u
	s.users[u.ID] = &cp
}

// AddChannel registers a conversation. Scenario helpers create unknown channel ids
// themselves (C… public, G… private, D… im); Web API calls naming a channel the fake
// does not know answer channel_not_found, as Slack does.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.channels[c.ID]; ok {
		ch.info = c
		return
	}
	s.channels[c.ID] = newChannel(c, s.cfg.now())
}

// notifyLocked wakes every waiter; callers hold s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond, evaluated under s.mu, holds or ctx ends.
func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return fmt.Errorf("slackfake: server closed")
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// newIDLocked returns a fresh Slack-style id with the given prefix (C, F, …).
func (s *Server) newIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s0%08X", prefix, s.seq)
}

// nextTSLocked returns a message ts from the clock, strictly greater than every ts
// handed out before, so each post is unique even when the clock stands still.
func (s *Server) nextTSLocked() string {
	us := s.cfg.now().UnixMicro()
	if us <= s.lastTS {
		us = s.lastTS + 1
	}
	s.lastTS = us
	return formatTS(us)
}

func formatTS(us int64) string {
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

// parseTS turns "1700000000.000100" (or "1700000000", "1700000000.1") into unix
// micros.
func parseTS(ts string) (int64, bool) {
	sec, frac, _ := strings.Cut(ts, ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || secs < 0 {
		return 0, false
	}
	var micros int64
	if frac != "" {
		if len(frac) > 6 {
			frac = frac[:6]
		}
		frac += strings.Repeat("0", 6-len(frac))
		if micros, err = strconv.ParseInt(frac, 10, 64); err != nil || micros < 0 {
			return 0, false
		}
	}
	return secs*1e6 + micros, true
}

// randomID returns a UUID-shaped random id, like Slack's envelope ids.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// handleSignIn is the page Slack's file servers redirect to without a valid token.
func (s *Server) handleSignIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Sign in | Slack</title></head><body>Sign in to your workspace</body></html>")
}
