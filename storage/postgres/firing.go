package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// ClaimFiring implements storage.FiringStore.
func (db *DB) ClaimFiring(ctx context.Context, schedule string, at time.Time, owner string, ttl time.Duration) (bool, error) {
	const op = "claim firing"
	if err := backend.CheckFiring(schedule, owner, ttl); err != nil {
		return false, opError(op, err)
	}
	var claimed bool
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var later bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schedule_firings WHERE schedule = $1 AND at >= $2 AND done)`,
			schedule, at.UnixMilli()).Scan(&later); err != nil {
			return err
		}
		if later {
			claimed = false
			return nil
		}
		// The firing's lease is judged by the server's clock, as threads'
		// leases are (lease.go).
		now := serverMS("$5")
		tag, err := tx.Exec(ctx, `INSERT INTO schedule_firings (schedule, at, owner, expires_at) VALUES ($1, $2, $3, `+now+` + $4::bigint)
			ON CONFLICT (schedule, at) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
			WHERE NOT schedule_firings.done AND (schedule_firings.expires_at <= `+now+` OR schedule_firings.owner = excluded.owner)`,
			schedule, at.UnixMilli(), owner, ttl.Milliseconds(), db.shiftMS())
		claimed = err == nil && tag.RowsAffected() == 1
		return err
	})
	return claimed, opError(op, err)
}

// FinishFiring implements storage.FiringStore.
func (db *DB) FinishFiring(ctx context.Context, schedule string, at time.Time) error {
	const op = "finish firing"
	if schedule == "" {
		return opError(op, errors.New("schedule is required"))
	}
	return opError(op, db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO schedule_firings (schedule, at, owner, expires_at, done) VALUES ($1, $2, '', 0, true)
			ON CONFLICT (schedule, at) DO UPDATE SET done = true`, schedule, at.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM schedule_firings WHERE schedule = $1 AND at < $2`, schedule, at.UnixMilli())
		return err
	}))
}

// LastFiring implements storage.FiringStore.
func (db *DB) LastFiring(ctx context.Context, schedule string) (time.Time, error) {
	r, err := db.reader()
	if err != nil {
		return time.Time{}, opError("last firing", err)
	}
	var at *int64
	if err := r.QueryRow(ctx, `SELECT max(at) FROM schedule_firings WHERE schedule = $1`, schedule).Scan(&at); err != nil {
		return time.Time{}, opError("last firing", err)
	}
	if at == nil {
		return time.Time{}, lookupError("last firing", pgx.ErrNoRows)
	}
	return fromMS(*at), nil
}
