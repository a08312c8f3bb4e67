package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// hotStmt is a statement of a hot path (entry appends, inbound input, status
// edits), prepared once on the write connection at Open so that each call only
// binds and steps. Unprepared (nil stmt), it is prepared per transaction.
type hotStmt struct {
	query string
	stmt  *sql.Stmt
}

// in returns the statement bound to tx; it is closed with tx.
func (h *hotStmt) in(ctx context.Context, tx *sql.Tx) (*sql.Stmt, error) {
	if h.stmt != nil {
		return tx.StmtContext(ctx, h.stmt), nil
	}
	return tx.PrepareContext(ctx, h.query)
}

type statements struct {
	insertEntry   hotStmt
	dropSnapshot  hotStmt
	insertInbound hotStmt
	findInbound   hotStmt
	markInbound   hotStmt
	lastSeen      hotStmt
	touchThread   hotStmt
	updateOutbnd  hotStmt
	markEvent     hotStmt
	insertThread  hotStmt
	threadByKey   hotStmt // getThread's query, in the write transaction (the thread existed)

	// Reads of the ack path, prepared on the read pool (database/sql
	// prepares them on each connection as it first uses it): every
	// message a platform delivers looks its thread up.
	getThread hotStmt
	// Reads of a resume: preparing the live-entries query (a CTE and a
	// UNION ALL) costs as much as running it on a small session.
	loadEntries, loadLive hotStmt
	// A resume from a snapshot: the snapshot, then the entries after it.
	loadSnapshot, loadAfter hotStmt
}

func (s *statements) all() []*hotStmt {
	return []*hotStmt{&s.insertEntry, &s.dropSnapshot, &s.insertInbound, &s.findInbound, &s.markInbound, &s.lastSeen, &s.touchThread, &s.updateOutbnd, &s.markEvent, &s.insertThread, &s.threadByKey}
}

func (s *statements) reads() []*hotStmt {
	return []*hotStmt{&s.getThread, &s.loadEntries, &s.loadLive, &s.loadSnapshot, &s.loadAfter}
}

// rows runs a read statement on the pool r: prepared, or prepared for the
// call.
func (h *hotStmt) rows(ctx context.Context, r *sql.DB, args ...any) (*sql.Rows, error) {
	if h.stmt != nil {
		return h.stmt.QueryContext(ctx, args...)
	}
	return r.QueryContext(ctx, h.query, args...)
}

// queryRow is rows for a single row.
func (h *hotStmt) queryRow(ctx context.Context, r *sql.DB, args ...any) *sql.Row {
	if h.stmt != nil {
		return h.stmt.QueryRowContext(ctx, args...)
	}
	return r.QueryRowContext(ctx, h.query, args...)
}

const threadByKeyQuery = `SELECT ` + threadColumns + threadFrom +
	`WHERE t.platform = ? AND t.team = ? AND t.channel = ? AND t.thread = ?`

