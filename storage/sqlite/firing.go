package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// ClaimFiring implements storage.Store.
func (db *DB) ClaimFiring(ctx context.Context, schedule string, at time.Time, owner string, ttl time.Duration) (bool, error) {
	const op = "claim firing"
	if err := backend.CheckFiring(schedule, owner, ttl); err != nil {
		return false, opError(op, err)
	}
	var claimed bool
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := db.nowMS()
		var later int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedule_firings WHERE schedule = ? AND at >= ? AND done = 1`,
			schedule, at.UnixMilli()).Scan(&later); err != nil {
			return err
		}
		if later > 0 {
			claimed = false
			return nil
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO schedule_firings (schedule, at, owner, expires_at) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (schedule, at) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE schedule_firings.done = 0 AND (schedule_firings.expires_at <= ?5 OR schedule_firings.owner = excluded.owner)`,
			schedule, at.UnixMilli(), owner, now+ttl.Milliseconds(), now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n == 1
		return err
	})
	return claimed, opError(op, err)
}

// FinishFiring implements storage.Store.
func (db *DB) FinishFiring(ctx context.Context, schedule string, at time.Time) error {
	const op = "finish firing"
	if schedule == "" {
		return opError(op, errors.New("schedule is required"))
	}
	return opError(op, db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO schedule_firings (schedule, at, owner, expires_at, done) VALUES (?, ?, '', 0, 1)
			ON CONFLICT (schedule, at) DO UPDATE SET done = 1`, schedule, at.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM schedule_firings WHERE schedule = ? AND at < ?`, schedule, at.UnixMilli())
		return err
	}))
}

// LastFiring implements storage.Store.
func (db *DB) LastFiring(ctx context.Context, schedule string) (time.Time, error) {
	var at sql.NullInt64
	if err := db.r.QueryRowContext(ctx, `SELECT max(at) FROM schedule_firings WHERE schedule = ?`, schedule).Scan(&at); err != nil {
		return time.Time{}, opError("last firing", err)
	}
	if !at.Valid {
		return time.Time{}, lookupError("last firing", sql.ErrNoRows)
	}
	return fromMS(at.Int64), nil
}
