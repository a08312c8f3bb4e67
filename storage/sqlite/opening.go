package sqlite

import (
	"context"
	"database/sql"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// BeginOpening implements storage.Store.
func (db *DB) BeginOpening(ctx context.Context, platform, key string) (storage.Opening, error) {
	const op = "begin opening"
	if err := backend.CheckOpening(platform, key); err != nil {
		return storage.Opening{}, opError(op, err)
	}
	var o storage.Opening
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO openings (platform, opening, first_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
			platform, key, db.nowMS())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		o, err = scanOpening(tx.QueryRowContext(ctx, `SELECT platform, opening, team, channel, thread, first_at FROM openings
			WHERE platform = ? AND opening = ?`, platform, key))
		o.Created = n == 1
		return err
	})
	return o, opError(op, err)
}

// FinishOpening implements storage.Store.
func (db *DB) FinishOpening(ctx context.Context, platform, key string, thread storage.ThreadKey) (storage.ThreadKey, error) {
	const op = "finish opening"
	if err := backend.CheckThreadKey(thread); err != nil {
		return storage.ThreadKey{}, opError(op, err)
	}
	var o storage.Opening
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE openings SET team = ?, channel = ?, thread = ? WHERE platform = ? AND opening = ? AND thread = ''`,
			thread.Team, thread.Channel, thread.Thread, platform, key); err != nil {
			return err
		}
		var err error
		o, err = scanOpening(tx.QueryRowContext(ctx, `SELECT platform, opening, team, channel, thread, first_at FROM openings
			WHERE platform = ? AND opening = ?`, platform, key))
		return err
	})
	if err != nil {
		return storage.ThreadKey{}, lookupError(op, err)
	}
	return o.Thread, nil
}

func scanOpening(r scanner) (storage.Opening, error) {
	var o storage.Opening
	var first int64
	err := r.Scan(&o.Platform, &o.Key, &o.Thread.Team, &o.Thread.Channel, &o.Thread.Thread, &first)
	o.Thread.Platform, o.First = o.Platform, fromMS(first)
	return o, err
}