func newStatements() statements {
	return statements{
		insertEntry:  hotStmt{query: `INSERT INTO entries (session_id, seq, type, ts, payload) VALUES (?, ?, ?, ?, ?)`},
		dropSnapshot: hotStmt{query: `DELETE FROM session_snapshots WHERE session_id = ? AND upto >= ?`},
		insertInbound: hotStmt{query: `INSERT INTO inbound (platform, event_id, channel, message_id, thread_id,
			author_id, author_name, author_email, text, attachments, mode, received_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING RETURNING id`},
		findInbound: hotStmt{query: `SELECT id FROM inbound
			WHERE (platform = ?1 AND event_id = ?2) OR (platform = ?1 AND channel = ?3 AND message_id = ?4)
			ORDER BY id LIMIT 1`},
		markInbound: hotStmt{query: `UPDATE inbound SET state = ?, queue = coalesce(?, queue), reason = ?, updated_at = ?
			WHERE id = ? AND state IN (?, ?)`},
		// Moves forward only: platform message ids grow in length then in lexical
		// order (Slack ts "1712345678.000100", Discord snowflakes).
		lastSeen: hotStmt{query: `UPDATE threads SET last_seen_message = ?1, updated_at = ?2
			WHERE id = ?3 AND (length(?1) > length(last_seen_message)
				OR (length(?1) = length(last_seen_message) AND ?1 > last_seen_message))`},
		// Input is activity, and shows the thread exists: a closed one is active again.
		touchThread: hotStmt{query: `UPDATE threads SET active_at = ?1, state = 'active'
			WHERE id = ?2 AND (active_at < ?1 OR state <> 'active')`},
		updateOutbnd: hotStmt{query: `UPDATE outbound SET text = ?, updated_at = ? WHERE id = ?`},
		markEvent:    hotStmt{query: `INSERT INTO processed_events (platform, event_id, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`},
		// A new thread: its first message creates it (EnsureThread,
		// AcceptInboundInThread), on the ack path of that message.
		// The row comes back from the INSERT (a new thread has no session),
		// with the message that created it as its last seen: no SELECT, and
		// no touch or last-seen UPDATE after it.
		insertThread: hotStmt{query: `INSERT INTO threads (platform, team, channel, thread, repo, branch, workspace_path, last_seen_message, active_at, created_at, updated_at, origin)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?9, ?10) ON CONFLICT (platform, team, channel, thread) DO NOTHING
			RETURNING id, platform, team, channel, thread, '', repo, branch, workspace_path, state, last_seen_message, active_at, created_at, updated_at, origin`},
		threadByKey:  hotStmt{query: threadByKeyQuery},
		getThread:    hotStmt{query: threadByKeyQuery},
		loadEntries:  hotStmt{query: `SELECT seq, type, ts, payload FROM entries WHERE session_id = ? ORDER BY seq`},
		loadLive:     hotStmt{query: loadLiveQuery},
		loadSnapshot: hotStmt{query: `SELECT upto, snapshot FROM session_snapshots WHERE session_id = ?`},
		loadAfter:    hotStmt{query: `SELECT seq, type, ts, payload FROM entries WHERE session_id = ? AND seq > ?`},
	}
}

// loadLiveQuery reads a session's live entries in two index ranges: the
// model and thinking-level changes before the latest compaction's first
// kept entry, then everything from that entry on. The compacted messages are
// never visited. It has no ORDER BY: ordering a UNION ALL makes SQLite merge
// its two halves row by row (the payloads through a co-routine), which cost
// more than the query on sessions that never compacted; the caller puts the
// few entries of the first half in order (sortBySeq).
const loadLiveQuery = `
	WITH k AS (
		SELECT coalesce((SELECT payload ->> '$.firstKeptSeq' FROM entries
		                 WHERE session_id = ?1 AND type = 'compaction' ORDER BY seq DESC LIMIT 1), -1) AS first_kept)
	SELECT seq, type, ts, payload FROM entries INDEXED BY entries_by_type
	WHERE session_id = ?1 AND type IN ('model_change', 'thinking_level_change') AND seq < (SELECT first_kept FROM k)
	UNION ALL
	SELECT seq, type, ts, payload FROM entries
	WHERE session_id = ?1 AND seq >= (SELECT first_kept FROM k)`

func (s *statements) prepare(ctx context.Context, w, r *sql.DB) error {
	for _, h := range s.all() {
		st, err := w.PrepareContext(ctx, h.query)
		if err != nil {
			return err
		}
		h.stmt = st
	}
	for _, h := range s.reads() {
		st, err := r.PrepareContext(ctx, h.query)
		if err != nil {
			return err
		}
		h.stmt = st
	}
	return nil
}

func (s *statements) close() error {
	var errs []error
	for _, h := range append(s.all(), s.reads()...) {
		if h.stmt != nil {
			errs = append(errs, h.stmt.Close())
		}
	}
	return errors.Join(errs...)
}
