package discordfake

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Server is a running fake Discord. All methods are safe for concurrent use.
type Server struct {
	t    testing.TB
	cfg  config
	log  *slog.Logger
	http *httptest.Server
	// gatewayAddr, when set, is the host:port gateway URLs point at
	// instead of the fake's own (a proxy in front of it).
	gatewayAddr atomic.Pointer[string]
	mux         *http.ServeMux
	wsUp        websocket.Upgrader
	wg          sync.WaitGroup // gateway connection goroutines
	closer      sync.Once

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change
	closed  bool
	lastID  uint64

	users        map[string]user
	guilds       map[string]*guildState
	guildOrder   []string
	channels     map[string]*channelState
	dms          map[string]string // user id -> DM channel id
	noDMs        map[string]bool   // users who take no DMs from the bot (RefuseDMs)
	threads      []string
	messages     map[string]*messageState
	interactions map[string]*interactionState
	interOrder   []string
	byToken      map[string]*interactionState
	commands     map[string][]*commandState // scope ("" global, else guild id)
	overwrites   map[string]int             // bulk overwrites per scope
	attachments  map[string]*Attachment     // attachment id
	typing       []Typing
	requests     []Request
	rateLimited  int
	buckets      map[string]*bucket
	global       *bucket
	notices      []Notice
	lose         map[string]int // routes whose next response is never written
	cdnKey       [32]byte       // signs attachment links
	loseIf       []func(Request) bool

	routeList      []string // REST route patterns, in registration order
	specViolations []string // why the OpenAPI description rejected requests

	sessions   map[string]*gwSession
	conns      map[*gwConn]struct{}
	connSeq    int
	received   []GatewayPayload
	sent       []GatewayPayload
	identifies []Identify
	readies    int
	resumed    int
}

type user struct {
	ID       string
	Username string
	Bot      bool
}

type guildState struct {
	Guild
	members map[string]Member
	roles   map[string]Role
}

type channelState struct {
	Channel
	messages []*messageState
	lastID   string
}

type messageState struct {
	Message
	nonce     string // with enforce_nonce: the bot's key for this message
	deleted   bool
	mentions  []string
	reactions []Reaction
	// interaction metadata for responses
	interactionName string
	interactionUser string
}

type interactionState struct {
	Interaction
	originalID  string
	followupIDs []string
}

type commandState struct {
	Command
	def json.RawMessage // the definition as sent, to tell changes from repeats
}

// New starts a fake Discord on 127.0.0.1 and stops it when the test ends.
// Close discordgo sessions before that (t.Cleanup runs last-registered first,
// so a session closed in a cleanup registered after New is fine).
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	logger := cfg.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		t:            t,
		cfg:          cfg,
		log:          logger.With("component", "discordfake"),
		changed:      make(chan struct{}),
		users:        map[string]user{},
		guilds:       map[string]*guildState{},
		channels:     map[string]*channelState{},
		dms:          map[string]string{},
		noDMs:        map[string]bool{},
		messages:     map[string]*messageState{},
		interactions: map[string]*interactionState{},
		byToken:      map[string]*interactionState{},
		commands:     map[string][]*commandState{},
		overwrites:   map[string]int{},
		attachments:  map[string]*Attachment{},
		buckets:      map[string]*bucket{},
		lose:         map[string]int{},
		sessions:     map[string]*gwSession{},
		conns:        map[*gwConn]struct{}{},
	}
	_, _ = rand.Read(s.cdnKey[:])
	s.wsUp = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	s.users[cfg.botID] = user{ID: cfg.botID, Username: cfg.botName, Bot: true}
	now := cfg.clock.Now()
	for _, g := range cfg.guilds {
		s.addGuild(g, now)
	}
	if cfg.rateLimits != nil && cfg.rateLimits.Global.enabled() {
		s.global = &bucket{limit: cfg.rateLimits.Global, hash: "global"}
	}
	s.mux = http.NewServeMux()
	s.routes()
	s.http = httptest.NewServer(s.mux)
	t.Cleanup(s.Close)
	return s
}

