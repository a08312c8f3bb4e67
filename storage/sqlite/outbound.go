package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
)

// RecordOutbound implements storage.Store.
func (db *DB) RecordOutbound(ctx context.Context, o storage.Outbound) (int64, error) {
	switch o.Kind {
	case storage.OutboundStatus, storage.OutboundAnswer, storage.OutboundNotice, storage.OutboundAck:
	default:
		return 0, opError("record outbound", fmt.Errorf("unknown kind %q", o.Kind))
	}
	if o.Channel == "" || o.MessageID == "" {
		return 0, opError("record outbound", errors.New("channel and message id are required"))
	}
	var run any
	if o.RunID != 0 {
		run = o.RunID
	}
	now := db.nowMS()
	var id int64
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := checkFence(ctx, tx, o.ThreadID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO outbound (thread_id, run_id, kind, channel, message_id, text, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			o.ThreadID, run, o.Kind, o.Channel, o.MessageID, o.Text, now, now).Scan(&id)
	})
	if isExtCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d or run %d: %w", o.ThreadID, o.RunID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError("record outbound", err)
	}
	return id, nil
}

// UpdateOutbound implements storage.Store.
func (db *DB) UpdateOutbound(ctx context.Context, id int64, text string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := checkFenceOf(ctx, tx, "outbound", id); err != nil {
			return err
		}
		st, err := db.stmts.updateOutbnd.in(ctx, tx)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, text, db.nowMS(), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("outbound %d: %w", id, storage.ErrNotFound)
		}
		return nil
	})
	return opError("update outbound", err)
}

const outboundColumns = `id, thread_id, coalesce(run_id, 0), kind, channel, message_id, text, created_at, updated_at`

// OutboundForRun implements storage.Store.
func (db *DB) OutboundForRun(ctx context.Context, runID int64) ([]storage.Outbound, error) {
	return db.queryOutbound(ctx, "outbound for run", `SELECT `+outboundColumns+` FROM outbound WHERE run_id = ? ORDER BY id`, runID)
}

// LastOutbound implements storage.Store.
func (db *DB) LastOutbound(ctx context.Context, threadID int64, kind storage.OutboundKind) (storage.Outbound, error) {
	out, err := db.queryOutbound(ctx, "last outbound", `SELECT `+outboundColumns+` FROM outbound
		WHERE thread_id = ? AND kind = ? ORDER BY id DESC LIMIT 1`, threadID, kind)
	if err != nil {
		return storage.Outbound{}, err
	}
	if len(out) == 0 {
		return storage.Outbound{}, fmt.Errorf("storage: last outbound: %w", storage.ErrNotFound)
	}
	return out[0], nil
}

func (db *DB) queryOutbound(ctx context.Context, op, query string, args ...any) ([]storage.Outbound, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []storage.Outbound
	for rows.Next() {
		var o storage.Outbound
		var created, updated int64
		if err := rows.Scan(&o.ID, &o.ThreadID, &o.RunID, &o.Kind, &o.Channel, &o.MessageID, &o.Text, &created, &updated); err != nil {
			return nil, opError(op, err)
		}
		o.CreatedAt, o.UpdatedAt = fromMS(created), fromMS(updated)
		out = append(out, o)
	}
	return out, opError(op, rows.Err())
}
