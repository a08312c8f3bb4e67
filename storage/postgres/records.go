package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// Threads.

const threadColumns = `t.id, t.platform, t.team, t.channel, t.thread, coalesce(s.uid, ''), t.repo, t.branch,
	t.workspace_path, t.state, t.last_seen_message, t.active_at, t.created_at, t.updated_at, t.origin`

const threadFrom = ` FROM threads t LEFT JOIN sessions s ON s.id = t.session_id `

func scanThread(r pgx.Row) (storage.Thread, error) {
	var t storage.Thread
	var active, created, updated int64
	var state string
	err := r.Scan(&t.ID, &t.Key.Platform, &t.Key.Team, &t.Key.Channel, &t.Key.Thread, &t.SessionID,
		&t.Repo, &t.Branch, &t.WorkspacePath, &state, &t.LastSeenMessage, &active, &created, &updated, &t.Origin)
	t.State = storage.ThreadState(state)
	t.ActiveAt, t.CreatedAt, t.UpdatedAt = fromMS(active), fromMS(created), fromMS(updated)
	return t, err
}

// EnsureThread implements storage.ThreadStore.
func (db *DB) EnsureThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit) (storage.Thread, bool, error) {
	if err := backend.CheckThreadKey(key); err != nil {
		return storage.Thread{}, false, opError("ensure thread", err)
	}
	if t, err := db.GetThread(ctx, key); err == nil || !errors.Is(err, storage.ErrNotFound) {
		return t, false, err
	}
	var t storage.Thread
	var created bool
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
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
// of the message that creates it, or "") as its newest message seen, and
// comes back from the INSERT (it has no session yet).
func (db *DB) ensureThreadIn(ctx context.Context, tx pgx.Tx, key storage.ThreadKey, init storage.ThreadInit, lastSeen string, now int64) (storage.Thread, bool, error) {
	t, err := scanThread(tx.QueryRow(ctx, `INSERT INTO threads (platform, team, channel, thread, repo, branch, workspace_path, last_seen_message, active_at, created_at, updated_at, origin)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9, $10) ON CONFLICT (platform, team, channel, thread) DO NOTHING
		RETURNING id, platform, team, channel, thread, ''::text, repo, branch, workspace_path, state, last_seen_message, active_at, created_at, updated_at, origin`,
		key.Platform, key.Team, key.Channel, key.Thread, init.Repo, init.Branch, init.WorkspacePath, lastSeen, now, init.Origin))
	if !errors.Is(err, pgx.ErrNoRows) {
		return t, err == nil, err
	}
	t, err = scanThread(tx.QueryRow(ctx, `SELECT `+threadColumns+threadFrom+
		`WHERE t.platform = $1 AND t.team = $2 AND t.channel = $3 AND t.thread = $4`,
		key.Platform, key.Team, key.Channel, key.Thread))
	return t, false, err
}

// GetThread implements storage.ThreadStore.
func (db *DB) GetThread(ctx context.Context, key storage.ThreadKey) (storage.Thread, error) {
	r, err := db.reader()
	if err != nil {
		return storage.Thread{}, opError("get thread", err)
	}
	t, err := scanThread(r.QueryRow(ctx, `SELECT `+threadColumns+threadFrom+
		`WHERE t.platform = $1 AND t.team = $2 AND t.channel = $3 AND t.thread = $4`,
		key.Platform, key.Team, key.Channel, key.Thread))
	return t, lookupError("get thread", err)
}

// ThreadByID implements storage.ThreadStore.
func (db *DB) ThreadByID(ctx context.Context, id int64) (storage.Thread, error) {
	r, err := db.reader()
	if err != nil {
		return storage.Thread{}, opError("get thread", err)
	}
	t, err := scanThread(r.QueryRow(ctx, `SELECT `+threadColumns+threadFrom+`WHERE t.id = $1`, id))
	return t, lookupError("get thread", err)
}

// ActiveThreads implements storage.ThreadStore.
func (db *DB) ActiveThreads(ctx context.Context) ([]storage.Thread, error) {
	return queryAll(ctx, db, "active threads", scanThread, `SELECT `+threadColumns+threadFrom+`WHERE t.state = 'active' ORDER BY t.id`)
}

// FindActiveThread implements storage.ThreadStore.
func (db *DB) FindActiveThread(ctx context.Context, q storage.ThreadQuery) (storage.Thread, error) {
	where, args, ok := backend.FindThreadWhere(q)
	if !ok {
		return storage.Thread{}, lookupError("find thread", pgx.ErrNoRows) // names no thread
	}
	r, err := db.reader()
	if err != nil {
		return storage.Thread{}, opError("find thread", err)
	}
	t, err := scanThread(r.QueryRow(ctx, `SELECT `+threadColumns+threadFrom+`WHERE`+where+`ORDER BY t.id LIMIT 1`, args...))
	return t, lookupError("find thread", err)
}

// RecentThreads implements storage.ThreadStore.
func (db *DB) RecentThreads(ctx context.Context, platform string, since time.Time) ([]storage.Thread, error) {
	return queryAll(ctx, db, "recent threads", scanThread, `SELECT `+threadColumns+threadFrom+
		`WHERE t.platform = $1 AND t.state = 'active' AND t.active_at >= $2 ORDER BY t.id`, platform, since.UnixMilli())
}

// SetThreadWorkspace implements storage.ThreadStore.
func (db *DB) SetThreadWorkspace(ctx context.Context, threadID int64, ws storage.ThreadInit) error {
	return db.execOne(ctx, "set thread workspace", fmt.Sprint("thread ", threadID),
		`UPDATE threads SET repo = $1, branch = $2, workspace_path = $3, updated_at = $4 WHERE id = $5`,
		ws.Repo, ws.Branch, ws.WorkspacePath, db.nowMS(), threadID)
}

// SetThreadState implements storage.ThreadStore.
func (db *DB) SetThreadState(ctx context.Context, threadID int64, state storage.ThreadState) error {
	if state != storage.ThreadActive && state != storage.ThreadClosed {
		return opError("set thread state", fmt.Errorf("unknown thread state %q", state))
	}
	return db.execOne(ctx, "set thread state", fmt.Sprint("thread ", threadID),
		`UPDATE threads SET state = $1, updated_at = $2 WHERE id = $3`, string(state), db.nowMS(), threadID)
}

// SetLastSeenMessage implements storage.ThreadStore.
func (db *DB) SetLastSeenMessage(ctx context.Context, threadID int64, messageID string) error {
	if messageID == "" {
		return nil
	}
	return opError("set last seen message", db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return db.bumpLastSeen(ctx, tx, threadID, messageID)
	}))
}