func (s *Server) addGuild(g Guild, now time.Time) {
	gs := &guildState{Guild: g, members: map[string]Member{}, roles: map[string]Role{}}
	if !slices.ContainsFunc(g.Roles, func(r Role) bool { return r.ID == g.ID }) {
		gs.Roles = append([]Role{{ID: g.ID, Name: "@everyone", Permissions: DefaultPermissions}}, g.Roles...)
	}
	for _, r := range gs.Roles {
		gs.roles[r.ID] = r
	}
	for _, m := range g.Members {
		gs.members[m.UserID] = m
		s.users[m.UserID] = user{ID: m.UserID, Username: m.Username, Bot: m.Bot}
	}
	if _, ok := gs.members[s.cfg.botID]; !ok {
		bot := Member{UserID: s.cfg.botID, Username: s.cfg.botName, Bot: true}
		gs.members[bot.UserID] = bot
		gs.Members = append(slices.Clone(gs.Members), bot)
	}
	gs.Channels = slices.Clone(g.Channels)
	for i := range gs.Channels {
		c := &gs.Channels[i]
		c.GuildID = g.ID
		if c.CreatedAt.IsZero() {
			c.CreatedAt = now
		}
		s.channels[c.ID] = &channelState{Channel: *c}
	}
	s.guilds[g.ID] = gs
	s.guildOrder = append(s.guildOrder, g.ID)
}

// Close stops the fake: gateway connections are cut, the HTTP server closed.
// It runs by itself at the end of the test.
func (s *Server) Close() {
	s.closer.Do(func() {
		s.mu.Lock()
		s.closed = true
		for c := range s.conns {
			c.kill()
		}
		s.notifyLocked()
		s.mu.Unlock()
		s.http.CloseClientConnections()
		s.http.Close()
		s.wg.Wait()
	})
}

// URL is the base that replaces "https://discord.com/" (discordgo's
// EndpointDiscord), with the trailing slash: http://127.0.0.1:port/.
func (s *Server) URL() string { return s.http.URL + "/" }

// GatewayURL is what GET /api/v9/gateway answers: ws://127.0.0.1:port/gateway.
func (s *Server) GatewayURL() string {
	if addr := s.gatewayAddr.Load(); addr != nil && *addr != "" {
		return "ws://" + *addr + "/gateway"
	}
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + "/gateway"
}

// SetGatewayAddr makes the gateway URLs the fake hands out (GET /gateway,
// READY's resume_gateway_url) point at addr (host:port: a proxy in front of
// the fake) from now on; "" restores the fake's own address.
func (s *Server) SetGatewayAddr(addr string) { s.gatewayAddr.Store(&addr) }

// Token is the bot token the fake accepts.
func (s *Server) Token() string { return s.cfg.token }

// ApplicationID is the application's id.
func (s *Server) ApplicationID() string { return s.cfg.appID }

// BotUserID is the bot user's id.
func (s *Server) BotUserID() string { return s.cfg.botID }

// BotUserName is the bot user's name.
func (s *Server) BotUserName() string { return s.cfg.botName }

// notifyLocked wakes every waiter. Caller holds s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor blocks until cond returns true or ctx ends. cond runs without the
// fake's lock held, so it may call any accessor; it is re-evaluated after every
// change of the fake's state.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitForReady waits until READY has been sent n times in total.
func (s *Server) WaitForReady(ctx context.Context, n int) error {
	if err := s.WaitFor(ctx, func() bool { return s.Readies() >= n }); err != nil {
		return fmt.Errorf("discordfake: waiting for READY #%d (got %d): %w", n, s.Readies(), err)
	}
	return nil
}

// WaitForResumed waits until RESUMED has been sent n times in total.
func (s *Server) WaitForResumed(ctx context.Context, n int) error {
	if err := s.WaitFor(ctx, func() bool { return s.Resumes() >= n }); err != nil {
		return fmt.Errorf("discordfake: waiting for RESUMED #%d (got %d): %w", n, s.Resumes(), err)
	}
	return nil
}

