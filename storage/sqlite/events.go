package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// MarkEventProcessed implements storage.Store. Ids are remembered for
// WithEventRetention.
func (db *DB) MarkEventProcessed(ctx context.Context, platform, eventID string) (first bool, err error) {
	if platform == "" || eventID == "" {
		return false, opError("mark event processed", errors.New("platform and event id are required"))
	}
	now := db.nowMS()
	err = db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		st, err := db.stmts.markEvent.in(ctx, tx)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, platform, eventID, now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		first = n == 1
		return db.maybePruneEvents(ctx, tx, now)
	})
	if err != nil {
		return false, opError("mark event processed", err)
	}
	return first, nil
}

// maybePruneEvents deletes expired event ids, at most about 24 times per
// retention period, in the caller's transaction.
func (db *DB) maybePruneEvents(ctx context.Context, tx *sql.Tx, now int64) error {
	retention := db.eventRetention.Milliseconds()
	last := db.lastPrune.Load()
	if now-last < retention/24 || !db.lastPrune.CompareAndSwap(last, now) {
		return nil
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM processed_events WHERE seen_at < ?`, now-retention)
	return err
}
