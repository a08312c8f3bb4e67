package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
)

// Usage.

// usageColumns sums the usage of the rows of a query whose entries are aliased e.
const usageColumns = `count(*),
	coalesce(sum((e.payload -> 'usage' ->> 'input')::bigint), 0)::bigint,
	coalesce(sum((e.payload -> 'usage' ->> 'output')::bigint), 0)::bigint,
	coalesce(sum((e.payload -> 'usage' ->> 'cacheRead')::bigint), 0)::bigint,
	coalesce(sum((e.payload -> 'usage' ->> 'cacheWrite')::bigint), 0)::bigint,
	coalesce(sum((e.payload -> 'usage' -> 'cost' ->> 'total')::float8), 0)::float8`

// isReply selects the assistant replies that reported usage (a JSON null
// usage is none, as SQLite's json_extract reads it).
const isReply = `e.type = 'message' AND e.payload ->> 'role' = 'assistant'
	AND coalesce(json_typeof(e.payload -> 'usage'), 'null') <> 'null'`

// ThreadUsage implements storage.UsageStore.
func (db *DB) ThreadUsage(ctx context.Context, threadID int64) (storage.Usage, error) {
	return db.usage(ctx, "thread usage", `SELECT `+usageColumns+`
		FROM entries e JOIN sessions s ON s.id = e.session_id
		WHERE s.thread_id = $1 AND `+isReply, threadID)
}

// UserUsage implements storage.UsageStore.
func (db *DB) UserUsage(ctx context.Context, platform, authorID string) (storage.Usage, error) {
	return db.usage(ctx, "user usage", `WITH owned AS (
		SELECT e.payload AS payload, (
			SELECT CASE WHEN u.payload ->> 'inputId' ~ '^[0-9]{1,18}$' THEN (u.payload ->> 'inputId')::bigint END
			FROM entries u
			WHERE u.session_id = e.session_id AND u.type = 'message' AND u.seq < e.seq
				AND u.payload ->> 'role' = 'user' AND u.payload ->> 'inputId' IS NOT NULL
			ORDER BY u.seq DESC LIMIT 1) AS input_id
		FROM entries e WHERE `+isReply+`)
		SELECT `+usageColumns+` FROM owned e JOIN inbound i ON i.id = e.input_id
		WHERE i.platform = $1 AND i.author_id = $2`, platform, authorID)
}

func (db *DB) usage(ctx context.Context, op, query string, args ...any) (storage.Usage, error) {
	r, err := db.reader()
	if err != nil {
		return storage.Usage{}, opError(op, err)
	}
	var u storage.Usage
	err = r.QueryRow(ctx, query, args...).Scan(&u.Replies, &u.Input, &u.Output, &u.CacheRead, &u.CacheWrite, &u.Cost)
	if err != nil {
		return storage.Usage{}, fmt.Errorf("%s: %w", op, err)
	}
	return u, nil
}

// Pages.

// ThreadSummaries implements storage.HistoryStore.
func (db *DB) ThreadSummaries(ctx context.Context) ([]storage.ThreadSummary, error) {
	return db.threadSummaries(ctx, "thread summaries", ``, ``)
}

// AuthorThreadSummaries implements storage.HistoryStore.
func (db *DB) AuthorThreadSummaries(ctx context.Context, platform, authorID string, limit int) ([]storage.ThreadSummary, error) {
	if limit <= 0 {
		return nil, nil
	}
	return db.threadSummaries(ctx, "author thread summaries", `WHERE t.platform = $1 AND t.id IN (
		SELECT i.thread_id FROM inbound i WHERE i.platform = $1 AND i.author_id = $2 AND i.mode <> 'command') `,
		` LIMIT $3`, platform, authorID, limit)
}

// threadSummaries reads the summaries of the threads where selects (all
// for ""), most recently active first; tail ends the query (a LIMIT).
func (db *DB) threadSummaries(ctx context.Context, op, where, tail string, args ...any) ([]storage.ThreadSummary, error) {
	return queryAll(ctx, db, op, func(r pgx.Row) (storage.ThreadSummary, error) {
		var s storage.ThreadSummary
		var active, created, updated, last int64
		var state string
		err := r.Scan(&s.ID, &s.Key.Platform, &s.Key.Team, &s.Key.Channel, &s.Key.Thread, &s.SessionID,
			&s.Repo, &s.Branch, &s.WorkspacePath, &state, &s.LastSeenMessage, &active, &created, &updated, &s.Origin,
			&s.Running, &s.Pending, &last, &s.Cost, &s.Request)
		s.State = storage.ThreadState(state)
		s.ActiveAt, s.CreatedAt, s.UpdatedAt = fromMS(active), fromMS(created), fromMS(updated)
		s.LastActivity = s.ActiveAt
		if last > active {
			s.LastActivity = fromMS(last)
		}
		return s, err
	}, `SELECT `+threadColumns+`,
		EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = t.id AND r.ended_at IS NULL),
		(SELECT count(*) FROM inbound i WHERE i.thread_id = t.id AND i.state IN ('received', 'queued')),
		(SELECT coalesce(max(e.ts), 0) FROM entries e WHERE e.session_id = t.session_id),
		(SELECT coalesce(sum((e.payload -> 'usage' -> 'cost' ->> 'total')::float8), 0)::float8
		 FROM entries e JOIN sessions x ON x.id = e.session_id
		 WHERE x.thread_id = t.id AND `+isReply+`),
		coalesce((SELECT substr(i.text, 1, `+strconv.Itoa(storage.RequestChars)+`) FROM inbound i WHERE i.thread_id = t.id AND i.mode = 'prompt' ORDER BY i.id LIMIT 1), '')`+threadFrom+where+`ORDER BY t.active_at DESC, t.id DESC`+tail, args...)
}

