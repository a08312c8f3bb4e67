package storage

import (
	"encoding/json"
	"time"
)

// SessionInit is a new session's configuration.
type SessionInit struct {
	Model        string
	SystemPrompt string
	// Settings is free-form JSON (thinking level, queue modes, …); nil for none.
	Settings json.RawMessage
}

// Session is one conversation with the model, hosted by a thread. A thread's
// earlier sessions (before !reset) keep their rows and entries.
type Session struct {
	// ID is the session's public id, the one AppendEntries and LoadEntries
	// take: random, safe in logs, file names and URLs.
	ID           string
	ThreadID     int64
	Model        string
	SystemPrompt string
	Settings     json.RawMessage
	CreatedAt    time.Time
}
