package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/threadsmith/threadsmith/chat"
)

// Platform is the adapter's platform name, the Platform of its ThreadRefs.
const Platform = "discord"

// MaxMessageChars is Discord's limit on a message's content.
const MaxMessageChars = 2000

// Intents are the gateway intents the bot identifies with: only what it reads
// (reactions are written, never read, so their events are not asked for).
// MESSAGE_CONTENT is privileged: it must be enabled for the bot in the
// developer portal.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsMessageContent |
	discordgo.IntentsDirectMessages

var (
	_ chat.Adapter         = (*Adapter)(nil)
	_ chat.Editor          = (*Adapter)(nil)
	_ chat.Reactor         = (*Adapter)(nil)
	_ chat.Uploader        = (*Adapter)(nil)
	_ chat.StatusSetter    = (*Adapter)(nil)
	_ chat.Whisperer       = (*Adapter)(nil)
	_ chat.OncePoster      = (*Adapter)(nil)
	_ chat.HistoryReader   = (*Adapter)(nil)
	_ chat.Downloader      = (*Adapter)(nil)
	_ chat.MarkupConverter = (*Adapter)(nil)
	_ chat.Actioner        = (*Adapter)(nil)
)

// Options are the adapter's dependencies besides its configuration.
type Options struct {
	// Logger receives the adapter's logs; nil discards them.
	Logger *slog.Logger
	// Transport carries every HTTP request (REST, gateway lookup, attachment
	// downloads) after discord.api_url has been applied; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Commands are the bridge's chat commands (bridge.Commands), registered
	// as slash commands after /code.
	Commands []chat.CommandSpec
}

// Adapter is a connection to Discord for one bot. Its chat methods may be
// called from any goroutine, before, during and after Run (they use REST
// only); Run may run once at a time.
type Adapter struct {
	cfg    Config
	log    *slog.Logger
	s      *discordgo.Session
	client *http.Client

	commands []command // the slash commands: /code, then Options.Commands

	running atomic.Bool
	// connected is set by READY and RESUMED, cleared by a disconnect and
	// when Run ends (ready.go).
	connected atomic.Bool

	mu        sync.Mutex
	appID     string // discord.application_id, else READY's
	botID     string // READY's user
	botName   string
	openCtx   context.Context // bounds the gateway lookup and dial of an Open in progress
	dialStops []func() bool   // undo the bindings of connections dialled during that Open

	held heldInteractions

	kinds *recent[channelKind] // channel id -> its kind, for channels discordgo's state does not know
	names sync.Map             // user id -> display name, for PlainText
	// requesters holds, per conversation channel, the last person whose
	// input the handler accepted there: the one user the bot's messages in
	// it may ping.
	requesters *recent[string]

	// receiveRetry are the waits between attempts of a Receive that failed.
	receiveRetry []time.Duration
	// openTimeout bounds one connection attempt (lookup, dial, HELLO, READY).
	openTimeout time.Duration
}

// New returns an adapter for the bot configured in cfg. It does not connect:
// Run does.
func New(cfg Config, opts Options) (*Adapter, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("discord: the bot token (discord.token) is empty")
	}
	base, err := url.Parse(cfg.baseURL())
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("discord: discord.api_url must be an http(s) URL such as %s", DefaultAPIURL)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	next := opts.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	token := strings.TrimSpace(cfg.Token)
	if !strings.HasPrefix(token, "Bot ") {
		token = "Bot " + token
	}
	s, err := discordgo.New(token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	a := &Adapter{
		cfg:          cfg,
		log:          logger.With("platform", Platform),
		s:            s,
		appID:        cfg.ApplicationID,
		commands:     slashCommands(opts.Commands),
		receiveRetry: []time.Duration{250 * time.Millisecond, time.Second, 3 * time.Second},
		openTimeout:  time.Minute,
		kinds:        newRecent[channelKind](conversationMemory),
		requesters:   newRecent[string](conversationMemory),
	}
	tr := &transport{next: next, gatewayCtx: a.gatewayCtx}
	if cfg.baseURL() != DefaultAPIURL {
		tr.base = base
	}
	a.client = &http.Client{Transport: tr}
	s.Client = a.client
	s.Dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 30 * time.Second,
		NetDialContext:   a.dialGateway,
	}
	s.Identify.Intents = Intents
	if cfg.sharded() {
		// IDENTIFY carries [shard_id, shard_count]: Discord then sends this
		// connection only its shard's guilds (and DMs to shard 0).
		s.ShardID, s.ShardCount = cfg.ShardID, cfg.ShardCount
	}
	// Handlers run on discordgo's reading goroutine, in gateway order; they
	// only queue (see run.go).
	s.SyncEvents = true
	// 429s reach the caller (the outbox) as *chat.RateLimitError.
	s.ShouldRetryOnRateLimit = false
	// Run reconnects, so that it can stop when its context ends.
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	s.State.TrackPresences = false
	s.State.TrackVoice = false
	s.State.TrackEmojis = false
	s.State.TrackStickers = false
	return a, nil
}

// Platform implements chat.Adapter.
func (a *Adapter) Platform() string { return Platform }

// Limits implements chat.Adapter.
func (a *Adapter) Limits() chat.Limits {
	return chat.Limits{MaxMessageChars: MaxMessageChars, Measure: Measure, MaxChoices: maxSelectOptions}
}

// BotUserID is the bot's user id, known once the gateway said READY.
func (a *Adapter) BotUserID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID
}

// ApplicationID is discord.application_id, or READY's application id.
func (a *Adapter) ApplicationID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.appID
}

// setIdentity records READY's bot user and application.
func (a *Adapter) setIdentity(r *discordgo.Ready) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.User != nil {
		a.botID = r.User.ID
		a.botName = r.User.Username
	}
	if r.Application != nil && r.Application.ID != "" {
		if a.appID != "" && a.appID != r.Application.ID {
			a.log.Warn("discord.application_id differs from the application the token belongs to; using the token's",
				"configured", a.appID, "ready", r.Application.ID)
		}
		a.appID = r.Application.ID
	}
}

// LinksExpire implements chat.ExpiringDownloader: attachment links are
// signed and expire after about a day.
func (a *Adapter) LinksExpire() bool { return true }

// Download implements chat.Downloader: a plain GET of an attachment URL (no
// credentials are sent; Discord's CDN URLs are signed).
func (a *Adapter) Download(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("discord: download: not an http(s) URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("discord: download: %w", err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord: download from %s: %w", u.Host, unwrapURLError(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("discord: download from %s: HTTP %s", u.Host, resp.Status)
	}
	return resp.Body, nil
}
