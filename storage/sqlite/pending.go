package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
)

// RecordPendingPosts implements storage.Store.
func (db *DB) RecordPendingPosts(ctx context.Context, posts []storage.PendingPost) ([]int64, error) {
	for _, p := range posts {
		if p.Key == "" || p.Text == "" {
			return nil, opError("record pending posts", errors.New("key and text are required"))
		}
	}
	ids := make([]int64, len(posts))
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := db.nowMS()
		for i, p := range posts {
			if i == 0 || p.ThreadID != posts[i-1].ThreadID {
				if err := checkFence(ctx, tx, p.ThreadID); err != nil {
					return err
				}
			}
			var run any
			if p.RunID != 0 {
				run = p.RunID
			}
			if err := tx.QueryRowContext(ctx, `INSERT INTO pending_posts (thread_id, run_id, post_key, text, created_at)
				VALUES (?, ?, ?, ?, ?) RETURNING id`, p.ThreadID, run, p.Key, p.Text, now).Scan(&ids[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if isExtCode(err, codeForeignKey) {
		err = fmt.Errorf("thread or run: %w", storage.ErrNotFound)
	}
	if err != nil {
		return nil, opError("record pending posts", err)
	}
	return ids, nil
}

// MarkPosted implements storage.Store.
func (db *DB) MarkPosted(ctx context.Context, id int64, messageID string) error {
	var msg any
	if messageID != "" {
		msg = messageID
	}
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE pending_posts SET done_at = ?, message_id = ? WHERE id = ? AND done_at IS NULL`,
			db.nowMS(), msg, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM pending_posts WHERE id = ?`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("pending post %d: %w", id, storage.ErrNotFound)
		} else if err != nil {
			return err
		}
		return nil
	})
	return opError("mark posted", err)
}

// UnpostedPosts implements storage.Store.
func (db *DB) UnpostedPosts(ctx context.Context) ([]storage.PendingPost, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT p.id, p.thread_id, t.platform, t.team, t.channel, t.thread,
		coalesce(p.run_id, 0), p.post_key, p.text, p.created_at
		FROM pending_posts p JOIN threads t ON t.id = p.thread_id WHERE p.done_at IS NULL ORDER BY p.id`)
	if err != nil {
		return nil, opError("unposted posts", err)
	}
	defer rows.Close()
	var out []storage.PendingPost
	for rows.Next() {
		var p storage.PendingPost
		var created int64
		if err := rows.Scan(&p.ID, &p.ThreadID, &p.Thread.Platform, &p.Thread.Team, &p.Thread.Channel, &p.Thread.Thread,
			&p.RunID, &p.Key, &p.Text, &created); err != nil {
			return nil, opError("unposted posts", err)
		}
		p.CreatedAt = fromMS(created)
		out = append(out, p)
	}
	return out, opError("unposted posts", rows.Err())
}
