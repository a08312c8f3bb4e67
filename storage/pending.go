package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PendingPost is a message the bot must post exactly once and may not lose to
// a crash: a run's answer and its closing footer. It is stored before it goes
// to the outbox and marked when the platform answered; at start, what was
// never marked is posted again with the same Key (see chat.PostKey), so that
// a post the platform accepted just before the crash is not shown twice.
type PendingPost struct {
	ID        int64
	ThreadID  int64
	Thread    ThreadKey // set by UnpostedPosts
	RunID     int64     // 0 when it belongs to no run
	Key       string    // the idempotency key, the same on every attempt
	Text      string
	CreatedAt time.Time // set by RecordPendingPosts
}

// PendingPostStore keeps posts that must survive a crash (pending.go).
type PendingPostStore interface {
	// RecordPendingPosts stores posts, in order, in one transaction and
	// returns their ids. Under a lease (WithLease) it is fenced like the
	// other writes of a thread: a stale owner's answer is neither stored
	// nor posted at the next start. MarkPosted is not: a post the platform
	// took is marked whoever sent it, so that it is not posted again.
	RecordPendingPosts(ctx context.Context, posts []PendingPost) ([]int64, error)
	// MarkPosted records that the platform took the post as messageID, or,
	// with messageID "", that it refused it for good: either way it is not
	// posted again.
	MarkPosted(ctx context.Context, id int64, messageID string) error
	// UnpostedPosts returns the posts never marked, oldest first.
	UnpostedPosts(ctx context.Context) ([]PendingPost, error)
}

var _ PendingPostStore = (*DB)(nil)

// RecordPendingPosts implements PendingPostStore.
func (db *DB) RecordPendingPosts(ctx context.Context, posts []PendingPost) ([]int64, error) {
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
		err = fmt.Errorf("thread or run: %w", ErrNotFound)
	}
	if err != nil {
		return nil, opError("record pending posts", err)
	}
	return ids, nil
}

// MarkPosted implements PendingPostStore. Marking a post twice keeps the
// first mark.
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
			return fmt.Errorf("pending post %d: %w", id, ErrNotFound)
		} else if err != nil {
			return err
		}
		return nil
	})
	return opError("mark posted", err)
}

// UnpostedPosts implements PendingPostStore.
func (db *DB) UnpostedPosts(ctx context.Context) ([]PendingPost, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT p.id, p.thread_id, t.platform, t.team, t.channel, t.thread,
		coalesce(p.run_id, 0), p.post_key, p.text, p.created_at
		FROM pending_posts p JOIN threads t ON t.id = p.thread_id WHERE p.done_at IS NULL ORDER BY p.id`)
	if err != nil {
		return nil, opError("unposted posts", err)
	}
	defer rows.Close()
	var out []PendingPost
	for rows.Next() {
		var p PendingPost
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
