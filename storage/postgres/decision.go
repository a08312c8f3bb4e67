package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// RecordDecision implements storage.DecisionStore.
func (db *DB) RecordDecision(ctx context.Context, d storage.Decision) (int64, error) {
	const op = "record decision"
	if err := backend.CheckDecision(d); err != nil {
		return 0, opError(op, err)
	}
	var id int64
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO decisions (thread_id, session_id, kind, user_id, user_name, detail, decided_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
			d.ThreadID, text(d.SessionID), string(d.Kind), text(d.UserID), text(d.UserName), text(d.Detail), db.nowMS()).Scan(&id)
	})
	if isCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d: %w", d.ThreadID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError(op, err)
	}
	return id, nil
}

func scanDecision(r pgx.Row) (storage.Decision, error) {
	var d storage.Decision
	var kind string
	var at int64
	err := r.Scan(&d.ID, &d.ThreadID, &d.SessionID, &kind, &d.UserID, &d.UserName, &d.Detail, &at)
	d.Kind = storage.DecisionKind(kind)
	d.At = fromMS(at)
	return d, err
}

// ThreadDecisions implements storage.DecisionStore.
func (db *DB) ThreadDecisions(ctx context.Context, threadID int64) ([]storage.Decision, error) {
	return queryAll(ctx, db, "thread decisions", scanDecision, `SELECT id, thread_id, session_id, kind, user_id, user_name, detail, decided_at
		FROM decisions WHERE thread_id = $1 ORDER BY id`, threadID)
}
