package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/threadsmith/threadsmith/storage"
)

// This file holds the reads behind the session pages (package web): a
// thread's whole record for one page, and the list of threads. They only
// read, from the reader pool, and never hold the write lock.

// ThreadSummaries implements storage.Store.
func (db *DB) ThreadSummaries(ctx context.Context) ([]storage.ThreadSummary, error) {
	return db.threadSummaries(ctx, "thread summaries", ``, ``)
}

// AuthorThreadSummaries implements storage.Store.
func (db *DB) AuthorThreadSummaries(ctx context.Context, platform, authorID string, limit int) ([]storage.ThreadSummary, error) {
	if limit <= 0 {
		return nil, nil
	}
	return db.threadSummaries(ctx, "author thread summaries", `WHERE t.platform = ? AND t.id IN (
		SELECT i.thread_id FROM inbound i WHERE i.platform = ? AND i.author_id = ? AND i.mode <> 'command') `,
		` LIMIT ?`, platform, platform, authorID, limit)
}

// threadSummaries reads the summaries of the threads where selects (all
// for ""), most recently active first; tail ends the query (a LIMIT).
func (db *DB) threadSummaries(ctx context.Context, op, where, tail string, args ...any) ([]storage.ThreadSummary, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+threadColumns+`,
		EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = t.id AND r.ended_at IS NULL),
		(SELECT count(*) FROM inbound i WHERE i.thread_id = t.id AND i.state IN ('received', 'queued')),
		(SELECT coalesce(max(e.ts), 0) FROM entries e WHERE e.session_id = t.session_id),
		(SELECT coalesce(sum(json_extract(e.payload, '$.usage.cost.total')), 0) FROM entries e JOIN sessions x ON x.id = e.session_id
		 WHERE x.thread_id = t.id AND `+isReply+`),
		coalesce((SELECT substr(i.text, 1, `+strconv.Itoa(storage.RequestChars)+`) FROM inbound i WHERE i.thread_id = t.id AND i.mode = 'prompt' ORDER BY i.id LIMIT 1), '')`+threadFrom+where+`ORDER BY t.active_at DESC, t.id DESC`+tail, args...)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []storage.ThreadSummary
	for rows.Next() {
		var s storage.ThreadSummary
		var active, created, updated, last int64
		var cost sql.NullFloat64
		err := rows.Scan(&s.ID, &s.Key.Platform, &s.Key.Team, &s.Key.Channel, &s.Key.Thread, &s.SessionID,
			&s.Repo, &s.Branch, &s.WorkspacePath, &s.State, &s.LastSeenMessage, &active, &created, &updated, &s.Origin,
			&s.Running, &s.Pending, &last, &cost, &s.Request)
		if err != nil {
			return nil, opError(op, err)
		}
		s.ActiveAt, s.CreatedAt, s.UpdatedAt = fromMS(active), fromMS(created), fromMS(updated)
		s.LastActivity = s.ActiveAt
		if last > active {
			s.LastActivity = fromMS(last)
		}
		s.Cost = cost.Float64
		out = append(out, s)
	}
	return out, opError(op, rows.Err())
}

// ThreadSessions implements storage.Store.
func (db *DB) ThreadSessions(ctx context.Context, threadID int64) ([]storage.Session, error) {
	const op = "thread sessions"
	rows, err := db.r.QueryContext(ctx, `SELECT uid, thread_id, model, system_prompt, settings, created_at
		FROM sessions WHERE thread_id = ? ORDER BY id`, threadID)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []storage.Session
	for rows.Next() {
		var s storage.Session
		var settings sql.NullString
		var created int64
		if err := rows.Scan(&s.ID, &s.ThreadID, &s.Model, &s.SystemPrompt, &settings, &created); err != nil {
			return nil, opError(op, err)
		}
		if settings.Valid {
			s.Settings = []byte(settings.String)
		}
		s.CreatedAt = fromMS(created)
		out = append(out, s)
	}
	return out, opError(op, rows.Err())
}

// ThreadRuns implements storage.Store.
func (db *DB) ThreadRuns(ctx context.Context, threadID int64) ([]storage.Run, error) {
	return db.queryRuns(ctx, "thread runs", `SELECT `+runColumns+runFrom+`WHERE r.thread_id = ? ORDER BY r.id`, threadID)
}

// WaitingRuns implements storage.Store.
func (db *DB) WaitingRuns(ctx context.Context) ([]storage.Run, error) {
	return db.queryRuns(ctx, "waiting runs", `SELECT `+runColumns+runFrom+`WHERE r.outcome = ?
		AND NOT EXISTS (SELECT 1 FROM runs n WHERE n.thread_id = r.thread_id AND n.id > r.id) ORDER BY r.id`, string(storage.RunWaiting))
}

// queryRuns reads the runs query selects (runColumns, runFrom).
func (db *DB) queryRuns(ctx context.Context, op, query string, args ...any) ([]storage.Run, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []storage.Run
	for rows.Next() {
		run, err := scanRun(rows)
		if err != nil {
			return nil, opError(op, err)
		}
		out = append(out, run)
	}
	return out, opError(op, rows.Err())
}

// ThreadPushes implements storage.Store.
func (db *DB) ThreadPushes(ctx context.Context, threadID int64) ([]storage.Push, error) {
	const op = "thread pushes"
	rows, err := db.r.QueryContext(ctx, `SELECT id, thread_id, branch, sha, result, detail, pushed_at FROM pushes
		WHERE thread_id = ? ORDER BY id`, threadID)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []storage.Push
	for rows.Next() {
		var p storage.Push
		var at int64
		if err := rows.Scan(&p.ID, &p.ThreadID, &p.Branch, &p.SHA, &p.Result, &p.Detail, &at); err != nil {
			return nil, opError(op, err)
		}
		p.At = fromMS(at)
		out = append(out, p)
	}
	return out, opError(op, rows.Err())
}

// ThreadInbound implements storage.Store.
func (db *DB) ThreadInbound(ctx context.Context, threadID int64) ([]storage.Inbound, error) {
	return db.queryInbound(ctx, "thread inbound", `SELECT `+inboundColumns+` FROM inbound
		WHERE thread_id = ? ORDER BY id`, threadID)
}

// ThreadVersion implements storage.Store.
func (db *DB) ThreadVersion(ctx context.Context, threadID int64) (string, error) {
	var seq, sessions, runs, ended, pushes, pending, inbound, decisions int64
	err := db.r.QueryRowContext(ctx, `SELECT
		(SELECT coalesce(max(e.seq), -1) FROM entries e JOIN threads t ON e.session_id = t.session_id WHERE t.id = ?1),
		(SELECT count(*) FROM sessions WHERE thread_id = ?1),
		(SELECT count(*) FROM runs WHERE thread_id = ?1),
		(SELECT count(*) FROM runs WHERE thread_id = ?1 AND ended_at IS NOT NULL),
		(SELECT count(*) FROM pushes WHERE thread_id = ?1),
		(SELECT count(*) FROM inbound WHERE thread_id = ?1 AND state IN ('received', 'queued')),
		(SELECT count(*) FROM inbound WHERE thread_id = ?1),
		(SELECT count(*) FROM decisions WHERE thread_id = ?1)`, threadID).
		Scan(&seq, &sessions, &runs, &ended, &pushes, &pending, &inbound, &decisions)
	if err != nil {
		return "", opError("thread version", err)
	}
	return fmt.Sprint(seq, "/", sessions, "/", runs, "/", ended, "/", pushes, "/", pending, "/", inbound, "/", decisions), nil
}
