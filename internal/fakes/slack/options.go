package slackfake

import (
	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	"time"
)

// config is what Options set; New fills in the defaults.
type config struct {
	agentSessions      bool     // the app is declared as an agent
	botEvents          []string // nil: subscribed to every event
	teamID, teamName   string
	botUserID, botName string
	botID, appID       string
	botToken, appToken string

	pingInterval time.Duration
	redelivery   time.Duration
	maxRetries   int

	rateLimits *RateLimits
	now        func() time.Time

	assistant    bool
	botEcho      bool
	messageFirst bool
	spread       bool

	scopes []string // nil: every scope

	noStreaming string // chat.startStream's refusal; "": streaming offered

	noHomeTab bool // the app's Home tab is off: views.publish answers not_enabled
}

func defaultConfig() config {
	return config{
		teamID:       "T0FAKE0001",
		teamName:     "fake",
		botUserID:    "U0FAKEBOT1",
		botName:      "threadsmith",
		botID:        "B0FAKEBOT1",
		appID:        "A0FAKEAPP1",
		botToken:     "xoxb-0000000001-0000000002-fakebottoken",
		appToken:     "xapp-1-A0FAKEAPP1-0000000003-fakeapptoken",
		pingInterval: DefaultPingInterval,
		maxRetries:   3,
		now:          time.Now,
		botEcho:      true,
	}
}

// DefaultPingInterval is how often the fake pings a Socket Mode connection unless
// WithPingInterval says otherwise: far below slack-go's 30 s dead-connection timeout,
// and below any OptionPingInterval a test is likely to give the client.
const DefaultPingInterval = 100 * time.Millisecond

// Option configures a Server.
type Option func(*config)

// WithTeam sets the workspace id and name.
func WithTeam(id, name string) Option {
	return func(c *config) { c.teamID, c.teamName = id, name }
}

// WithBotUser sets the bot's user id (auth.test user_id, the <@U…> of mentions) and name.
func WithBotUser(userID, name string) Option {
	return func(c *config) { c.botUserID, c.botName = userID, name }
}

// WithBotID sets the bot id (B…) that the bot's messages carry as bot_id.
func WithBotID(botID string) Option {
	return func(c *config) { c.botID = botID }
}

// WithAppID sets the app id (A…) of hello frames, api_app_id and bot profiles.
func WithAppID(appID string) Option {
	return func(c *config) { c.appID = appID }
}

// WithTokens sets the bot token (xoxb-…) and app-level token (xapp-…) the fake
// accepts; any other token is invalid_auth.
func WithTokens(botToken, appToken string) Option {
	return func(c *config) { c.botToken, c.appToken = botToken, appToken }
}

// WithPingInterval sets how often websocket pings are sent on each Socket Mode
// connection. Zero or less sends none, which makes slack-go reconnect after its
// ping timeout.
func WithPingInterval(d time.Duration) Option {
	return func(c *config) { c.pingInterval = d }
}

// WithRedelivery makes the fake deliver an event again, with retry_attempt+1 and
// retry_reason "timeout" over Socket Mode ("http_timeout" or "http_error" over HTTP),
// when no delivery of it was acknowledged within timeout; at most three retries, as
// Slack does (Slack waits 3 s). Off by default.
func WithRedelivery(timeout time.Duration) Option {
	return func(c *config) { c.redelivery = timeout }
}

// WithRateLimits turns on rate-limit enforcement; see RateLimits.
func WithRateLimits(l RateLimits) Option {
	return func(c *config) { c.rateLimits = &l }
}

// WithClock sets the clock read for rate limiting and message timestamps.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithAssistantThreads lets assistant.threads.setStatus succeed. Without it the
// method answers not_allowed, as it does for an app that is not an AI assistant.
func WithAssistantThreads() Option {
	return func(c *config) { c.assistant = true }
}

// WithScopes grants the bot token exactly these scopes (a manifest's
// oauth_config.scopes.bot): a method that needs another answers
// missing_scope, as Slack does, and users.info leaves out emails without
// users:read.email. Without it every scope is granted.
func WithScopes(scopes ...string) Option {
	return func(c *config) { c.scopes = append([]string{}, scopes...) }
}

// WithoutBotEcho stops the events Slack sends about the bot's own messages (posts,
// edits, deletions, uploads).
func WithoutBotEcho() Option {
	return func(c *config) { c.botEcho = false }
}

// WithMessageBeforeMention makes Mention deliver the message event before the
// app_mention event. Slack does not order the two; the default sends app_mention first.
func WithMessageBeforeMention() Option {
	return func(c *config) { c.messageFirst = true }
}

// ManualClock is a clock that moves only when told, for WithClock.
type ManualClock = clock.Manual

// NewManualClock returns a clock that reads start until advanced.
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }

// SpreadEvents makes the fake spread Socket Mode events over its open
// connections, as Slack does for an app with several (up to 10): each event goes
// to the next open connection in turn (round robin), and an event sent on a
// connection that closes before acknowledging it is delivered again at once, with
// retry_attempt+1 and retry_reason "timeout", to another open connection (or the
// next one opened). Without it every event goes to the newest connection.
func SpreadEvents() Option {
	return func(c *config) { c.spread = true }
}
