package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
)

var _ agent.Store = (*DB)(nil)

// AppendEntries stores entries of a session atomically: all of them or, on
// error, none (one transaction, possibly a commit shared with other writes
// arriving at the same moment: see commitBatch). Each entry's Seq is its place in the
// record; a seq the session already has is refused with a *DuplicateEntryError.
// A user message carrying an InputID marks that inbound message delivered in
// the same transaction (see Inbound: delivery is derived from the entry).
// The entries are durable when it returns. Gaps in seq are allowed (an append
// that failed is not retried by the agent); order is by seq, never by time.
func (db *DB) AppendEntries(ctx context.Context, sessionID string, entries []transcript.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	// Encode before taking the write lock: JSON is the costly part.
	rows := make([]entryRow, len(entries))
	var inputs []int64
	compacted := false
	for i, e := range entries {
		r, err := encodeEntry(e)
		if err != nil {
			return opError("append entries", err)
		}
		rows[i] = r
		if id, ok := inputOf(e); ok {
			inputs = append(inputs, id)
		}
		compacted = compacted || e.Type == transcript.EntryCompaction
	}
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return opError("append entries", err)
	}
	err = db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := checkFenceOf(ctx, tx, "sessions", sid); err != nil {
			return err
		}
		st, err := db.stmts.insertEntry.in(ctx, tx)
		if err != nil {
			return err
		}
		for i, r := range rows {
			if _, err := st.ExecContext(ctx, sid, r.seq, r.typ, r.ts, r.payload); err != nil {
				if isExtCode(err, codePrimaryKey) {
					if i == 0 && storedAlready(ctx, tx, sid, rows) {
						return nil // a retry of an append that was committed
					}
					return &DuplicateEntryError{SessionID: sessionID, Seq: r.seq}
				}
				return fmt.Errorf("seq %d: %w", r.seq, err)
			}
		}
		// The chat input a user message came from is delivered in the same
		// commit that stores the message: a crash can leave it neither
		// delivered-but-missing nor stored-but-replayed. Only input of the
		// session's own thread, and only while still pending.
		for _, id := range inputs {
			if _, err := tx.ExecContext(ctx, `UPDATE inbound SET state = 'delivered', updated_at = ?
				WHERE id = ? AND state IN ('received', 'queued')
				  AND thread_id = (SELECT thread_id FROM sessions WHERE id = ?)`, db.nowMS(), id, sid); err != nil {
				return fmt.Errorf("delivering inbound %d: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return opError("append entries", err)
	}
	if len(inputs) > 0 {
		crashpoint.Hit(crashpoint.Delivered)
	}
	if compacted {
		crashpoint.Hit(crashpoint.Compacted)
	}
	return nil
}

// inputOf returns the inbound id of the chat input a user message came from
// (llm.Message.InputID, the decimal id the bridge gave it).
func inputOf(e transcript.Entry) (int64, bool) {
	if e.Type != transcript.EntryMessage || e.Message == nil || e.Message.Role != llm.RoleUser || e.Message.InputID == "" {
		return 0, false
	}
	id, err := strconv.ParseInt(e.Message.InputID, 10, 64)
	return id, err == nil && id > 0
}

// LoadEntries returns a session's entries in seq order, with one query. The live
// context is transcript.BuildContext of the result; LoadContext builds it while
// decoding only the entries it needs.
func (db *DB) LoadEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return nil, opError("load entries", err)
	}
	out, err := db.queryEntries(ctx, `SELECT seq, type, ts, payload FROM entries WHERE session_id = ? ORDER BY seq`, sid)
	if err != nil {
		return nil, opError("load entries", fmt.Errorf("session %s: %w", sessionID, err))
	}
	return out, nil
}

// LoadContext returns the session's live context, equal to
// transcript.BuildContext(LoadEntries(…)), but reads and decodes only what that
// needs (see LoadLiveEntries). A session resumed after many compactions loads in
// time proportional to its live context, not to its history.
func (db *DB) LoadContext(ctx context.Context, sessionID string) (transcript.Context, error) {
	entries, err := db.LoadLiveEntries(ctx, sessionID)
	if err != nil {
		return transcript.Context{}, err
	}
	return transcript.BuildContext(entries), nil
}

// LoadLiveEntries returns the entries a resumed session needs, in seq order: the
// entries from the latest compaction's first kept entry on (the compaction
// itself included), and the model and thinking-level changes before them. Their
// BuildContext equals that of all entries, and the next compaction can be
// prepared from them.
func (db *DB) LoadLiveEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return nil, opError("load context", err)
	}
	// Two index ranges: everything from the latest compaction's first kept
	// entry on, and the model and thinking-level changes before it. The
	// compacted messages are never visited.
	entries, err := db.queryEntries(ctx, `
		WITH k AS (
			SELECT coalesce((SELECT payload ->> '$.firstKeptSeq' FROM entries
			                 WHERE session_id = ?1 AND type = 'compaction' ORDER BY seq DESC LIMIT 1), -1) AS first_kept)
		SELECT seq, type, ts, payload FROM entries
		WHERE session_id = ?1 AND seq >= (SELECT first_kept FROM k)
		UNION ALL
		SELECT seq, type, ts, payload FROM entries INDEXED BY entries_by_type
		WHERE session_id = ?1 AND type IN ('model_change', 'thinking_level_change') AND seq < (SELECT first_kept FROM k)
		ORDER BY seq`, sid)
	if err != nil {
		return nil, opError("load context", fmt.Errorf("session %s: %w", sessionID, err))
	}
	return entries, nil
}

// queryEntries runs a query returning (seq, type, ts, payload) rows in order
// and decodes them. Decoding JSON costs several times the reading, so large
// results are decoded by parallel workers while the rows are still read.
func (db *DB) queryEntries(ctx context.Context, query string, args ...any) ([]transcript.Entry, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var d decoder
	var (
		seq, ts int64
		typ     string
		payload string // the driver's own string: nothing else holds it
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &typ, &ts, &payload); err != nil {
			d.wait()
			return nil, err
		}
		// A string's bytes never change: the decoded message may share them
		// (msgjson.UnmarshalMessageShared) instead of copying them again.
		d.add(rawEntry{seq: seq, typ: typ, ts: ts, payload: unsafe.Slice(unsafe.StringData(payload), len(payload))})
	}
	if err := rows.Err(); err != nil {
		d.wait()
		return nil, err
	}
	return d.result()
}

// storedAlready reports whether the session holds exactly these entries at
// their sequence numbers: the append is a retry of one that was committed
// (its caller saw an error, a connection lost in the commit), and succeeds
// without writing, as AppendEntries' contract says.
func storedAlready(ctx context.Context, tx *sql.Tx, sid int64, rows []entryRow) bool {
	for _, r := range rows {
		var typ, payload string
		var ts int64
		err := tx.QueryRowContext(ctx, `SELECT type, ts, payload FROM entries WHERE session_id = ? AND seq = ?`, sid, r.seq).Scan(&typ, &ts, &payload)
		if err != nil || typ != r.typ || ts != r.ts || payload != r.payload {
			return false
		}
	}
	return true
}