// bumpLastSeen moves last_seen_message forward only: platform message ids grow
// in length, then in byte order (COLLATE "C": a locale's order would differ).
func (db *DB) bumpLastSeen(ctx context.Context, tx pgx.Tx, threadID int64, messageID string) error {
	_, err := tx.Exec(ctx, `UPDATE threads SET last_seen_message = $1::text, updated_at = $2
		WHERE id = $3 AND (length($1::text) > length(last_seen_message)
			OR (length($1::text) = length(last_seen_message) AND $1::text COLLATE "C" > last_seen_message COLLATE "C"))`,
		messageID, db.nowMS(), threadID)
	return err
}

func (db *DB) execOne(ctx context.Context, op, what, query string, args ...any) error {
	return opError(op, db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, query, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%s: %w", what, storage.ErrNotFound)
		}
		return nil
	}))
}

// queryAll runs a read on the pool and scans every row.
func queryAll[T any](ctx context.Context, db *DB, op string, scan func(pgx.Row) (T, error), query string, args ...any) ([]T, error) {
	r, err := db.reader()
	if err != nil {
		return nil, opError(op, err)
	}
	rows, err := r.Query(ctx, query, args...)
	if err != nil {
		return nil, opError(op, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, opError(op, err)
		}
		out = append(out, v)
	}
	return out, opError(op, rows.Err())
}

// Sessions.

