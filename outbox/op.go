package outbox

import (
	"slices"
	"time"

	"github.com/threadsmith/threadsmith/chat"
)

type opKind uint8

const (
	opPost opKind = iota
	opEdit
	opReact
	opUpload
	opStatus
)

func (k opKind) String() string {
	return [...]string{"post", "edit", "react", "upload", "status"}[k]
}

// op is one adapter call waiting or in flight. Pending edits, posts and
// status updates are mutated in place by later requests (coalescing); once
// dispatched an op is only touched by its worker until it finishes.
type op struct {
	kind opKind
	prio Priority
	seq  uint64 // of the first request merged into it: FIFO order and Flush
	th   *thread
	msg  *Message // post, edit

	text    string // post and edit text, status, upload comment
	title   string // a status's title (chat.TitledStatusSetter)
	target  string // the message id an edit or reaction applies to
	emoji   string
	add     bool
	name    string
	content []byte

	key   string    // a post's or upload's idempotency key, the same on every attempt
	first time.Time // when a post's or upload's first attempt was made
	// uncertain says an attempt of a post or upload failed without an answer (a
	// timeout): it may have been created, so the next attempt must check.
	uncertain bool
	// notify is the person a post mentions (chat.PostKey.Notify).
	notify string
	// stream is chat.PostKey.Stream.
	stream bool
	// final marks an edit that must show even if the platform refuses it:
	// it is posted anew then (EditFinal).
	final bool
	// withActions makes an edit (or the edit that follows a post) set the
	// message's buttons to actions along with its text (chat.Actioner).
	withActions bool
	actions     []chat.Action

	attempts  int       // calls made so far
	failures  int       // transient failures so far
	notBefore time.Time // Retry-After or backoff of this op
	inFlight  bool
	retired   bool // sent, given up, or merged into an older op
}

// thread is the queue of one conversation. It exists while it has work and is
// forgotten when idle; Messages find it again by key.
type thread struct {
	ref  chat.ThreadRef
	key  string
	busy bool // one call of this thread is in flight (status calls aside)

	lane   []*op // posts and uploads: strictly in call order
	edits  []*op // one pending edit per message
	reacts []*op // in call order; only the first per target message may go

	// status is the status update waiting to go, the latest requested;
	// statusBusy says one is in flight. Status calls have a lane of their
	// own: they never hold up the thread's other calls.
	status     *op
	statusBusy bool

	post *bucket // PostPerChannel, shared with the channel's other threads
	edit *bucket // EditPerChannel
}

func (th *thread) empty() bool {
	return !th.busy && len(th.lane) == 0 && len(th.edits) == 0 && len(th.reacts) == 0 &&
		th.status == nil && !th.statusBusy
}

func (th *thread) lanePrio() Priority {
	p := Low
	for _, op := range th.lane {
		p = max(p, op.prio)
	}
	return p
}

func removeOp(s []*op, x *op) []*op {
	if i := slices.Index(s, x); i >= 0 {
		return slices.Delete(s, i, i+1)
	}
	return s
}
