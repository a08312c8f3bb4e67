package discordfake

import (
	"log/slog"
	"time"
)

// Identities of the default fake world. They are snowflakes older than any id
// the fake generates, so ordering by id still follows creation order.
const (
	DefaultToken         = "fake-discord-bot-token"
	DefaultApplicationID = "1000000000000000001"
	DefaultBotUserID     = "1000000000000000002"
	DefaultBotUserName   = "threadsmith"

	DefaultGuildID        = "1000000000000000010"
	DefaultChannelID      = "1000000000000000020" // #general
	DefaultOtherChannelID = "1000000000000000021" // #random
	DevRoleID             = "1000000000000000030" // role "dev"

	AliceID      = "1000000000000000040" // human member with the dev role
	BobID        = "1000000000000000041" // human member without roles
	OtherBotID   = "1000000000000000042" // another bot in the guild
	AliceName    = "alice"
	BobName      = "bob"
	OtherBotName = "helperbot"
)

// Gateway intents (https://discord.com/developers/docs/topics/gateway#gateway-intents).
const (
	IntentGuilds                 = 1 << 0
	IntentGuildMembers           = 1 << 1 // privileged
	IntentGuildPresences         = 1 << 8 // privileged
	IntentGuildMessages          = 1 << 9
	IntentGuildMessageReactions  = 1 << 10
	IntentGuildMessageTyping     = 1 << 11
	IntentDirectMessages         = 1 << 12
	IntentDirectMessageReactions = 1 << 13
	IntentDirectMessageTyping    = 1 << 14
	IntentMessageContent         = 1 << 15 // privileged

	// PrivilegedIntents are the intents an application must enable in the
	// developer portal before it may identify with them.
	PrivilegedIntents = IntentGuildMembers | IntentGuildPresences | IntentMessageContent
)

// Channel types the fake knows.
const (
	ChannelTypeGuildText    = 0
	ChannelTypeDM           = 1
	ChannelTypePublicThread = 11
)

// Message flags the fake sets or reads.
const (
	MessageFlagHasThread = 1 << 5
	MessageFlagEphemeral = 1 << 6
	MessageFlagLoading   = 1 << 7
)

// Interaction callback types.
const (
	ResponsePong                     = 1
	ResponseChannelMessageWithSource = 4
	ResponseDeferredChannelMessage   = 5
	ResponseDeferredMessageUpdate    = 6
	ResponseUpdateMessage            = 7
	ResponseAutocompleteResult       = 8
	ResponseModal                    = 9
)

// Permission bits used for default roles.
const (
	PermAddReactions          int64 = 1 << 6
	PermViewChannel           int64 = 1 << 10
	PermSendMessages          int64 = 1 << 11
	PermAttachFiles           int64 = 1 << 15
	PermReadMessageHistory    int64 = 1 << 16
	PermUseApplicationCmds    int64 = 1 << 31
	PermCreatePublicThreads   int64 = 1 << 35
	PermSendMessagesInThreads int64 = 1 << 38

	// DefaultPermissions is what @everyone and the bot get in the default guild.
	DefaultPermissions = PermAddReactions | PermViewChannel | PermSendMessages | PermAttachFiles |
		PermReadMessageHistory | PermUseApplicationCmds | PermCreatePublicThreads | PermSendMessagesInThreads
)

// Guild configures one guild of the fake world. The bot is always a member.
type Guild struct {
	ID       string
	Name     string
	OwnerID  string
	Channels []Channel // text channels; Type defaults to ChannelTypeGuildText
	Roles    []Role    // @everyone (id = guild id) is added when missing
	Members  []Member
}

// Role is a guild role.
type Role struct {
	ID          string
	Name        string
	Permissions int64
}

// Member is a guild member and the user behind it.
type Member struct {
	UserID   string
	Username string
	Bot      bool
	Roles    []string // role ids
	Nick     string
}

