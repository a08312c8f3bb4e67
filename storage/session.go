package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/threadsmith/threadsmith/agent"
)

// SessionInit is a new session's configuration.
type SessionInit struct {
	Model        string
	SystemPrompt string
	// Settings is free-form JSON (thinking level, queue modes, …); nil for none.
	Settings json.RawMessage
}

// Session is one conversation with the model, hosted by a thread. A thread's
// earlier sessions (before !reset) keep their rows and entries.
type Session struct {
	// ID is the session's public id, the one AppendEntries and LoadEntries take.
	ID           string
	ThreadID     int64
	Model        string
	SystemPrompt string
	Settings     json.RawMessage
	CreatedAt    time.Time
}

// CreateSession starts a new session on the thread and makes it the thread's
// current one.
func (db *DB) CreateSession(ctx context.Context, threadID int64, init SessionInit) (Session, error) {
	var settings any // NULL unless given
	if len(init.Settings) > 0 {
		if !json.Valid(init.Settings) {
			return Session{}, opError("create session", errors.New("settings are not valid JSON"))
		}
		settings = string(init.Settings)
	}
	s := Session{
		ID:           newSessionID(),
		ThreadID:     threadID,
		Model:        init.Model,
		SystemPrompt: init.SystemPrompt,
		Settings:     cloneRaw(init.Settings),
		CreatedAt:    fromMS(db.nowMS()),
	}
	var rowID int64
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO sessions (uid, thread_id, model, system_prompt, settings, created_at)
			VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
			s.ID, threadID, s.Model, s.SystemPrompt, settings, ms(s.CreatedAt)).Scan(&rowID)
		if err != nil {
			if isExtCode(err, codeForeignKey) {
				return fmt.Errorf("thread %d: %w", threadID, ErrNotFound)
			}
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE threads SET session_id = ?, updated_at = ? WHERE id = ?`, rowID, ms(s.CreatedAt), threadID)
		return err
	})
	if err != nil {
		return Session{}, opError("create session", err)
	}
	db.sessionIDs.Store(s.ID, rowID)
	return s, nil
}

// GetSession returns the session with that id, or ErrNotFound.
func (db *DB) GetSession(ctx context.Context, id string) (Session, error) {
	var s Session
	var settings sql.NullString
	var created int64
	err := db.r.QueryRowContext(ctx, `SELECT uid, thread_id, model, system_prompt, settings, created_at FROM sessions WHERE uid = ?`, id).
		Scan(&s.ID, &s.ThreadID, &s.Model, &s.SystemPrompt, &settings, &created)
	if err != nil {
		return Session{}, lookupError("get session", err)
	}
	if settings.Valid {
		s.Settings = json.RawMessage(settings.String)
	}
	s.CreatedAt = fromMS(created)
	return s, nil
}

// SetSessionModel records the session's model (the transcript's model_change
// entry is the agent's to append).
func (db *DB) SetSessionModel(ctx context.Context, id, model string) error {
	return opError("set session model", db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, "session "+id, `UPDATE sessions SET model = ? WHERE uid = ?`, model, id)
	}))
}

// NextSeq returns the session's next free entry sequence number (0 for a
// session without entries). The store is the authority on sequence numbers:
// a session whose append was refused as a duplicate moves its entries here
// (agent.SeqSource).
func (db *DB) NextSeq(ctx context.Context, sessionID string) (int64, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return 0, opError("next seq", err)
	}
	var next int64
	// Read on the writer, behind every write already committed: a reader
	// connection could see a snapshot without the conflicting append.
	err = db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT coalesce(max(seq) + 1, 0) FROM entries WHERE session_id = ?`, sid).Scan(&next)
	})
	return next, opError("next seq", err)
}

var _ agent.SeqSource = (*DB)(nil)

// sessionRowID maps a public session id to its row id.
func (db *DB) sessionRowID(ctx context.Context, id string) (int64, error) {
	if v, ok := db.sessionIDs.Load(id); ok {
		return v.(int64), nil
	}
	var rowID int64
	err := db.r.QueryRowContext(ctx, `SELECT id FROM sessions WHERE uid = ?`, id).Scan(&rowID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	db.sessionIDs.Store(id, rowID)
	return rowID, nil
}

// newSessionID returns a random public session id: 26 base32 characters
// (130 random bits), safe in logs, file names and URLs.
func newSessionID() string { return rand.Text() }

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}
