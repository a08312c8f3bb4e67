package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// AcceptInbound implements storage.Store. It goes ahead of other writes
// (the platform's acknowledgement waits on it); listeners of this DB are
// called after the commit.
func (db *DB) AcceptInbound(ctx context.Context, in storage.Inbound) (id int64, duplicate bool, err error) {
	if err := backend.CheckInbound(in); err != nil {
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

// AcceptInboundInThread implements storage.Store. Like AcceptInbound it goes
// ahead of other writes; a new thread's first message costs two statements
// (the INSERTs).
func (db *DB) AcceptInboundInThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit, in storage.Inbound) (storage.Accepted, error) {
	if err := backend.CheckThreadKey(key); err != nil {
		return storage.Accepted{}, opError("accept inbound", err)
	}
	if err := backend.CheckInbound(in); err != nil {
		return storage.Accepted{}, opError("accept inbound", err)
	}
	var a storage.Accepted
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
		return storage.Accepted{}, opError("accept inbound", err)
	}
	if !a.Duplicate {
		db.inbound.Notify(a.Thread.ID)
	}
	return a, nil
}

// acceptIn stores in in tx at now, or finds its first copy. Stored input is
// its thread's activity and newest message seen, unless fresh says the
// thread was created with both in this transaction.
func (db *DB) acceptIn(ctx context.Context, tx *sql.Tx, in storage.Inbound, now int64, fresh bool) (id int64, duplicate bool, err error) {
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
			return 0, false, fmt.Errorf("thread %d: %w", in.ThreadID, storage.ErrNotFound)
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

// MarkInbound implements storage.Store.
func (db *DB) MarkInbound(ctx context.Context, id int64, state storage.InboundState, detail string) error {
	from, err := backend.InboundFrom(state)
	if err != nil {
		return opError("mark inbound", err)
	}
	var queue any
	reason := ""
	switch state {
	case storage.InboundQueued:
		if q := storage.Queue(detail); q != storage.QueueSteer && q != storage.QueueFollowUp {
			return opError("mark inbound", fmt.Errorf("queued needs queue steer or followUp, got %q", detail))
		}
		queue = detail
	case storage.InboundDropped:
		if detail == "" {
			return opError("mark inbound", errors.New("dropped needs a reason"))
		}
		reason = detail
	}
	err = db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
		var cur storage.InboundState
		err = tx.QueryRowContext(ctx, `SELECT state FROM inbound WHERE id = ?`, id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("inbound %d: %w", id, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("inbound %d: %w: %s to %s", id, storage.ErrInvalidTransition, cur, state)
	})
	if err != nil {
		return opError("mark inbound", err)
	}
	return nil
}

const inboundColumns = `id, platform, coalesce(event_id, ''), channel, coalesce(message_id, ''), thread_id,
	author_id, author_name, author_email, text, attachments, mode, state, coalesce(queue, ''), reason, received_at, updated_at`

func scanInbound(r scanner) (storage.Inbound, error) {
	var in storage.Inbound
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

// GetInbound implements storage.Store.
func (db *DB) GetInbound(ctx context.Context, id int64) (storage.Inbound, error) {
	in, err := scanInbound(db.r.QueryRowContext(ctx, `SELECT `+inboundColumns+` FROM inbound WHERE id = ?`, id))
	return in, lookupError("get inbound", err)
}

// PendingInbound implements storage.Store.
func (db *DB) PendingInbound(ctx context.Context, threadID int64) ([]storage.Inbound, error) {
	return db.queryInbound(ctx, "pending inbound", `SELECT `+inboundColumns+` FROM inbound
		WHERE thread_id = ? AND state IN ('received', 'queued') ORDER BY id`, threadID)
}

// AllPendingInbound implements storage.Store.
func (db *DB) AllPendingInbound(ctx context.Context) ([]storage.Inbound, error) {
	return db.queryInbound(ctx, "all pending inbound", `SELECT `+inboundColumns+` FROM inbound
		WHERE state IN ('received', 'queued') ORDER BY id`)
}

func (db *DB) queryInbound(ctx context.Context, op, query string, args ...any) ([]storage.Inbound, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []storage.Inbound
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
