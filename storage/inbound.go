package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
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

// AcceptInbound stores a chat message as received. It is committed when it
// returns, so the adapter acknowledges the platform event only after a nil
// error; on error (disk full: ErrFull) it must not acknowledge, and the platform
// redelivers. A message already accepted — same (platform, event id), or same
// (platform, channel, message id) — is not stored again: duplicate is true and id
// is the first copy's.
func (db *DB) AcceptInbound(ctx context.Context, in Inbound) (id int64, duplicate bool, err error) {
	if err := checkInbound(in); err != nil {
		return 0, false, opError("accept inbound", err)
	}
	err = db.inUrgentTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		id, duplicate, err = db.acceptIn(ctx, tx, in, db.nowMS(), false)
		return err
	})
	if err != nil {
		return 0, false, opError("accept inbound", err)
	}
	if !duplicate {
		db.inbound.Notify(in.ThreadID)
	}
	return id, duplicate, nil
}

// AcceptInboundInThread is EnsureThread and AcceptInbound in one transaction,
// for the first message of a thread: the thread with key is created with init
// unless it exists, and in (whose ThreadID is that thread's, whatever it was)
// is accepted in it. Both are committed when it returns, or neither is: a
// message refused (invalid, or the store full) leaves no thread behind. A new
// thread is created with the message as its activity and newest message
// seen, so its first message costs two statements (the INSERTs).
func (db *DB) AcceptInboundInThread(ctx context.Context, key ThreadKey, init ThreadInit, in Inbound) (Accepted, error) {
	if err := key.validate(); err != nil {
		return Accepted{}, opError("accept inbound", err)
	}
	if err := checkInbound(in); err != nil {
		return Accepted{}, opError("accept inbound", err)
	}
	var a Accepted
	err := db.inUrgentTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		now := db.nowMS()
		if a.Thread, a.Created, err = db.ensureThreadIn(ctx, tx, key, init, in.MessageID, now); err != nil {
			return err
		}
		in := in
		in.ThreadID = a.Thread.ID
		a.ID, a.Duplicate, err = db.acceptIn(ctx, tx, in, now, a.Created)
		return err
	})
	if err != nil {
		return Accepted{}, opError("accept inbound", err)
	}
	if !a.Duplicate {
		db.inbound.Notify(a.Thread.ID)
	}
	return a, nil
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

// ValidInbound reports whether in can be stored: AcceptInbound's checks, for
// another backend to make the same ones.
func ValidInbound(in Inbound) error { return checkInbound(in) }

// checkInbound refuses input that cannot be stored.
func checkInbound(in Inbound) error {
	switch {
	case in.Platform == "" || in.Channel == "":
		return errors.New("platform and channel are required")
	case in.Mode != ModePrompt && in.Mode != ModeSteer && in.Mode != ModeFollowUp && in.Mode != ModeCommand:
		return fmt.Errorf("unknown mode %q", in.Mode)
	case len(in.Attachments) > 0 && !json.Valid(in.Attachments):
		return errors.New("attachments are not valid JSON")
	}
	return nil
}

// acceptIn stores in in tx at now, or finds its first copy. Stored input is
// its thread's activity and newest message seen, unless fresh says the
// thread was created with both in this transaction.
func (db *DB) acceptIn(ctx context.Context, tx *sql.Tx, in Inbound, now int64, fresh bool) (id int64, duplicate bool, err error) {
	var attachments any
	if len(in.Attachments) > 0 {
		attachments = string(in.Attachments)
	}
	ins, err := db.stmts.insertInbound.in(ctx, tx)
	if err != nil {
		return 0, false, err
	}
	err = ins.QueryRowContext(ctx, in.Platform, nullIfEmpty(in.EventID), in.Channel, nullIfEmpty(in.MessageID), in.ThreadID,
		in.AuthorID, in.AuthorName, in.AuthorEmail, in.Text, attachments, in.Mode, now, now).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		find, err := db.stmts.findInbound.in(ctx, tx)
		if err != nil {
			return 0, false, err
		}
		err = find.QueryRowContext(ctx, in.Platform, in.EventID, in.Channel, in.MessageID).Scan(&id)
		return id, true, err
	}
	if err != nil {
		if isExtCode(err, codeForeignKey) {
			return 0, false, fmt.Errorf("thread %d: %w", in.ThreadID, ErrNotFound)
		}
		return 0, false, err
	}
	if fresh {
		return id, false, nil
	}
	touch, err := db.stmts.touchThread.in(ctx, tx)
	if err != nil {
		return 0, false, err
	}
	if _, err := touch.ExecContext(ctx, now, in.ThreadID); err != nil {
		return 0, false, err
	}
	return id, false, db.bumpLastSeen(ctx, tx, in.ThreadID, in.MessageID)
}

