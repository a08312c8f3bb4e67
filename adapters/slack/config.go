package slack

// DefaultAPIURL is Slack's Web API base URL, used when Config.APIURL is empty.
const DefaultAPIURL = "https://slack.com/api/"

// Mode is how Slack delivers events.
type Mode string

const (
	// ModeSocket is Socket Mode: an outbound websocket; needs Config.AppToken.
	ModeSocket Mode = "socket"
	// ModeHTTP is the HTTP Events API: needs Config.SigningSecret and an
	// address (Config.Listen or Options.Listener).
	ModeHTTP Mode = "http"
)

// Config is what the adapter needs to know about the Slack app. The zero
// value of a field means the default its comment names. Error messages name
// a field by its key in the slack section of the configuration file (the bot
// fills Config from that section).
type Config struct {
	// Mode is how Slack delivers events; "" is ModeSocket.
	Mode Mode
	// BotToken (xoxb-…) authenticates every Web API call. Required.
	BotToken string
	// AppToken (xapp-…) opens Socket Mode connections. Required in socket mode.
	AppToken string
	// SigningSecret verifies the requests of the HTTP Events API. Required
	// in http mode.
	SigningSecret string
	// Listen is the host:port the HTTP Events API is served on (http mode);
	// required there unless Options.Listener is given.
	Listen string
	// APIURL replaces DefaultAPIURL (when not empty); it ends with "/".
	APIURL string
	// AgentSessions shows the bot's work as Slack agent sessions (titled,
	// with Slack's stop button) instead of the assistant status; the app
	// must be declared as an agent. Default false.
	AgentSessions bool
	// Streaming grows a run's status message with Slack's streaming methods
	// (chat.startStream, appendStream, stopStream) where the workspace
	// offers them, and by edits (chat.update) where it does not. Default
	// false: edits only.
	Streaming bool
}

// baseURL is the Web API base URL, always ending with "/".
func (c Config) baseURL() string {
	if c.APIURL == "" {
		return DefaultAPIURL
	}
	return c.APIURL
}
