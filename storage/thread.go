package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ThreadKey identifies a chat thread: Slack (team, channel, thread root ts);
// Discord (guild, parent channel or thread channel, thread id). Team may be empty
// (DMs); the others may not.
type ThreadKey struct {
	Platform string
	Team     string
	Channel  string
	Thread   string
}

func (k ThreadKey) validate() error {
	if k.Platform == "" || k.Channel == "" || k.Thread == "" {
		return errors.New("thread key needs platform, channel and thread")
	}
	return nil
}

// ThreadState says whether a thread still takes input.
//
// An active thread nobody wrote in lately (ActiveAt older than the caller's
// window, a day for catching up) is idle: it still takes input, but
// RecentThreads leaves it out, so a reconnect spends no API call on it.
type ThreadState string

const (
	// ThreadActive: the thread hosts a live session (the default).
	ThreadActive ThreadState = "active"
	// ThreadClosed: the thread is gone from the platform (deleted, or the bot
	// lost access); it is neither resumed at start nor caught up. Input
	// accepted in it makes it active again.
	ThreadClosed ThreadState = "closed"
)

// ThreadInit is what is known of a thread's workspace when it is first seen.
// Any field may be empty and set later with SetThreadWorkspace.
type ThreadInit struct {
	Repo          string
	Branch        string
	WorkspacePath string
}

// Thread is a chat thread hosting a session.
type Thread struct {
	ID  int64
	Key ThreadKey
	// SessionID is the current session ("" before the first CreateSession).
	SessionID     string
	Repo          string
	Branch        string
	WorkspacePath string
	State         ThreadState
	// LastSeenMessage is the platform id (Slack ts, Discord snowflake) of the
	// newest message seen in the thread, for catch-up after a reconnect.
	LastSeenMessage string
	// ActiveAt is when a person last wrote in the thread (input accepted), or
	// when it was created.
	ActiveAt  time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

const threadColumns = `t.id, t.platform, t.team, t.channel, t.thread, coalesce(s.uid, ''), t.repo, t.branch,
	t.workspace_path, t.state, t.last_seen_message, t.active_at, t.created_at, t.updated_at`

const threadFrom = ` FROM threads t LEFT JOIN sessions s ON s.id = t.session_id `

type scanner interface{ Scan(dest ...any) error }

func scanThread(r scanner) (Thread, error) {
	var t Thread
	var active, created, updated int64
	err := r.Scan(&t.ID, &t.Key.Platform, &t.Key.Team, &t.Key.Channel, &t.Key.Thread, &t.SessionID,
		&t.Repo, &t.Branch, &t.WorkspacePath, &t.State, &t.LastSeenMessage, &active, &created, &updated)
	t.ActiveAt, t.CreatedAt, t.UpdatedAt = fromMS(active), fromMS(created), fromMS(updated)
	return t, err
}

// EnsureThread returns the thread with that key, creating it with init when it
// does not exist yet; created says which happened. An existing thread keeps its
// workspace fields (init is ignored for it).
func (db *DB) EnsureThread(ctx context.Context, key ThreadKey, init ThreadInit) (Thread, bool, error) {
	if err := key.validate(); err != nil {
		return Thread{}, false, opError("ensure thread", err)
	}
	// Most calls find the thread: answer them from the read pool, without
	// taking the write lock.
	if t, err := db.GetThread(ctx, key); err == nil || !errors.Is(err, ErrNotFound) {
		return t, false, err
	}
	var t Thread
	var created bool
	err := db.inUrgentTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		t, created, err = db.ensureThreadIn(ctx, tx, key, init, "", db.nowMS())
		return err
	})
	if err != nil {
		return Thread{}, false, opError("ensure thread", err)
	}
	return t, created, nil
}

