package postgres

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// AppendEntries implements storage.SessionStore in one statement (one round
// trip): the entries, and the input they deliver.
func (db *DB) AppendEntries(ctx context.Context, sessionID string, entries []transcript.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	n := len(entries)
	seqs, ts := make([]int64, n), make([]int64, n)
	types, payloads := make([]string, n), make([]string, n)
	var inputs []int64
	compacted := false
	for i, e := range entries {
		r, err := backend.Encode(e)
		if err != nil {
			return opError("append entries", err)
		}
		seqs[i], types[i], ts[i], payloads[i] = r.Seq, r.Type, r.TS, r.Payload
		if r.InputID != 0 {
			inputs = append(inputs, r.InputID)
		}
		compacted = compacted || e.Type == transcript.EntryCompaction
	}
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return opError("append entries", err)
	}
	if inputs == nil {
		inputs = []int64{}
	}
	// One statement, so one round trip and atomic on its own: the entries,
	// and the chat input a user message came from delivered with them (only
	// input of the session's own thread, and only while pending). A
	// data-modifying WITH runs to completion whether or not it is read.
	const appendSQL = `WITH ins AS (
			INSERT INTO entries (session_id, seq, type, ts, payload)
			SELECT $1, e.seq, e.type, e.ts, e.payload::json
			FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[]) AS e (seq, type, ts, payload))
		UPDATE inbound SET state = 'delivered', updated_at = $6
		WHERE id = ANY($7) AND state IN ('received', 'queued')
		  AND thread_id = (SELECT thread_id FROM sessions WHERE id = $1)`
	args := []any{sid, seqs, types, ts, payloads, db.nowMS(), inputs}
	if _, leased := storage.LeaseFrom(ctx); leased {
		// Under a lease: the fence check and the append in one transaction.
		err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			if err := checkFenceOf(ctx, tx, "sessions", sid); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, appendSQL, args...)
			return err
		})
	} else {
		err = db.exec(ctx, appendSQL, args...)
	}
	if isCode(err, codeUnique) && constraintOf(err) == "entries_pkey" {
		err = db.duplicateOf(ctx, sessionID, sid, seqs, types, ts, payloads)
	}
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

// duplicateOf names the first seq of an append refused as a duplicate: one the
// session already had, or one the append carried twice. An append of entries
// the session holds already, identical, is a retry of one that was committed
// (its caller saw the connection drop in the commit): it succeeds.
func (db *DB) duplicateOf(ctx context.Context, sessionID string, sid int64, seqs []int64, types []string, ts []int64, payloads []string) error {
	var same int
	err := db.pool.QueryRow(ctx, `SELECT count(DISTINCT x.seq) FROM entries x
		JOIN unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[]) AS e (seq, type, ts, payload) ON x.seq = e.seq
		WHERE x.session_id = $1 AND x.type = e.type AND x.ts = e.ts AND x.payload::text = e.payload`, sid, seqs, types, ts, payloads).Scan(&same)
	if err == nil && same == len(seqs) {
		return nil
	}
	var seq *int64
	err = db.pool.QueryRow(ctx, `SELECT min(seq) FROM entries WHERE session_id = $1 AND seq = ANY($2)`, sid, seqs).Scan(&seq)
	if err == nil && seq != nil {
		return &storage.DuplicateEntryError{SessionID: sessionID, Seq: *seq}
	}
	for i, s := range seqs {
		if slices.Contains(seqs[:i], s) {
			return &storage.DuplicateEntryError{SessionID: sessionID, Seq: s}
		}
	}
	// Taken and gone again cannot happen (entries are never deleted); say
	// what is known.
	return &storage.DuplicateEntryError{SessionID: sessionID, Seq: seqs[0]}
}

// LoadEntries implements storage.SessionStore.
func (db *DB) LoadEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return nil, opError("load entries", err)
	}
	out, err := db.queryEntries(ctx, `SELECT seq, type, ts, payload::text FROM entries WHERE session_id = $1 ORDER BY seq`, sid)
	if err != nil {
		return nil, opError("load entries", fmt.Errorf("session %s: %w", sessionID, err))
	}
	return out, nil
}

// LoadContext implements storage.SessionStore.
func (db *DB) LoadContext(ctx context.Context, sessionID string) (transcript.Context, error) {
	entries, err := db.LoadLiveEntries(ctx, sessionID)
	if err != nil {
		return transcript.Context{}, err
	}
	return transcript.BuildContext(entries), nil
}

// LoadLiveEntries implements storage.SessionStore: two index ranges, the
// settings from before the latest compaction and the entries from its first
// kept one, in one statement. The server does not sort them (a sort holds
// every payload before the first row goes out); they come mostly in Seq
// order and are put in it here.
func (db *DB) LoadLiveEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return nil, opError("load context", err)
	}
	entries, err := db.queryEntries(ctx, loadLiveQuery, sid)
	if err != nil {
		return nil, opError("load context", fmt.Errorf("session %s: %w", sessionID, err))
	}
	sortBySeq(entries)
	return entries, nil
}

// loadLiveQuery reads a session's live entries (LoadLiveEntries).
const loadLiveQuery = `
		WITH k AS (
			SELECT coalesce((SELECT (payload ->> 'firstKeptSeq')::bigint FROM entries
			                 WHERE session_id = $1 AND type = 'compaction' ORDER BY seq DESC LIMIT 1), -1) AS first_kept)
		SELECT seq, type, ts, payload::text FROM entries
		WHERE session_id = $1 AND seq >= (SELECT first_kept FROM k)
		UNION ALL
		SELECT seq, type, ts, payload::text FROM entries
		WHERE session_id = $1 AND type IN ('model_change', 'thinking_level_change') AND seq < (SELECT first_kept FROM k)`

// sortBySeq puts entries read in index ranges in Seq order; they mostly are.
func sortBySeq(entries []transcript.Entry) {
	bySeq := func(a, b transcript.Entry) int { return cmp.Compare(a.Seq, b.Seq) }
	if !slices.IsSortedFunc(entries, bySeq) {
		slices.SortStableFunc(entries, bySeq)
	}
}

func (db *DB) queryEntries(ctx context.Context, query string, args ...any) ([]transcript.Entry, error) {
	r, err := db.reader()
	if err != nil {
		return nil, err
	}
	rows, err := r.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var d backend.Decoder
	var seq, ts int64
	var typ string
	var payload pgtype.DriverBytes // the row's own bytes: Add copies them
	for rows.Next() {
		if err := rows.Scan(&seq, &typ, &ts, &payload); err != nil {
			d.Abort()
			return nil, err
		}
		d.Add(seq, typ, ts, bytes.Clone(payload))
	}
	if err := rows.Err(); err != nil {
		d.Abort()
		return nil, err
	}
	return d.Result()
}
