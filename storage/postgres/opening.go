package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// BeginOpening implements storage.OpeningStore.
func (db *DB) BeginOpening(ctx context.Context, platform, key string) (storage.Opening, error) {
	const op = "begin opening"
	if err := backend.CheckOpening(platform, key); err != nil {
		return storage.Opening{}, opError(op, err)
	}
	var o storage.Opening
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO openings (platform, opening, first_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			platform, key, db.nowMS())
		if err != nil {
			return err
		}
		o, err = scanOpening(tx.QueryRow(ctx, `SELECT platform, opening, team, channel, thread, first_at FROM openings
			WHERE platform = $1 AND opening = $2`, platform, key))
		o.Created = tag.RowsAffected() == 1
		return err
	})
	return o, opError(op, err)
}

// FinishOpening implements storage.OpeningStore.
func (db *DB) FinishOpening(ctx context.Context, platform, key string, thread storage.ThreadKey) (storage.ThreadKey, error) {
	const op = "finish opening"
	if err := backend.CheckThreadKey(thread); err != nil {
		return storage.ThreadKey{}, opError(op, err)
	}
	var o storage.Opening
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE openings SET team = $1, channel = $2, thread = $3 WHERE platform = $4 AND opening = $5 AND thread = ''`,
			thread.Team, thread.Channel, thread.Thread, platform, key); err != nil {
			return err
		}
		var err error
		o, err = scanOpening(tx.QueryRow(ctx, `SELECT platform, opening, team, channel, thread, first_at FROM openings
			WHERE platform = $1 AND opening = $2`, platform, key))
		return err
	})
	if err != nil {
		return storage.ThreadKey{}, lookupError(op, err)
	}
	return o.Thread, nil
}

func scanOpening(r pgx.Row) (storage.Opening, error) {
	var o storage.Opening
	var first int64
	err := r.Scan(&o.Platform, &o.Key, &o.Thread.Team, &o.Thread.Channel, &o.Thread.Thread, &first)
	o.Thread.Platform, o.First = o.Platform, fromMS(first)
	return o, err
}
