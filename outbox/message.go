package outbox

import (
	"context"

	"github.com/threadsmith/threadsmith/chat"
)

// Priority orders operations that compete for a budget. The zero value counts
// as Normal.
type Priority int

const (
	// Low is for streaming edits: merged freely, and never allowed to take
	// the capacity kept for everything else.
	Low Priority = iota + 1
	// Normal is for ordinary messages: tool lines, uploads.
	Normal
	// High is for what must show up now: final answers, notices, acks.
	High
)

func (p Priority) norm() Priority {
	switch {
	case p <= 0:
		return Normal
	case p > High:
		return High
	}
	return p
}

func (p Priority) String() string {
	switch p.norm() {
	case Low:
		return "low"
	case High:
		return "high"
	}
	return "normal"
}

// Message is a message the bot posted or is about to post. Edit it through
// the Outbox that returned it.
type Message struct {
	o        *Outbox
	ref      chat.ThreadRef
	key      string // ref.Key(), kept so the Edit hot path does not rebuild it
	done     chan struct{}
	onPosted func(id string, err error)

	// Guarded by o.mu.
	state      msgState
	id         string
	err        error
	post       *op    // the post while it waits; nil once it went out
	edit       *op    // the pending edit, into which later edits merge
	shown      string // the text the platform shows, when known
	shownKnown bool
	// want is the latest text requested (posted or edited), which an
	// edit that only changes the buttons must send again; "" when unknown
	// (an adopted message).
	want string
	// actions are the buttons the message should carry; withActions says
	// SetActions was called, so that every later edit carries them.
	actions     []chat.Action
	withActions bool
	shownActs   []chat.Action // the buttons the platform shows (none after a post)
	edits       bucket        // EditPerMessage
}

// Thread is the thread the message belongs to.
func (m *Message) Thread() chat.ThreadRef { return m.ref }

// ID is the platform's id of the message, "" until it was posted.
func (m *Message) ID() string {
	m.o.mu.Lock()
	defer m.o.mu.Unlock()
	return m.id
}

// Wait returns the message's id once it was posted, or why it never will be.
func (m *Message) Wait(ctx context.Context) (string, error) {
	select {
	case <-m.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	m.o.mu.Lock()
	defer m.o.mu.Unlock()
	return m.id, m.err
}

type msgState uint8

const (
	msgPending msgState = iota
	msgPosted
	msgFailed
)
