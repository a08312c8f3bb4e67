// Package slack connects threadsmith to Slack through github.com/slack-go/slack:
// it implements chat.Adapter and every optional capability of package chat
// (Editor, Reactor, Uploader, StatusSetter, Whisperer, HistoryReader,
// Downloader, Actioner). It does platform I/O only; de-duplication,
// routing, access checks, commands, rendering and rate budgets belong to the
// bridge.
//
// # Input
//
// Run receives events over Socket Mode (the default; slack.app_token) or the
// HTTP Events API (slack.mode: http; requests signed with slack.signing_secret,
// served on slack.listen). Every event that may be input becomes one
// chat.Inbound, its text what the person typed (Slack's markup and escaping
// undone once, here: see plain), and is handed to Handler.Receive; the
// envelope (or HTTP request)
// is acknowledged only after Receive returned nil, so a failed Receive makes
// Slack deliver the event again. The acknowledgement waits on nothing else:
// no LLM, no git, no other thread. Events of one thread reach Receive in the
// order they arrived, one at a time; different threads proceed concurrently.
//
// A mention arrives twice (app_mention and message, different event ids, same
// channel and ts) and redeliveries repeat an event id: both reach Receive, whose
// de-duplication by event id and by (channel, ts) makes them one. Messages of
// bots (this one included), edits, deletions, joins and other subtypes are
// acknowledged and dropped here; file shares and thread broadcasts are input.
//
// After a Socket Mode reconnect (not the first connection), the adapter asks the
// handler for its active threads and delivers, through Receive, the replies
// each received since the last message seen there, so nothing typed during the
// gap is lost. Those catch-up messages have no Slack event id; their EventID is
// "replies/<channel>/<ts>".
//
// # Output
//
// Post and Edit take Markdown and send Slack mrkdwn (see Mrkdwn) into the
// thread, never broadcast to the channel, with parse=none and link_names off:
// nothing the model writes mentions anyone, however it is spelled; the one
// mention the adapter adds itself is that of chat.PostKey.Notify. Posts
// unfurl no links (unfurl_links and unfurl_media false): Slack would fetch
// the model's URLs unasked. The
// bridge splits text at 3,500 characters measured on the mrkdwn (Measure);
// the adapter truncates, with a notice, anything over chat.update's 4,000. A
// Markdown block (12,000 characters) would save the conversion, but Slack
// documents neither a parse option nor an escape for it: on the strict fake
// the model's plain @channel in one notifies, where mrkdwn text with
// parse=none does not (TestMarkdownBlockLosesToMrkdwn), so the adapter sends
// mrkdwn text only.
//
// # Buttons
//
// SetActions (chat.Actioner) turns a message into Block Kit blocks: its
// mrkdwn in verbatim section blocks (3,000 characters each) and one actions
// block ("threadsmith_actions") whose buttons carry the action's id as both
// action_id and value; a link button has a url and no value. Setting no
// actions clears the blocks. Clicks arrive as block_actions interactions:
// over Socket Mode as "interactive" envelopes, over HTTP as signed
// form-encoded requests (payload=…) on the Events API's address, any path
// (the README uses /slack/interactive); they are acknowledged at once,
// since Slack shows the person an error after 3 s and does not deliver a
// click again after a failure. A click on a command button becomes the
// command's chat.Inbound ("!stop") with EventID "click/<user>/<action_ts>":
// the same in every delivery of that click, different for the next click.
// Link buttons, other apps' blocks and other interactions are acknowledged
// and dropped. A refusal note for a click goes into the button's thread.
//
// PostOnce keeps a post that timed out but went through from showing twice:
// the key travels in the message's metadata, and a retry looks for it first. Rate limits (HTTP 429 with Retry-After, or
// ok:false "ratelimited") are returned as *chat.RateLimitError; slack-go's own
// retries stay off so that the bridge's outbox sees them.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"
	"golang.org/x/sync/singleflight"

	"github.com/threadsmith/threadsmith/chat"
)

// Platform is the name of this platform in chat.ThreadRef.
const Platform = "slack"