// ensureThreadIn creates the thread with key in tx unless it exists, and
// returns it. A new thread is stored as active at now, with lastSeen (the id
// of the message that creates it, or "") as its newest message seen.
func (db *DB) ensureThreadIn(ctx context.Context, tx *sql.Tx, key ThreadKey, init ThreadInit, lastSeen string, now int64) (Thread, bool, error) {
	ins, err := db.stmts.insertThread.in(ctx, tx)
	if err != nil {
		return Thread{}, false, err
	}
	t, err := scanThread(ins.QueryRowContext(ctx, key.Platform, key.Team, key.Channel, key.Thread, init.Repo, init.Branch, init.WorkspacePath, lastSeen, now))
	if !errors.Is(err, sql.ErrNoRows) {
		return t, err == nil, err
	}
	sel, err := db.stmts.threadByKey.in(ctx, tx)
	if err != nil {
		return Thread{}, false, err
	}
	t, err = scanThread(sel.QueryRowContext(ctx, key.Platform, key.Team, key.Channel, key.Thread))
	return t, false, err
}

// GetThread returns the thread with that key, or ErrNotFound.
func (db *DB) GetThread(ctx context.Context, key ThreadKey) (Thread, error) {
	t, err := scanThread(db.stmts.getThread.queryRow(ctx, db.r, key.Platform, key.Team, key.Channel, key.Thread))
	return t, lookupError("get thread", err)
}

// ThreadByID returns the thread with that id, or ErrNotFound.
func (db *DB) ThreadByID(ctx context.Context, id int64) (Thread, error) {
	t, err := scanThread(db.r.QueryRowContext(ctx, `SELECT `+threadColumns+threadFrom+`WHERE t.id = ?`, id))
	return t, lookupError("get thread", err)
}

// ActiveThreads returns every active thread, oldest first, for resuming at start.
func (db *DB) ActiveThreads(ctx context.Context) ([]Thread, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+threadColumns+threadFrom+`WHERE t.state = 'active' ORDER BY t.id`)
	if err != nil {
		return nil, opError("active threads", err)
	}
	defer rows.Close()
	var out []Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, opError("active threads", err)
		}
		out = append(out, t)
	}
	return out, opError("active threads", rows.Err())
}

// RecentThreads returns the platform's active threads a person wrote in at or
// after since, oldest first: the threads worth catching up on after a
// reconnect. Idle and closed threads are left out, however many there are.
func (db *DB) RecentThreads(ctx context.Context, platform string, since time.Time) ([]Thread, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+threadColumns+threadFrom+
		`WHERE t.platform = ? AND t.state = 'active' AND t.active_at >= ? ORDER BY t.id`, platform, since.UnixMilli())
	if err != nil {
		return nil, opError("recent threads", err)
	}
	defer rows.Close()
	var out []Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, opError("recent threads", err)
		}
		out = append(out, t)
	}
	return out, opError("recent threads", rows.Err())
}

// SetThreadWorkspace records the thread's repository, branch and workspace path.
func (db *DB) SetThreadWorkspace(ctx context.Context, threadID int64, ws ThreadInit) error {
	return db.updateThread(ctx, "set thread workspace", threadID,
		`UPDATE threads SET repo = ?, branch = ?, workspace_path = ?, updated_at = ? WHERE id = ?`,
		ws.Repo, ws.Branch, ws.WorkspacePath, db.nowMS(), threadID)
}

// SetThreadState records whether the thread is active or closed.
func (db *DB) SetThreadState(ctx context.Context, threadID int64, state ThreadState) error {
	if state != ThreadActive && state != ThreadClosed {
		return opError("set thread state", fmt.Errorf("unknown thread state %q", state))
	}
	return db.updateThread(ctx, "set thread state", threadID,
		`UPDATE threads SET state = ?, updated_at = ? WHERE id = ?`, state, db.nowMS(), threadID)
}

// SetLastSeenMessage records messageID as the newest message seen in the thread.
// It only moves forward: an older id (a late or replayed event) leaves the
// recorded one in place. AcceptInbound does this itself for the input it stores.
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
		return fmt.Errorf("storage: %s: %w", op, ErrNotFound)
	}
	return opError(op, err)
}