// allowedFrom lists, per target state, the states an inbound message may leave
// for it. A queued message may be re-queued (moved to the other queue).
var allowedFrom = map[InboundState][2]InboundState{
	InboundQueued:    {InboundReceived, InboundQueued},
	InboundDelivered: {InboundReceived, InboundQueued},
	InboundDropped:   {InboundReceived, InboundQueued},
}

// MarkInbound moves an inbound message to state. detail is the queue ("steer"
// or "followUp") for InboundQueued and the reason (required) for InboundDropped;
// it is ignored for InboundDelivered. A transition the state machine does not
// allow (out of delivered or dropped, back to received) is ErrInvalidTransition.
func (db *DB) MarkInbound(ctx context.Context, id int64, state InboundState, detail string) error {
	from, ok := allowedFrom[state]
	if !ok {
		return opError("mark inbound", fmt.Errorf("%w: to %q", ErrInvalidTransition, state))
	}
	var queue any
	reason := ""
	switch state {
	case InboundQueued:
		if q := Queue(detail); q != QueueSteer && q != QueueFollowUp {
			return opError("mark inbound", fmt.Errorf("queued needs queue steer or followUp, got %q", detail))
		}
		queue = detail
	case InboundDropped:
		if detail == "" {
			return opError("mark inbound", errors.New("dropped needs a reason"))
		}
		reason = detail
	}
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		st, err := db.stmts.markInbound.in(ctx, tx)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, state, queue, reason, db.nowMS(), id, from[0], from[1])
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var cur InboundState
		err = tx.QueryRowContext(ctx, `SELECT state FROM inbound WHERE id = ?`, id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("inbound %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("inbound %d: %w: %s to %s", id, ErrInvalidTransition, cur, state)
	})
	if err != nil {
		return opError("mark inbound", err)
	}
	return nil
}

const inboundColumns = `id, platform, coalesce(event_id, ''), channel, coalesce(message_id, ''), thread_id,
	author_id, author_name, author_email, text, attachments, mode, state, coalesce(queue, ''), reason, received_at, updated_at`

func scanInbound(r scanner) (Inbound, error) {
	var in Inbound
	var attachments sql.NullString
	var received, updated int64
	err := r.Scan(&in.ID, &in.Platform, &in.EventID, &in.Channel, &in.MessageID, &in.ThreadID,
		&in.AuthorID, &in.AuthorName, &in.AuthorEmail, &in.Text, &attachments, &in.Mode, &in.State, &in.Queue,
		&in.Reason, &received, &updated)
	if attachments.Valid {
		in.Attachments = json.RawMessage(attachments.String)
	}
	in.ReceivedAt, in.UpdatedAt = fromMS(received), fromMS(updated)
	return in, err
}

// GetInbound returns the inbound message with that id, or ErrNotFound.
func (db *DB) GetInbound(ctx context.Context, id int64) (Inbound, error) {
	in, err := scanInbound(db.r.QueryRowContext(ctx, `SELECT `+inboundColumns+` FROM inbound WHERE id = ?`, id))
	return in, lookupError("get inbound", err)
}

// PendingInbound returns the thread's input not yet delivered nor dropped
// (received or queued), in arrival order.
func (db *DB) PendingInbound(ctx context.Context, threadID int64) ([]Inbound, error) {
	return db.queryInbound(ctx, "pending inbound", `SELECT `+inboundColumns+` FROM inbound
		WHERE thread_id = ? AND state IN ('received', 'queued') ORDER BY id`, threadID)
}

// AllPendingInbound returns every thread's pending input in arrival order, for
// delivering it after a restart.
func (db *DB) AllPendingInbound(ctx context.Context) ([]Inbound, error) {
	return db.queryInbound(ctx, "all pending inbound", `SELECT `+inboundColumns+` FROM inbound
		WHERE state IN ('received', 'queued') ORDER BY id`)
}

func (db *DB) queryInbound(ctx context.Context, op, query string, args ...any) ([]Inbound, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []Inbound
	for rows.Next() {
		in, err := scanInbound(rows)
		if err != nil {
			return nil, opError(op, err)
		}
		out = append(out, in)
	}
	return out, opError(op, rows.Err())
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