// DefaultGuild returns the guild New uses unless WithGuilds replaces it: two
// text channels, a "dev" role, alice (dev), bob (no roles) and another bot.
// Tests change a copy of it to shape their world.
func DefaultGuild() Guild {
	return Guild{
		ID:      DefaultGuildID,
		Name:    "fake guild",
		OwnerID: AliceID,
		Channels: []Channel{
			{ID: DefaultChannelID, Name: "general"},
			{ID: DefaultOtherChannelID, Name: "random"},
		},
		Roles: []Role{
			{ID: DefaultGuildID, Name: "@everyone", Permissions: DefaultPermissions},
			{ID: DevRoleID, Name: "dev"},
		},
		Members: []Member{
			{UserID: AliceID, Username: AliceName, Roles: []string{DevRoleID}},
			{UserID: BobID, Username: BobName},
			{UserID: OtherBotID, Username: OtherBotName, Bot: true},
		},
	}
}

// Limit is a fixed-window budget: Requests per Window. A zero Limit is no limit.
type Limit struct {
	Requests int
	Window   time.Duration
}

func (l Limit) enabled() bool { return l.Requests > 0 && l.Window > 0 }

// RateLimits are the budgets the fake enforces when WithRateLimits is given.
// Buckets are per route and major parameter (channel, guild, interaction or
// webhook), as Discord's are; a zero Limit leaves its routes unlimited.
// Discord publishes no per-route numbers (clients must read the headers):
// the budgets marked "Discord:" below are the ones it is known to use, the
// other defaults are of the same order.
type RateLimits struct {
	// Global caps all bot requests (interaction callbacks and webhook-token
	// routes excepted, as on Discord). Discord: 50 per second.
	Global Limit
	// MessageCreate is POST /channels/{id}/messages, per channel. Discord: 5 per 5 s.
	MessageCreate Limit
	// MessageEdit is PATCH /channels/{id}/messages/{id}, per channel. Discord: 5 per 5 s.
	MessageEdit Limit
	// MessageDelete is DELETE /channels/{id}/messages/{id}, per channel.
	MessageDelete Limit
	// Reactions is PUT/DELETE …/reactions/…, per channel. Discord: 1 per 250 ms.
	Reactions Limit
	// MessageRead is GET /channels/{id}/messages, …/messages/{id},
	// …/reactions/{emoji} and GET /channels/{id}, per channel.
	MessageRead Limit
	// ThreadCreate is POST /channels/{id}/messages/{id}/threads, per channel.
	ThreadCreate Limit
	// Typing is POST /channels/{id}/typing, per channel.
	Typing Limit
	// DM is POST /users/@me/channels (opening a DM).
	DM Limit
	// Members is GET /guilds/{id}/members/{id} and GET /guilds/{id}/channels,
	// per guild.
	Members Limit
	// Interaction is POST /interactions/{id}/{token}/callback, per interaction.
	Interaction Limit
	// Webhook is the interaction webhook routes (followups, @original and
	// message edits), per token. Discord: 5 per 2 s.
	Webhook Limit
	// Commands is the application command routes, per route and guild.
	Commands Limit
	// Other applies to every other route (gateway, users/@me, applications),
	// per route and major parameter.
	Other Limit
}

// DefaultRateLimits returns Discord's budgets, one for every route.
func DefaultRateLimits() RateLimits {
	return RateLimits{
		Global:        Limit{Requests: 50, Window: time.Second},
		MessageCreate: Limit{Requests: 5, Window: 5 * time.Second},
		MessageEdit:   Limit{Requests: 5, Window: 5 * time.Second},
		MessageDelete: Limit{Requests: 5, Window: time.Second},
		Reactions:     Limit{Requests: 1, Window: 250 * time.Millisecond},
		MessageRead:   Limit{Requests: 5, Window: time.Second},
		ThreadCreate:  Limit{Requests: 5, Window: 5 * time.Second},
		Typing:        Limit{Requests: 5, Window: 5 * time.Second},
		DM:            Limit{Requests: 5, Window: 5 * time.Second},
		Members:       Limit{Requests: 5, Window: time.Second},
		Interaction:   Limit{Requests: 5, Window: 5 * time.Second},
		Webhook:       Limit{Requests: 5, Window: 2 * time.Second},
		Commands:      Limit{Requests: 5, Window: 5 * time.Second},
		Other:         Limit{Requests: 5, Window: 5 * time.Second},
	}
}

