package discordfake

import (
	"encoding/json"
	"net/url"
	"slices"
	"time"
)

// Channel is a guild text channel, a thread or a DM channel.
type Channel struct {
	ID       string
	Type     int
	GuildID  string
	Name     string
	ParentID string // threads: the channel the thread lives in
	OwnerID  string // threads: who opened it
	// RecipientID is the user of a DM channel.
	RecipientID string
	// AutoArchiveDuration is a thread's archive timer in minutes.
	AutoArchiveDuration int
	CreatedAt           time.Time
}

// Attachment is a file on a message. Data is what was uploaded; URL is where
// the fake serves it (its stand-in for cdn.discordapp.com, no auth needed).
type Attachment struct {
	ID          string
	Filename    string
	ContentType string
	Data        []byte
	URL         string
}

// Message is a message as it stands now, edits applied.
type Message struct {
	ID        string
	ChannelID string
	GuildID   string
	AuthorID  string
	// AuthorName is the author's username.
	AuthorName  string
	AuthorBot   bool
	Content     string
	Embeds      []json.RawMessage
	Components  json.RawMessage
	Attachments []Attachment
	Flags       int
	// Type is Discord's message type: 0 default, 19 reply, 20 slash command response.
	Type int
	// WebhookID is the application id on interaction responses and followups.
	WebhookID string
	// InteractionID names the interaction a response or followup belongs to.
	InteractionID string
	// ReferenceID is message_reference.message_id of a reply.
	ReferenceID string
	// ThreadID is the thread started from this message, if any.
	ThreadID  string
	CreatedAt time.Time
	// EditedAt is the time of the last edit; zero if never edited.
	EditedAt time.Time
	// Edits counts the edits applied.
	Edits int
}

func (m Message) clone() Message {
	m.Embeds = slices.Clone(m.Embeds)
	m.Attachments = slices.Clone(m.Attachments)
	return m
}

// Reaction is one user's reaction on a message.
type Reaction struct {
	// Emoji is the unicode emoji, or name:id for a custom emoji.
	Emoji  string
	UserID string
	At     time.Time
}

// Interaction is an application command dispatched by SlashCommand and what
// the application did with it.
type Interaction struct {
	ID          string
	Token       string
	CommandID   string
	CommandName string
	Options     map[string]any
	// CustomID and MessageID are set for a button click (Click): the
	// button's custom_id and the message it is on.
	CustomID  string
	MessageID string
	GuildID   string
	ChannelID string
	UserID    string

	DispatchedAt time.Time
	// Responded reports an accepted callback; the fields below describe it.
	Responded    bool
	ResponseType int
	Ephemeral    bool
	RespondedAt  time.Time
	// Latency is RespondedAt - DispatchedAt by the fake's clock.
	Latency time.Duration
	// Response is the callback body as sent (payload_json for multipart).
	Response json.RawMessage
	// RejectedCallbacks counts callbacks refused (late: 10062, repeated: 40060).
	RejectedCallbacks int

	// Original is the response message (@original) as it stands, if any.
	Original *Message
	// Followups are the followup messages created through the webhook.
	Followups []Message
}

// Command is a registered application command.
type Command struct {
	ID            string
	ApplicationID string
	GuildID       string // empty for global commands
	Version       string
	Type          int // 1 chat input, 2 user, 3 message
	Name          string
	Description   string
	Options       []CommandOption
	// Raw is the command object exactly as the fake serves it.
	Raw json.RawMessage
}

// CommandOption is an option (or subcommand) of a command, in Discord's JSON.
type CommandOption struct {
	Type         int             `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Required     bool            `json:"required,omitempty"`
	Autocomplete bool            `json:"autocomplete,omitempty"`
	Choices      []CommandChoice `json:"choices,omitempty"`
	Options      []CommandOption `json:"options,omitempty"`
	ChannelTypes []int           `json:"channel_types,omitempty"`
	MinValue     *float64        `json:"min_value,omitempty"`
	MaxValue     *float64        `json:"max_value,omitempty"`
	MinLength    *int            `json:"min_length,omitempty"`
	MaxLength    *int            `json:"max_length,omitempty"`
}

// CommandChoice is one fixed choice of an option.
type CommandChoice struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Request is one REST request as the fake received it.
type Request struct {
	Method string
	// Path is the decoded URL path, e.g. /api/v9/channels/1/messages.
	Path  string
	Query url.Values
	// Route is the matched pattern, e.g. "POST /api/v9/channels/{channel}/messages";
	// empty for unknown routes.
	Route       string
	ContentType string
	// Body is the JSON body, or the payload_json part of a multipart body.
	Body json.RawMessage
	// Files are the files[n] parts of a multipart body.
	Files []File
	// Authorized reports a correct "Bot <token>" Authorization header.
	Authorized bool
	Status     int
	At         time.Time
	// Lost says the request took effect but its response was never sent
	// (LoseResponseNext).
	Lost bool
}

// File is one uploaded file of a multipart request.
type File struct {
	Field       string // files[0], files[1], …
	Filename    string
	ContentType string
	Data        []byte
}

// GatewayPayload is one gateway frame, decoded. Tokens in IDENTIFY and RESUME
// are redacted.
type GatewayPayload struct {
	// Conn numbers connections from 1 in the order they were accepted.
	Conn int
	// Op is the opcode; -1 marks a close frame the fake sent (Type "CLOSE",
	// Data {"code","reason"}) or a client frame it could not decode.
	Op int
	// Type is the dispatch name (t) of op 0 payloads.
	Type string
	// Seq is s, zero when null.
	Seq  int64
	Data json.RawMessage
	// Compressed reports a zlib-compressed binary frame.
	Compressed bool
	At         time.Time
}

// Identify is one IDENTIFY (op 2) a client sent.
type Identify struct {
	Conn           int
	TokenValid     bool
	Intents        int
	Compress       bool
	LargeThreshold int
	Shard          []int
	Properties     map[string]string
}

// Typing is one POST /channels/{id}/typing.
type Typing struct {
	ChannelID string
	At        time.Time
}