// ThreadSessions implements storage.HistoryStore.
func (db *DB) ThreadSessions(ctx context.Context, threadID int64) ([]storage.Session, error) {
	return queryAll(ctx, db, "thread sessions", scanSession, `SELECT `+sessionColumns+` FROM sessions WHERE thread_id = $1 ORDER BY id`, threadID)
}

// ThreadVersion implements storage.HistoryStore.
func (db *DB) ThreadVersion(ctx context.Context, threadID int64) (string, error) {
	r, err := db.reader()
	if err != nil {
		return "", opError("thread version", err)
	}
	var seq, sessions, runs, ended, pushes, pending, inbound int64
	err = r.QueryRow(ctx, `SELECT
		(SELECT coalesce(max(e.seq), -1) FROM entries e JOIN threads t ON e.session_id = t.session_id WHERE t.id = $1),
		(SELECT count(*) FROM sessions WHERE thread_id = $1),
		(SELECT count(*) FROM runs WHERE thread_id = $1),
		(SELECT count(*) FROM runs WHERE thread_id = $1 AND ended_at IS NOT NULL),
		(SELECT count(*) FROM pushes WHERE thread_id = $1),
		(SELECT count(*) FROM inbound WHERE thread_id = $1 AND state IN ('received', 'queued')),
		(SELECT count(*) FROM inbound WHERE thread_id = $1)`, threadID).
		Scan(&seq, &sessions, &runs, &ended, &pushes, &pending, &inbound)
	if err != nil {
		return "", opError("thread version", err)
	}
	return fmt.Sprint(seq, "/", sessions, "/", runs, "/", ended, "/", pushes, "/", pending, "/", inbound), nil
}

// Pending posts.

// RecordPendingPosts implements storage.PendingPostStore.
func (db *DB) RecordPendingPosts(ctx context.Context, posts []storage.PendingPost) ([]int64, error) {
	for _, p := range posts {
		if p.Key == "" || p.Text == "" {
			return nil, opError("record pending posts", errors.New("key and text are required"))
		}
	}
	ids := make([]int64, len(posts))
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		now := db.nowMS()
		for i, p := range posts {
			if i == 0 || p.ThreadID != posts[i-1].ThreadID {
				if err := checkFence(ctx, tx, p.ThreadID); err != nil {
					return err
				}
			}
			var run *int64
			if p.RunID != 0 {
				run = &p.RunID
			}
			if err := tx.QueryRow(ctx, `INSERT INTO pending_posts (thread_id, run_id, post_key, text, created_at)
				VALUES ($1, $2, $3, $4, $5) RETURNING id`, p.ThreadID, run, p.Key, text(p.Text), now).Scan(&ids[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if isCode(err, codeForeignKey) {
		err = fmt.Errorf("thread or run: %w", storage.ErrNotFound)
	}
	if err != nil {
		return nil, opError("record pending posts", err)
	}
	return ids, nil
}

// MarkPosted implements storage.PendingPostStore.
func (db *DB) MarkPosted(ctx context.Context, id int64, messageID string) error {
	return opError("mark posted", db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE pending_posts SET done_at = $1, message_id = $2 WHERE id = $3 AND done_at IS NULL`,
			db.nowMS(), nullIfEmpty(messageID), id)
		if err != nil || tag.RowsAffected() > 0 {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM pending_posts WHERE id = $1`, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("pending post %d: %w", id, storage.ErrNotFound)
		}
		return err
	}))
}

// UnpostedPosts implements storage.PendingPostStore.
func (db *DB) UnpostedPosts(ctx context.Context) ([]storage.PendingPost, error) {
	return queryAll(ctx, db, "unposted posts", func(r pgx.Row) (storage.PendingPost, error) {
		var p storage.PendingPost
		var created int64
		err := r.Scan(&p.ID, &p.ThreadID, &p.Thread.Platform, &p.Thread.Team, &p.Thread.Channel, &p.Thread.Thread,
			&p.RunID, &p.Key, &p.Text, &created)
		p.CreatedAt = fromMS(created)
		return p, err
	}, `SELECT p.id, p.thread_id, t.platform, t.team, t.channel, t.thread,
		coalesce(p.run_id, 0), p.post_key, p.text, p.created_at
		FROM pending_posts p JOIN threads t ON t.id = p.thread_id WHERE p.done_at IS NULL ORDER BY p.id`)
}