type config struct {
	token             string
	appID             string
	botID             string
	botName           string
	guilds            []Guild
	heartbeat         time.Duration
	disabledIntents   int
	deadline          time.Duration
	tokenTTL          time.Duration
	rateLimits        *RateLimits
	clock             Clock
	logger            *slog.Logger
	compressThreshold int

	specViolationsAllowed bool
}

func defaultConfig() config {
	return config{
		token:             DefaultToken,
		appID:             DefaultApplicationID,
		botID:             DefaultBotUserID,
		botName:           DefaultBotUserName,
		guilds:            []Guild{DefaultGuild()},
		heartbeat:         time.Second,
		deadline:          3 * time.Second,
		tokenTTL:          15 * time.Minute,
		clock:             realClock{},
		compressThreshold: 1024,
	}
}

// Option configures a Server.
type Option func(*config)

// WithToken sets the bot token the fake accepts ("Authorization: Bot <token>").
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithApplicationID sets the application id (READY's application.id and the
// {app} of command and webhook routes).
func WithApplicationID(id string) Option { return func(c *config) { c.appID = id } }

// WithBotUser sets the bot user's id and name.
func WithBotUser(id, name string) Option {
	return func(c *config) { c.botID, c.botName = id, name }
}

// WithGuilds replaces the default guild with these guilds.
func WithGuilds(guilds ...Guild) Option {
	return func(c *config) { c.guilds = append([]Guild(nil), guilds...) }
}

// WithHeartbeatInterval sets the interval HELLO announces (default 1 s).
// discordgo reconnects when no ACK came for five intervals' worth of
// milliseconds times 5 ms, so keep it ≥ 100 ms under the race detector.
func WithHeartbeatInterval(d time.Duration) Option { return func(c *config) { c.heartbeat = d } }

// WithDisabledPrivilegedIntents turns privileged intents off "in the developer
// portal": identifying with any of them closes the gateway with 4014, and with
// IntentMessageContent off REST message reads are stripped of content too.
func WithDisabledPrivilegedIntents(mask int) Option {
	return func(c *config) { c.disabledIntents = mask & PrivilegedIntents }
}

// WithInteractionDeadline sets how long after dispatch an interaction callback
// is accepted (Discord: 3 s).
func WithInteractionDeadline(d time.Duration) Option { return func(c *config) { c.deadline = d } }

// WithInteractionTokenTTL sets how long interaction tokens work for webhook
// edits and followups (Discord: 15 minutes).
func WithInteractionTokenTTL(d time.Duration) Option { return func(c *config) { c.tokenTTL = d } }

// WithRateLimits turns rate limiting on with these budgets.
func WithRateLimits(rl RateLimits) Option { return func(c *config) { c.rateLimits = &rl } }

// WithClock sets the clock for rate-limit windows, deadlines, token lifetimes,
// timestamps and snowflakes (default: real time).
func WithClock(clock Clock) Option { return func(c *config) { c.clock = clock } }

// WithLogger makes the fake log protocol events (connections, closes,
// rejected requests) at debug level; by default it is silent.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithSpecViolationsAllowed lets requests that Discord's OpenAPI description
// rejects through to the fake's own handling, recorded (SpecViolations)
// without failing the test: for tests of the fake's own refusals, which send
// such requests on purpose. Without it such a request fails the test and is
// answered 400 Invalid Form Body (404 for a path Discord does not have).
func WithSpecViolationsAllowed() Option { return func(c *config) { c.specViolationsAllowed = true } }

// WithCompressThreshold sets the size from which dispatches are sent
// zlib-compressed as binary frames to clients that identified with
// compress:true (discordgo's default). READY is always compressed for them.
// Zero or less disables payload compression.
func WithCompressThreshold(n int) Option { return func(c *config) { c.compressThreshold = n } }
