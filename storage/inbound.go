package storage

import (
	"encoding/json"
	"time"
)

// InboundMode is how the sender asked for a message to be taken.
type InboundMode string

const (
	ModePrompt   InboundMode = "prompt"   // plain input: a prompt, or queued per busy_mode
	ModeSteer    InboundMode = "steer"    // !steer / /steer
	ModeFollowUp InboundMode = "followUp" // !followup
	ModeCommand  InboundMode = "command"  // !status, !stop, …
)

// InboundState is where an inbound message is in its life:
// received → queued (steer or followUp) → delivered | dropped (with a reason).
// received may go straight to delivered or dropped.
type InboundState string

const (
	InboundReceived  InboundState = "received"
	InboundQueued    InboundState = "queued"
	InboundDelivered InboundState = "delivered"
	InboundDropped   InboundState = "dropped"
)

// Queue names the agent queue a busy session's input waits in.
type Queue string

const (
	QueueSteer    Queue = "steer"
	QueueFollowUp Queue = "followUp"
)

// Inbound is a chat message accepted as input to a session.
type Inbound struct {
	ID       int64
	Platform string
	// EventID is the platform's event id (Slack event_id, Discord interaction
	// id); MessageID the message's own id (Slack ts, Discord snowflake). Either
	// may be empty; each that is set de-duplicates.
	EventID     string
	Channel     string
	MessageID   string
	ThreadID    int64
	AuthorID    string
	AuthorName  string
	AuthorEmail string
	Text        string
	// Attachments is the adapter's JSON description of files and images; nil for none.
	Attachments json.RawMessage
	Mode        InboundMode

	// Set by the store.
	State      InboundState
	Queue      Queue  // the queue it waited in, "" if it never did
	Reason     string // why it was dropped
	ReceivedAt time.Time
	UpdatedAt  time.Time
}

// Accepted is what AcceptInboundInThread did: the thread (and whether it was
// created), and the input's id (the first copy's if it is a duplicate). A
// created thread is as stored: active at the input's time, the input's
// message as the newest seen. An existing one is as it was before the input.
type Accepted struct {
	Thread    Thread
	Created   bool
	ID        int64
	Duplicate bool
}