// CreateSession implements storage.SessionStore.
func (db *DB) CreateSession(ctx context.Context, threadID int64, init storage.SessionInit) (storage.Session, error) {
	var settings *string
	if len(init.Settings) > 0 {
		if !json.Valid(init.Settings) {
			return storage.Session{}, opError("create session", errors.New("settings are not valid JSON"))
		}
		s := string(init.Settings)
		settings = &s
	}
	now := db.nowMS()
	s := storage.Session{
		ID:           backend.NewSessionID(),
		ThreadID:     threadID,
		Model:        init.Model,
		SystemPrompt: init.SystemPrompt,
		Settings:     cloneRaw(init.Settings),
		CreatedAt:    fromMS(now),
	}
	var rowID int64
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO sessions (uid, thread_id, model, system_prompt, settings, created_at)
			VALUES ($1, $2, $3, $4, $5::text::json, $6) RETURNING id`,
			s.ID, threadID, s.Model, text(s.SystemPrompt), settings, now).Scan(&rowID)
		if err != nil {
			if isCode(err, codeForeignKey) {
				return fmt.Errorf("thread %d: %w", threadID, storage.ErrNotFound)
			}
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE threads SET session_id = $1, updated_at = $2 WHERE id = $3`, rowID, now, threadID)
		return err
	})
	if err != nil {
		return storage.Session{}, opError("create session", err)
	}
	db.sessionIDs.Store(s.ID, rowID)
	return s, nil
}

func scanSession(r pgx.Row) (storage.Session, error) {
	var s storage.Session
	var settings *string
	var created int64
	err := r.Scan(&s.ID, &s.ThreadID, &s.Model, &s.SystemPrompt, &settings, &created)
	if settings != nil {
		s.Settings = json.RawMessage(*settings)
	}
	s.CreatedAt = fromMS(created)
	return s, err
}

const sessionColumns = `uid, thread_id, model, system_prompt, settings::text, created_at`

// GetSession implements storage.SessionStore.
func (db *DB) GetSession(ctx context.Context, id string) (storage.Session, error) {
	r, err := db.reader()
	if err != nil {
		return storage.Session{}, opError("get session", err)
	}
	s, err := scanSession(r.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE uid = $1`, id))
	if err != nil {
		return storage.Session{}, lookupError("get session", err)
	}
	return s, nil
}

// SetSessionModel implements storage.SessionStore.
func (db *DB) SetSessionModel(ctx context.Context, id, model string) error {
	return db.execOne(ctx, "set session model", "session "+id, `UPDATE sessions SET model = $1 WHERE uid = $2`, model, id)
}

// NextSeq implements storage.SessionStore.
func (db *DB) NextSeq(ctx context.Context, sessionID string) (int64, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return 0, opError("next seq", err)
	}
	r, err := db.reader()
	if err != nil {
		return 0, opError("next seq", err)
	}
	var next int64
	err = r.QueryRow(ctx, `SELECT coalesce(max(seq) + 1, 0) FROM entries WHERE session_id = $1`, sid).Scan(&next)
	return next, opError("next seq", err)
}

func (db *DB) sessionRowID(ctx context.Context, id string) (int64, error) {
	if v, ok := db.sessionIDs.Load(id); ok {
		return v.(int64), nil
	}
	r, err := db.reader()
	if err != nil {
		return 0, err
	}
	var rowID int64
	err = r.QueryRow(ctx, `SELECT id FROM sessions WHERE uid = $1`, id).Scan(&rowID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("session %s: %w", id, storage.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	db.sessionIDs.Store(id, rowID)
	return rowID, nil
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// Events.

// MarkEventProcessed implements storage.InboundStore.
func (db *DB) MarkEventProcessed(ctx context.Context, platform, eventID string) (first bool, err error) {
	if platform == "" || eventID == "" {
		return false, opError("mark event processed", errors.New("platform and event id are required"))
	}
	now := db.nowMS()
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO processed_events (platform, event_id, seen_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			platform, eventID, now)
		if err != nil {
			return err
		}
		first = tag.RowsAffected() == 1
		retention := db.eventRetention.Milliseconds()
		last := db.lastPrune.Load()
		if now-last < retention/24 || !db.lastPrune.CompareAndSwap(last, now) {
			return nil
		}
		_, err = tx.Exec(ctx, `DELETE FROM processed_events WHERE seen_at < $1`, now-retention)
		return err
	})
	if err != nil {
		return false, opError("mark event processed", err)
	}
	return first, nil
}

// Ops.

// PendingInboundCounts implements storage.OpsStore.
func (db *DB) PendingInboundCounts(ctx context.Context) (map[string]int, error) {
	type count struct {
		state string
		n     int
	}
	rows, err := queryAll(ctx, db, "pending inbound counts", func(r pgx.Row) (count, error) {
		var c count
		err := r.Scan(&c.state, &c.n)
		return c, err
	}, `SELECT state, count(*) FROM inbound WHERE state IN ('received', 'queued') GROUP BY state`)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, c := range rows {
		out[c.state] = c.n
	}
	return out, nil
}
