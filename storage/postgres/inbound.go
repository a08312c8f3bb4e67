package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// AcceptInbound implements storage.InboundStore.
func (db *DB) AcceptInbound(ctx context.Context, in storage.Inbound) (id int64, duplicate bool, err error) {
	if err := backend.CheckInbound(in); err != nil {
		return 0, false, opError("accept inbound", err)
	}
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		id, duplicate, err = db.acceptIn(ctx, tx, in, db.nowMS(), false)
		return err
	})
	if err != nil {
		return 0, false, opError("accept inbound", err)
	}
	return id, duplicate, nil
}

// AcceptInboundInThread implements storage.InboundStore. A new thread is
// created with the message as its activity and newest message seen (no
// UPDATE after the INSERT).
func (db *DB) AcceptInboundInThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit, in storage.Inbound) (storage.Accepted, error) {
	if err := backend.CheckThreadKey(key); err != nil {
		return storage.Accepted{}, opError("accept inbound", err)
	}
	if err := backend.CheckInbound(in); err != nil {
		return storage.Accepted{}, opError("accept inbound", err)
	}
	var a storage.Accepted
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
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
	return a, nil
}

// acceptIn stores in in tx at now, or finds its first copy. Stored input is
// its thread's activity and newest message seen, unless fresh says the
// thread was created with both in this transaction.
func (db *DB) acceptIn(ctx context.Context, tx pgx.Tx, in storage.Inbound, now int64, fresh bool) (id int64, duplicate bool, err error) {
	var attachments *string
	if len(in.Attachments) > 0 {
		s := string(in.Attachments)
		attachments = &s
	}
	err = tx.QueryRow(ctx, `INSERT INTO inbound (platform, event_id, channel, message_id, thread_id,
		author_id, author_name, author_email, text, attachments, mode, received_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::json, $11, $12, $12)
		ON CONFLICT DO NOTHING RETURNING id`,
		in.Platform, nullIfEmpty(in.EventID), in.Channel, nullIfEmpty(in.MessageID), in.ThreadID,
		text(in.AuthorID), text(in.AuthorName), text(in.AuthorEmail), text(in.Text), attachments, string(in.Mode), now).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `SELECT id FROM inbound
			WHERE (platform = $1 AND event_id = $2) OR (platform = $1 AND channel = $3 AND message_id = $4)
			ORDER BY id LIMIT 1`, in.Platform, in.EventID, in.Channel, in.MessageID).Scan(&id)
		return id, true, err
	}
	if err != nil {
		if isCode(err, codeForeignKey) {
			return 0, false, fmt.Errorf("thread %d: %w", in.ThreadID, storage.ErrNotFound)
		}
		return 0, false, err
	}
	// The replicas hear of it when this commits (ListenInbound).
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, inboundChannel, strconv.FormatInt(in.ThreadID, 10)); err != nil {
		return 0, false, err
	}
	if fresh {
		return id, false, nil
	}
	// Input is activity, and shows the thread exists: a closed one is active again.
	if _, err := tx.Exec(ctx, `UPDATE threads SET active_at = $1, state = 'active'
		WHERE id = $2 AND (active_at < $1 OR state <> 'active')`, now, in.ThreadID); err != nil {
		return 0, false, err
	}
	if in.MessageID == "" {
		return id, false, nil
	}
	return id, false, db.bumpLastSeen(ctx, tx, in.ThreadID, in.MessageID)
}

// MarkInbound implements storage.InboundStore.
func (db *DB) MarkInbound(ctx context.Context, id int64, state storage.InboundState, detail string) error {
	from, err := backend.InboundFrom(state)
	if err != nil {
		return opError("mark inbound", err)
	}
	var queue *string
	reason := ""
	switch state {
	case storage.InboundQueued:
		if q := storage.Queue(detail); q != storage.QueueSteer && q != storage.QueueFollowUp {
			return opError("mark inbound", fmt.Errorf("queued needs queue steer or followUp, got %q", detail))
		}
		queue = &detail
	case storage.InboundDropped:
		if detail == "" {
			return opError("mark inbound", errors.New("dropped needs a reason"))
		}
		reason = detail
	}
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE inbound SET state = $1, queue = coalesce($2::text, queue), reason = $3, updated_at = $4
			WHERE id = $5 AND state IN ($6, $7)`, string(state), queue, reason, db.nowMS(), id, string(from[0]), string(from[1]))
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		var cur string
		err = tx.QueryRow(ctx, `SELECT state FROM inbound WHERE id = $1`, id).Scan(&cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("inbound %d: %w", id, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("inbound %d: %w: %s to %s", id, storage.ErrInvalidTransition, cur, state)
	})
	return opError("mark inbound", err)
}

const inboundColumns = `id, platform, coalesce(event_id, ''), channel, coalesce(message_id, ''), thread_id,
	author_id, author_name, author_email, text, attachments::text, mode, state, coalesce(queue, ''), reason, received_at, updated_at`

func scanInbound(r pgx.Row) (storage.Inbound, error) {
	var in storage.Inbound
	var attachments *string
	var mode, state, queue string
	var received, updated int64
	err := r.Scan(&in.ID, &in.Platform, &in.EventID, &in.Channel, &in.MessageID, &in.ThreadID,
		&in.AuthorID, &in.AuthorName, &in.AuthorEmail, &in.Text, &attachments, &mode, &state, &queue,
		&in.Reason, &received, &updated)
	if attachments != nil {
		in.Attachments = json.RawMessage(*attachments)
	}
	in.Mode, in.State, in.Queue = storage.InboundMode(mode), storage.InboundState(state), storage.Queue(queue)
	in.ReceivedAt, in.UpdatedAt = fromMS(received), fromMS(updated)
	return in, err
}

// GetInbound implements storage.InboundStore.
func (db *DB) GetInbound(ctx context.Context, id int64) (storage.Inbound, error) {
	r, err := db.reader()
	if err != nil {
		return storage.Inbound{}, opError("get inbound", err)
	}
	in, err := scanInbound(r.QueryRow(ctx, `SELECT `+inboundColumns+` FROM inbound WHERE id = $1`, id))
	return in, lookupError("get inbound", err)
}

// PendingInbound implements storage.InboundStore.
func (db *DB) PendingInbound(ctx context.Context, threadID int64) ([]storage.Inbound, error) {
	return queryAll(ctx, db, "pending inbound", scanInbound, `SELECT `+inboundColumns+` FROM inbound
		WHERE thread_id = $1 AND state IN ('received', 'queued') ORDER BY id`, threadID)
}

// AllPendingInbound implements storage.InboundStore.
func (db *DB) AllPendingInbound(ctx context.Context) ([]storage.Inbound, error) {
	return queryAll(ctx, db, "all pending inbound", scanInbound, `SELECT `+inboundColumns+` FROM inbound
		WHERE state IN ('received', 'queued') ORDER BY id`)
}

// ThreadInbound implements storage.HistoryStore.
func (db *DB) ThreadInbound(ctx context.Context, threadID int64) ([]storage.Inbound, error) {
	return queryAll(ctx, db, "thread inbound", scanInbound, `SELECT `+inboundColumns+` FROM inbound
		WHERE thread_id = $1 ORDER BY id`, threadID)
}

// text makes free text storable in PostgreSQL, whose text type takes neither
// NUL nor invalid UTF-8 (SQLite stores any bytes): each becomes U+FFFD, so
// that such a message is stored, not refused and redelivered forever.
func text(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
