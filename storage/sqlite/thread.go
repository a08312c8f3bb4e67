package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

const threadColumns = `t.id, t.platform, t.team, t.channel, t.thread, coalesce(s.uid, ''), t.repo, t.branch,
	t.workspace_path, t.state, t.last_seen_message, t.active_at, t.created_at, t.updated_at, t.origin`

const threadFrom = ` FROM threads t LEFT JOIN sessions s ON s.id = t.session_id `

type scanner interface{ Scan(dest ...any) error }

func scanThread(r scanner) (storage.Thread, error) {
	var t storage.Thread
	var active, created, updated int64
	err := r.Scan(&t.ID, &t.Key.Platform, &t.Key.Team, &t.Key.Channel, &t.Key.Thread, &t.SessionID,
		&t.Repo, &t.Branch, &t.WorkspacePath, &t.State, &t.LastSeenMessage, &active, &created, &updated, &t.Origin)
	t.ActiveAt, t.CreatedAt, t.UpdatedAt = fromMS(active), fromMS(created), fromMS(updated)
	return t, err
}

// EnsureThread implements storage.Store. Most calls find the thread: they are
// answered from the read pool, without taking the write lock.
func (db *DB) EnsureThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit) (storage.Thread, bool, error) {
	if err := backend.CheckThreadKey(key); err != nil {
		return storage.Thread{}, false, opError("ensure thread", err)
	}
	// Most calls find the thread: answer them from the read pool, without
	// taking the write lock.
	if t, err := db.GetThread(ctx, key); err == nil || !errors.Is(err, storage.ErrNotFound) {
		return t, false, err
	}
	var t storage.Thread
	var created bool
	err := db.inUrgentTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		t, created, err = db.ensureThreadIn(ctx, tx, key, init, "", db.nowMS())
		return err
	})
	if err != nil {
		return storage.Thread{}, false, opError("ensure thread", err)
	}
	return t, created, nil
}

// ensureThreadIn creates the thread with key in tx unless it exists, and
// returns it. A new thread is stored as active at now, with lastSeen (the id
// of the message that creates it, or "") as its newest message seen.
func (db *DB) ensureThreadIn(ctx context.Context, tx *sql.Tx, key storage.ThreadKey, init storage.ThreadInit, lastSeen string, now int64) (storage.Thread, bool, error) {
	ins, err := db.stmts.insertThread.in(ctx, tx)
	if err != nil {
		return storage.Thread{}, false, err
	}
	t, err := scanThread(ins.QueryRowContext(ctx, key.Platform, key.Team, key.Channel, key.Thread, init.Repo, init.Branch, init.WorkspacePath, lastSeen, now, init.Origin))
	if !errors.Is(err, sql.ErrNoRows) {
		return t, err == nil, err
	}
	sel, err := db.stmts.threadByKey.in(ctx, tx)
	if err != nil {
		return storage.Thread{}, false, err
	}
	t, err = scanThread(sel.QueryRowContext(ctx, key.Platform, key.Team, key.Channel, key.Thread))
	return t, false, err
}

// GetThread implements storage.Store.
func (db *DB) GetThread(ctx context.Context, key storage.ThreadKey) (storage.Thread, error) {
	t, err := scanThread(db.stmts.getThread.queryRow(ctx, db.r, key.Platform, key.Team, key.Channel, key.Thread))
	return t, lookupError("get thread", err)
}

// ThreadByID implements storage.Store.
func (db *DB) ThreadByID(ctx context.Context, id int64) (storage.Thread, error) {
	t, err := scanThread(db.r.QueryRowContext(ctx, `SELECT `+threadColumns+threadFrom+`WHERE t.id = ?`, id))
	return t, lookupError("get thread", err)
}

// ActiveThreads implements storage.Store.
func (db *DB) ActiveThreads(ctx context.Context) ([]storage.Thread, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+threadColumns+threadFrom+`WHERE t.state = 'active' ORDER BY t.id`)
	if err != nil {
		return nil, opError("active threads", err)
	}
	defer rows.Close()
	var out []storage.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, opError("active threads", err)
		}
		out = append(out, t)
	}
	return out, opError("active threads", rows.Err())
}

// FindActiveThread implements storage.Store.
func (db *DB) FindActiveThread(ctx context.Context, q storage.ThreadQuery) (storage.Thread, error) {
	query, args, ok := findThreadQuery(q)
	if !ok {
		return storage.Thread{}, lookupError("find thread", sql.ErrNoRows) // names no thread
	}
	t, err := scanThread(db.r.QueryRowContext(ctx, query, args...))
	return t, lookupError("find thread", err)
}

func findThreadQuery(q storage.ThreadQuery) (string, []any, bool) {
	where, args, ok := backend.FindThreadWhere(q)
	return `SELECT ` + threadColumns + threadFrom + `WHERE` + where + `ORDER BY t.id LIMIT 1`, args, ok
}

// RecentThreads implements storage.Store.
func (db *DB) RecentThreads(ctx context.Context, platform string, since time.Time) ([]storage.Thread, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+threadColumns+threadFrom+
		`WHERE t.platform = ? AND t.state = 'active' AND t.active_at >= ? ORDER BY t.id`, platform, since.UnixMilli())
	if err != nil {
		return nil, opError("recent threads", err)
	}
	defer rows.Close()
	var out []storage.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, opError("recent threads", err)
		}
		out = append(out, t)
	}
	return out, opError("recent threads", rows.Err())
}

// SetThreadWorkspace implements storage.Store.
func (db *DB) SetThreadWorkspace(ctx context.Context, threadID int64, ws storage.ThreadInit) error {
	return db.updateThread(ctx, "set thread workspace", threadID,
		`UPDATE threads SET repo = ?, branch = ?, workspace_path = ?, updated_at = ? WHERE id = ?`,
		ws.Repo, ws.Branch, ws.WorkspacePath, db.nowMS(), threadID)
}

// SetThreadState implements storage.Store.
func (db *DB) SetThreadState(ctx context.Context, threadID int64, state storage.ThreadState) error {
	if state != storage.ThreadActive && state != storage.ThreadClosed {
		return opError("set thread state", fmt.Errorf("unknown thread state %q", state))
	}
	return db.updateThread(ctx, "set thread state", threadID,
		`UPDATE threads SET state = ?, updated_at = ? WHERE id = ?`, state, db.nowMS(), threadID)
}

// SetLastSeenMessage implements storage.Store.
func (db *DB) SetLastSeenMessage(ctx context.Context, threadID int64, messageID string) error {
	if messageID == "" {
		return nil
	}
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.bumpLastSeen(ctx, tx, threadID, messageID)
	})
	if err != nil {
		return opError("set last seen message", err)
	}
	return nil
}

func (db *DB) bumpLastSeen(ctx context.Context, tx *sql.Tx, threadID int64, messageID string) error {
	st, err := db.stmts.lastSeen.in(ctx, tx)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, messageID, db.nowMS(), threadID)
	return err
}

func (db *DB) updateThread(ctx context.Context, op string, threadID int64, query string, args ...any) error {
	return opError(op, db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, fmt.Sprint("thread ", threadID), query, args...)
	}))
}

// lookupError turns sql.ErrNoRows into ErrNotFound and wraps the rest.
func lookupError(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("storage: %s: %w", op, storage.ErrNotFound)
	}
	return opError(op, err)
}
