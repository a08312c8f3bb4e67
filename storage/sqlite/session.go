package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// CreateSession implements storage.Store.
func (db *DB) CreateSession(ctx context.Context, threadID int64, init storage.SessionInit) (storage.Session, error) {
	var settings any // NULL unless given
	if len(init.Settings) > 0 {
		if !json.Valid(init.Settings) {
			return storage.Session{}, opError("create session", errors.New("settings are not valid JSON"))
		}
		settings = string(init.Settings)
	}
	s := storage.Session{
		ID:           backend.NewSessionID(),
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
				return fmt.Errorf("thread %d: %w", threadID, storage.ErrNotFound)
			}
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE threads SET session_id = ?, updated_at = ? WHERE id = ?`, rowID, ms(s.CreatedAt), threadID)
		return err
	})
	if err != nil {
		return storage.Session{}, opError("create session", err)
	}
	db.sessionIDs.Store(s.ID, rowID)
	return s, nil
}

// GetSession implements storage.Store.
func (db *DB) GetSession(ctx context.Context, id string) (storage.Session, error) {
	var s storage.Session
	var settings sql.NullString
	var created int64
	err := db.r.QueryRowContext(ctx, `SELECT uid, thread_id, model, system_prompt, settings, created_at FROM sessions WHERE uid = ?`, id).
		Scan(&s.ID, &s.ThreadID, &s.Model, &s.SystemPrompt, &settings, &created)
	if err != nil {
		return storage.Session{}, lookupError("get session", err)
	}
	if settings.Valid {
		s.Settings = json.RawMessage(settings.String)
	}
	s.CreatedAt = fromMS(created)
	return s, nil
}

// SetSessionModel implements storage.Store.
func (db *DB) SetSessionModel(ctx context.Context, id, model string) error {
	return opError("set session model", db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, "session "+id, `UPDATE sessions SET model = ? WHERE uid = ?`, model, id)
	}))
}

// NextSeq implements storage.Store. It reads on the writer, behind every
// write already committed.
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

// sessionRowID maps a public session id to its row id.
func (db *DB) sessionRowID(ctx context.Context, id string) (int64, error) {
	if v, ok := db.sessionIDs.Load(id); ok {
		return v.(int64), nil
	}
	var rowID int64
	err := db.r.QueryRowContext(ctx, `SELECT id FROM sessions WHERE uid = ?`, id).Scan(&rowID)
	if errors.Is(err, sql.ErrNoRows) {
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
