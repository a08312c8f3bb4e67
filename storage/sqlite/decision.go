package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// RecordDecision implements storage.Store.
func (db *DB) RecordDecision(ctx context.Context, d storage.Decision) (int64, error) {
	const op = "record decision"
	if err := backend.CheckDecision(d); err != nil {
		return 0, opError(op, err)
	}
	var id int64
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO decisions (thread_id, session_id, kind, user_id, user_name, detail, decided_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, d.ThreadID, d.SessionID, d.Kind, d.UserID, d.UserName, d.Detail, db.nowMS()).Scan(&id)
	})
	if isExtCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d: %w", d.ThreadID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError(op, err)
	}
	return id, nil
}

// ThreadDecisions implements storage.Store.
func (db *DB) ThreadDecisions(ctx context.Context, threadID int64) ([]storage.Decision, error) {
	const op = "thread decisions"
	rows, err := db.r.QueryContext(ctx, `SELECT id, thread_id, session_id, kind, user_id, user_name, detail, decided_at
		FROM decisions WHERE thread_id = ? ORDER BY id`, threadID)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []storage.Decision
	for rows.Next() {
		var d storage.Decision
		var at int64
		if err := rows.Scan(&d.ID, &d.ThreadID, &d.SessionID, &d.Kind, &d.UserID, &d.UserName, &d.Detail, &at); err != nil {
			return nil, opError(op, err)
		}
		d.At = fromMS(at)
		out = append(out, d)
	}
	return out, opError(op, rows.Err())
}