// MaxMessageChars is where the bridge splits long text, in characters of the
// mrkdwn sent (Measure): Slack edits at most 4,000, and a message past a few
// thousand is hard to read in a thread anyway.
const MaxMessageChars = 3500

// Defaults of Options.
const (
	DefaultUserCacheTTL = time.Hour
	// defaultConcurrency bounds the Receive calls in flight across threads, so
	// that a burst of events in many threads does not become as many
	// simultaneous database transactions.
	defaultConcurrency = 64
)

// Options are the adapter's dependencies; the zero value of each field picks a
// sensible default.
type Options struct {
	Logger *slog.Logger
	// HTTPClient carries Web API calls and file downloads.
	HTTPClient *http.Client
	// Now is the clock of the user cache; time.Now when nil.
	Now func() time.Time
	// Listener serves the HTTP Events API instead of listening on slack.listen
	// (tests, or a caller that opens the socket itself).
	Listener net.Listener
	// UserCacheTTL is how long a users.info answer is reused.
	UserCacheTTL time.Duration
	// Concurrency bounds the Receive calls in flight across threads.
	Concurrency int
}

// Adapter is the Slack side of the bridge. Create it with New; its methods are
// safe for concurrent use, and the output methods may be called whether or not
// Run is running.
type Adapter struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	http   *http.Client
	api    *slackapi.Client
	users  *userCache
	listen net.Listener
	conc   int

	idMu   sync.Mutex
	id     *identity
	idOnce singleflight.Group

	statusMu    sync.Mutex
	noStatus    map[string]bool   // channels where assistant.threads.setStatus is not allowed
	noAgent     map[string]bool   // workspaces (team ids) that refused agent sessions
	agentShown  map[string]string // thread key -> the agent session status last set
	agentWarned bool              // agents.sessions.setStatus's warning was logged
	streamMu    sync.Mutex
	streams     map[string]*liveStream // channel/ts -> the stream of a message (stream.go)
	noStream    map[string]bool        // workspaces (team ids) that refused streaming
	askers      map[string]string      // thread key -> who last wrote there
	runningMu   sync.Mutex
	running     bool

	upMu    sync.Mutex
	upFiles map[string]uploadedFiles // upload key -> the files its attempts made (UploadOnce)
	// connected says Slack can reach the bot now (ready.go).
	connected atomic.Bool
}

// identity is who the bot is, from auth.test.
type identity struct {
	UserID string // U…: mentions of the bot, its own messages
	BotID  string // B…: bot_id of its own messages
	TeamID string
}

var (
	_ chat.Adapter            = (*Adapter)(nil)
	_ chat.Editor             = (*Adapter)(nil)
	_ chat.Reactor            = (*Adapter)(nil)
	_ chat.Uploader           = (*Adapter)(nil)
	_ chat.StatusSetter       = (*Adapter)(nil)
	_ chat.TitledStatusSetter = (*Adapter)(nil)
	_ chat.Whisperer          = (*Adapter)(nil)
	_ chat.OncePoster         = (*Adapter)(nil)
	_ chat.HistoryReader      = (*Adapter)(nil)
	_ chat.Downloader         = (*Adapter)(nil)
	_ chat.Actioner           = (*Adapter)(nil)
	_ chat.Streamer           = (*Adapter)(nil)
)

