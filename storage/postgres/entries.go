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
	// the session's snapshot dropped when an entry is at or below its last
	// seq (a gap filled late: the snapshot lacks it, and a resume reads only
	// what follows it), and the chat input a user message came from
	// delivered with them (only input of the session's own thread, and only
	// while pending). A data-modifying WITH runs to completion whether or
	// not it is read.
	const appendSQL = `WITH ins AS (
			INSERT INTO entries (session_id, seq, type, ts, payload)
			SELECT $1, e.seq, e.type, e.ts, e.payload::json
			FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[]) AS e (seq, type, ts, payload)),
		dropped AS (
			DELETE FROM session_snapshots WHERE session_id = $1 AND upto >= (SELECT min(s) FROM unnest($2::bigint[]) AS s))
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

// LoadLiveEntries implements storage.SessionStore: one statement reads the
// session's snapshot and the entries after it or, when it has none, its
// live entries in two index ranges, the settings from before the latest
// compaction and the entries from its first kept one (resumeQuery). The
// server does not sort them (a sort holds every payload before the first
// row goes out); they come mostly in Seq order and are put in it here.
func (db *DB) LoadLiveEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error) {
	entries, _, err := db.loadLive(ctx, sessionID)
	if err != nil {
		return nil, opError("load context", fmt.Errorf("session %s: %w", sessionID, err))
	}
	return entries, nil
}

// loadLive reads a session's live entries, and whether they came from a
// snapshot with nothing stored after it (a new one would be the same).
func (db *DB) loadLive(ctx context.Context, sessionID string) ([]transcript.Entry, bool, error) {
	snapped, rows, err := db.readResume(ctx, sessionID)
	if err != nil {
		return nil, false, err
	}
	sortBySeq(rows)
	if snapped == nil {
		if len(rows) == 0 {
			// No entries, or no such session (ErrNotFound).
			if _, err := db.sessionRowID(ctx, sessionID); err != nil {
				return nil, false, err
			}
		}
		return rows, false, nil
	}
	decoded, err := backend.DecodeSnapshot(snapped)
	if err == nil {
		if entries, ok := backend.FromSnapshot(decoded, rows); ok {
			return entries, len(rows) == 0, nil
		}
	} else {
		db.log.Warn("a session snapshot does not decode; reading its entries", "session", sessionID, "err", err)
	}
	// A snapshot that cannot be used: the entries, read by themselves.
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return nil, false, err
	}
	entries, err := db.queryEntries(ctx, loadLiveQuery, sid)
	if err != nil {
		return nil, false, err
	}
	sortBySeq(entries)
	return entries, false, nil
}

// resumeQuery reads, as of one moment, a session's snapshot (part 0) and
// the entries stored after it (part 1) or, when it has no snapshot, its
// live entries (part 2, as loadLiveQuery). It names the session by its
// uid: a resume after a restart, when the uid's row id is not known yet,
// is one round trip.
const resumeQuery = `
		WITH s AS (SELECT id FROM sessions WHERE uid = $1),
		snap AS (SELECT upto FROM session_snapshots WHERE session_id = (SELECT id FROM s)),
		k AS (SELECT coalesce((SELECT (payload ->> 'firstKeptSeq')::bigint FROM entries
		                       WHERE session_id = (SELECT id FROM s) AND type = 'compaction' ORDER BY seq DESC LIMIT 1), -1) AS first_kept
		      WHERE NOT EXISTS (SELECT 1 FROM snap))
		SELECT 0, upto, '', 0::bigint, snapshot, NULL::text FROM session_snapshots
		WHERE session_id = (SELECT id FROM s)
		UNION ALL
		SELECT 1, seq, type, ts, NULL::bytea, payload::text FROM entries
		WHERE session_id = (SELECT id FROM s) AND seq > (SELECT upto FROM snap)
		UNION ALL
		SELECT 2, seq, type, ts, NULL::bytea, payload::text FROM entries
		WHERE session_id = (SELECT id FROM s) AND seq >= (SELECT first_kept FROM k)
		UNION ALL
		SELECT 2, seq, type, ts, NULL::bytea, payload::text FROM entries
		WHERE session_id = (SELECT id FROM s) AND type IN ('model_change', 'thinking_level_change') AND seq < (SELECT first_kept FROM k)`

// readResume runs resumeQuery: the snapshot, nil when the session has
// none, and the entries read (after the snapshot, or the live ones).
func (db *DB) readResume(ctx context.Context, sessionID string) (snapshot []byte, entries []transcript.Entry, err error) {
	r, err := db.reader()
	if err != nil {
		return nil, nil, err
	}
	rows, err := r.Query(ctx, resumeQuery, sessionID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var d backend.Decoder
	var (
		part    int
		seq, ts int64
		typ     string
		// The row's own bytes, copied here: bytes.Clone does not zero
		// what it copies over, as a []byte destination's allocation does.
		snap, payload pgtype.DriverBytes
	)
	for rows.Next() {
		if err := rows.Scan(&part, &seq, &typ, &ts, &snap, &payload); err != nil {
			d.Abort()
			return nil, nil, err
		}
		if part == 0 {
			snapshot = bytes.Clone(snap)
			continue
		}
		d.Add(seq, typ, ts, bytes.Clone(payload))
	}
	if err := rows.Err(); err != nil {
		d.Abort()
		return nil, nil, err
	}
	entries, err = d.Result()
	return snapshot, entries, err
}

// SnapshotSession implements storage.SessionStore: the live entries, read
// as a resume reads them, encoded and stored unless the snapshot is
// current. The write is not fenced by the session's owner: it only repeats
// what the entries hold, and an older snapshot never replaces a newer one
// (backend.SaveSnapshot).
func (db *DB) SnapshotSession(ctx context.Context, sessionID string) error {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return opError("snapshot session", err)
	}
	entries, current, err := db.loadLive(ctx, sessionID)
	if err != nil || current || len(entries) == 0 {
		return opError("snapshot session", err)
	}
	args, err := backend.SaveSnapshotArgs(sid, entries)
	if err == nil {
		err = db.exec(ctx, backend.SaveSnapshot, args...)
	}
	return opError("snapshot session", err)
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
