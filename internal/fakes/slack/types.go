package slackfake

import (
	"encoding/json"
	"net/url"
	"time"
)

// Call is one request to the Web API as the fake received and answered it.
type Call struct {
	Method string
	// Params holds the form, query or JSON fields, the token excluded. JSON values
	// that are not strings are kept as their JSON text.
	Params url.Values
	// Body is the request body verbatim when it was JSON.
	Body json.RawMessage
	// Token says which token authenticated the call: "bot", "app", "none" or
	// "invalid". The token itself is never recorded.
	Token string
	// Time is when the call arrived, on the server's clock (WithClock).
	Time time.Time
	// Status is the HTTP status answered; Error the Slack error code ("" when ok).
	Status int
	Error  string
	// Lost says the call took effect but its response was never sent
	// (LoseResponseNext).
	Lost bool
}

// Message is a message as the fake stores it, with edits applied.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // the thread's root ts for replies; "" for top-level messages
	User     string
	BotID    string
	Username string
	SubType  string
	Text     string
	Blocks   json.RawMessage
	Files    []File
	EditedTS string // ts of the last edit, "" if never edited
	// Broadcast is set for a thread reply also sent to the channel.
	Broadcast bool
	// Metadata is the message's metadata as posted ({"event_type",
	// "event_payload"}); Web API reads return it with include_all_metadata.
	Metadata json.RawMessage
}

// Reaction is one emoji on a message and who added it, in order.
type Reaction struct {
	Name  string
	Users []string
}

// File is a file the fake serves: shared by a user (ShareFile) or uploaded by the bot.
type File struct {
	ID                 string
	Name               string
	Title              string
	Mimetype           string
	Filetype           string
	User               string
	Size               int
	URLPrivate         string
	URLPrivateDownload string
	Content            []byte
}

// Upload is one files upload v2 flow: getUploadURLExternal, the upload itself and
// completeUploadExternal.
type Upload struct {
	FileID   string
	Filename string
	Title    string
	// Length is what getUploadURLExternal announced; Content what was uploaded.
	Length         int
	Content        []byte
	Uploaded       bool
	Completed      bool
	Channel        string
	ThreadTS       string
	InitialComment string
	// MessageTS is the ts of the message that shares the file, when completed into a
	// channel.
	MessageTS string
}

// Ephemeral is a message sent with chat.postEphemeral.
type Ephemeral struct {
	Channel  string
	User     string
	Text     string
	ThreadTS string
	TS       string
	// Visible says the user could see it: Slack shows an ephemeral message
	// posted into a thread only if the thread has replies.
	Visible bool
}

// Status is one assistant.threads.setStatus call that the fake accepted.
type Status struct {
	Channel  string
	ThreadTS string
	Status   string
	// LoadingMessages are the messages Slack rotates through while the
	// status shows (loading_messages).
	LoadingMessages []string
}

// Delivery is one delivery attempt of an event: a Socket Mode envelope or an HTTP
// Events API request.
type Delivery struct {
	// ID is the envelope_id over Socket Mode; over HTTP a fake-local id.
	ID        string
	EventID   string
	EventType string // app_mention, message, …
	SubType   string
	Channel   string
	TS        string // ts of the message the event is about
	// RetryAttempt and RetryReason are what the envelope or request carried.
	RetryAttempt int
	RetryReason  string
	// HTTP is set for deliveries over the HTTP Events API.
	HTTP bool
	// Conn is the ID of the Socket Mode connection the envelope was written
	// to (Connections); 0 while queued, and over HTTP.
	Conn int
	// Sent is when the frame was written or the request sent; zero while queued.
	Sent  time.Time
	Acked bool
	// Lost is set for an event raised during an Outage: it was never sent.
	Lost bool
}

// Ack is an acknowledgement: a Socket Mode {"envelope_id":…} frame or the response to
// an HTTP Events API request.
type Ack struct {
	DeliveryID string
	EventID    string
	// Payload is the ack's payload field over Socket Mode; Body the response body over
	// HTTP.
	Payload json.RawMessage
	Body    []byte
	// StatusCode is the HTTP response status (0 over Socket Mode).
	StatusCode int
	Received   time.Time
	// Latency is the time from sending the delivery to receiving its ack.
	Latency time.Duration
}

// Connection describes one Socket Mode websocket connection.
type Connection struct {
	ID        int
	Opened    time.Time
	Closed    bool
	Draining  bool // a disconnect frame was sent; it gets no new events
	PingsSent int
	Pongs     int
}

// User is a workspace member as users.info returns it.
type User struct {
	ID       string
	Name     string
	RealName string
	Email    string
	IsBot    bool
}

// Channel is a conversation. Kind is "channel", "group" (private), "im" or "mpim";
// User is the other member of an im.
type Channel struct {
	ID   string
	Name string
	Kind string
	User string
}