// WaitForMessage waits for a message in channelID that satisfies match (nil:
// any message) and returns it as it stands.
func (s *Server) WaitForMessage(ctx context.Context, channelID string, match func(Message) bool) (Message, error) {
	var found Message
	err := s.WaitFor(ctx, func() bool {
		for _, m := range s.Messages(channelID) {
			if match == nil || match(m) {
				found = m
				return true
			}
		}
		return false
	})
	if err != nil {
		return Message{}, fmt.Errorf("discordfake: waiting for a message in channel %s (have %d): %w",
			channelID, len(s.Messages(channelID)), err)
	}
	return found, nil
}

// WaitForThread waits for a thread in parentID (empty: any parent) and returns
// the first one opened.
func (s *Server) WaitForThread(ctx context.Context, parentID string) (Channel, error) {
	var found Channel
	err := s.WaitFor(ctx, func() bool {
		for _, th := range s.Threads() {
			if parentID == "" || th.ParentID == parentID {
				found = th
				return true
			}
		}
		return false
	})
	if err != nil {
		return Channel{}, fmt.Errorf("discordfake: waiting for a thread in %q: %w", parentID, err)
	}
	return found, nil
}

// WaitForInteractionResponse waits until the interaction got an accepted callback.
func (s *Server) WaitForInteractionResponse(ctx context.Context, interactionID string) (Interaction, error) {
	var found Interaction
	err := s.WaitFor(ctx, func() bool {
		in, ok := s.Interaction(interactionID)
		found = in
		return ok && in.Responded
	})
	if err != nil {
		return found, fmt.Errorf("discordfake: waiting for a response to interaction %s: %w", interactionID, err)
	}
	return found, nil
}

// WaitForReaction waits until userID (empty: the bot) reacted with emoji on the message.
func (s *Server) WaitForReaction(ctx context.Context, channelID, messageID, emoji, userID string) error {
	if userID == "" {
		userID = s.cfg.botID
	}
	err := s.WaitFor(ctx, func() bool {
		return slices.ContainsFunc(s.Reactions(channelID, messageID), func(r Reaction) bool {
			return r.Emoji == emoji && r.UserID == userID
		})
	})
	if err != nil {
		return fmt.Errorf("discordfake: waiting for reaction %s by %s on %s (have %v): %w",
			emoji, userID, messageID, s.Reactions(channelID, messageID), err)
	}
	return nil
}

// WaitForCommandOverwrite waits until the application has bulk-overwritten the
// commands of guildID (empty: global) n times in total, and returns them.
func (s *Server) WaitForCommandOverwrite(ctx context.Context, guildID string, n int) ([]Command, error) {
	err := s.WaitFor(ctx, func() bool { return s.CommandOverwrites(guildID) >= n })
	if err != nil {
		return nil, fmt.Errorf("discordfake: waiting for command overwrite #%d of %q: %w", n, guildID, err)
	}
	return s.Commands(guildID), nil
}

// WaitForRequest waits for a recorded REST request that satisfies match.
func (s *Server) WaitForRequest(ctx context.Context, match func(Request) bool) (Request, error) {
	var found Request
	err := s.WaitFor(ctx, func() bool {
		for _, r := range s.Requests() {
			if match(r) {
				found = r
				return true
			}
		}
		return false
	})
	if err != nil {
		return Request{}, fmt.Errorf("discordfake: waiting for a request: %w", err)
	}
	return found, nil
}

// WaitForGatewayPayload waits for a payload received from a client that
// satisfies match.
func (s *Server) WaitForGatewayPayload(ctx context.Context, match func(GatewayPayload) bool) (GatewayPayload, error) {
	var found GatewayPayload
	err := s.WaitFor(ctx, func() bool {
		for _, p := range s.GatewayReceived() {
			if match(p) {
				found = p
				return true
			}
		}
		return false
	})
	if err != nil {
		return GatewayPayload{}, fmt.Errorf("discordfake: waiting for a gateway payload: %w", err)
	}
	return found, nil
}
