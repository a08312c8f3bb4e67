package storage

import "time"

// OutboundKind says what a bot message is for.
type OutboundKind string

const (
	OutboundStatus OutboundKind = "status" // the run's status message, edited as it streams
	OutboundAnswer OutboundKind = "answer" // (part of) the final answer
	OutboundNotice OutboundKind = "notice" // retry, compaction, push, interruption notices
	OutboundAck    OutboundKind = "ack"    // acknowledgements (queued input, …)
)

// Outbound is a message the bot posted.
type Outbound struct {
	ID        int64
	ThreadID  int64
	RunID     int64 // 0 when it belongs to no run
	Kind      OutboundKind
	Channel   string
	MessageID string // the platform's id (Slack ts, Discord snowflake)
	Text      string // the text as last posted or edited
	CreatedAt time.Time
	UpdatedAt time.Time
}