// New checks cfg and builds an adapter. It
// makes no network call: Run reaches Slack.
func New(cfg Config, opts Options) (*Adapter, error) {
	if cfg.BotToken == "" {
		return nil, errors.New("slack: slack.bot_token is empty")
	}
	switch cfg.Mode {
	case ModeSocket, "":
		cfg.Mode = ModeSocket
		if cfg.AppToken == "" {
			return nil, errors.New("slack: slack.app_token is empty (required in socket mode)")
		}
	case ModeHTTP:
		if cfg.SigningSecret == "" {
			return nil, errors.New("slack: slack.signing_secret is empty (required in http mode)")
		}
		if cfg.Listen == "" && opts.Listener == nil {
			return nil, errors.New("slack: slack.listen is empty (required in http mode)")
		}
	default:
		return nil, fmt.Errorf("slack: slack.mode must be socket or http (got %q)", cfg.Mode)
	}
	a := &Adapter{
		cfg:      cfg,
		log:      opts.Logger,
		now:      opts.Now,
		http:     opts.HTTPClient,
		listen:   opts.Listener,
		conc:     opts.Concurrency,
		noStatus: map[string]bool{},
		noAgent:  map[string]bool{},
		upFiles:  map[string]uploadedFiles{},

		agentShown: map[string]string{},
		streams:    map[string]*liveStream{},
		noStream:   map[string]bool{},
		askers:     map[string]string{},
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("platform", Platform)
	if a.now == nil {
		a.now = time.Now
	}
	if a.http == nil {
		// The outbox makes several calls at once to one host: keep enough
		// idle connections to avoid a TLS handshake per call.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 16
		a.http = &http.Client{Transport: tr}
	}
	if a.conc <= 0 {
		a.conc = defaultConcurrency
	}
	ttl := opts.UserCacheTTL
	if ttl <= 0 {
		ttl = DefaultUserCacheTTL
	}
	a.api = slackapi.New(cfg.BotToken,
		slackapi.OptionAPIURL(cfg.baseURL()),
		slackapi.OptionAppLevelToken(cfg.AppToken),
		// Retries stay off (no OptionRetry): the outbox must see every 429.
		slackapi.OptionHTTPClient(retryAfterClient{a.http}),
		slackapi.OptionLog(slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)),
	)
	a.users = newUserCache(a.api, ttl, a.now)
	return a, nil
}

// Platform returns "slack".
func (a *Adapter) Platform() string { return Platform }

// Limits returns Slack's readable message size, measured on the mrkdwn sent.
func (a *Adapter) Limits() chat.Limits {
	return chat.Limits{MaxMessageChars: MaxMessageChars, Measure: Measure, MaxChoices: maxSelectOptions}
}

// Run authenticates (auth.test), then receives events until ctx ends, over
// Socket Mode or the HTTP Events API as slack.mode says. It returns nil when ctx
// ends, an error when Slack refuses the credentials or the listener fails; in
// every case only after everything it started has stopped. Run may not be called
// twice at once.
func (a *Adapter) Run(ctx context.Context, h chat.Handler) error {
	a.runningMu.Lock()
	if a.running {
		a.runningMu.Unlock()
		return errors.New("slack: Run is already running")
	}
	a.running = true
	a.runningMu.Unlock()
	defer func() {
		a.connected.Store(false)
		a.runningMu.Lock()
		a.running = false
		a.runningMu.Unlock()
		// Keep-alive connections each hold goroutines; the next call reopens one.
		a.http.CloseIdleConnections()
	}()

	id, err := a.identity(ctx)
	if err != nil {
		return err
	}
	a.log.Info("slack: authenticated", "team", id.TeamID, "bot_user", id.UserID, "mode", string(a.cfg.Mode))
	d := newDispatcher(a, h, id, a.conc)
	if a.cfg.Mode == ModeHTTP {
		err = a.runHTTP(ctx, d)
	} else {
		err = a.runSocket(ctx, d)
	}
	d.wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// identity returns the bot's identity, calling auth.test the first time (and
// again after a failure).
func (a *Adapter) identity(ctx context.Context) (identity, error) {
	a.idMu.Lock()
	id := a.id
	a.idMu.Unlock()
	if id != nil {
		return *id, nil
	}
	v, err, _ := a.idOnce.Do("auth.test", func() (any, error) {
		res, err := a.api.AuthTestContext(ctx)
		if err != nil {
			return nil, apiError("auth.test", err)
		}
		id := &identity{UserID: res.UserID, BotID: res.BotID, TeamID: res.TeamID}
		a.idMu.Lock()
		a.id = id
		a.idMu.Unlock()
		return id, nil
	})
	if err != nil {
		return identity{}, err
	}
	return *v.(*identity), nil
}
