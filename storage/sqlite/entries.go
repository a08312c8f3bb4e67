package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"unsafe"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// AppendEntries implements storage.Store. The entries go in one transaction,
// whose commit may be shared with other writes arriving at the same moment
// (see commitBatch); JSON is encoded before the write lock is taken.
func (db *DB) AppendEntries(ctx context.Context, sessionID string, entries []transcript.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	// Encode before taking the write lock: JSON is the costly part.
	rows := make([]backend.Row, len(entries))
	var inputs []int64
	compacted := false
	for i, e := range entries {
		r, err := backend.Encode(e)
		if err != nil {
			return opError("append entries", err)
		}
		rows[i] = r
		if r.InputID != 0 {
			inputs = append(inputs, r.InputID)
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
			if _, err := st.ExecContext(ctx, sid, r.Seq, r.Type, r.TS, r.Payload); err != nil {
				if isExtCode(err, codePrimaryKey) {
					if i == 0 && storedAlready(ctx, tx, sid, rows) {
						return nil // a retry of an append that was committed
					}
					return &storage.DuplicateEntryError{SessionID: sessionID, Seq: r.Seq}
				}
				return fmt.Errorf("seq %d: %w", r.Seq, err)
			}
		}
		// An entry at or below the snapshot's last seq (a gap filled late)
		// is not in the snapshot, and a resume reads only what follows
		// it: the snapshot goes, and the next one is taken from the rows.
		drop, err := db.stmts.dropSnapshot.in(ctx, tx)
		if err != nil {
			return err
		}
		if _, err := drop.ExecContext(ctx, sid, minSeq(rows)); err != nil {
			return fmt.Errorf("dropping the session's snapshot: %w", err)
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

// LoadEntries implements storage.Store, with one query.
func (db *DB) LoadEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return nil, opError("load entries", err)
	}
	out, err := db.queryEntries(ctx, &db.stmts.loadEntries, sid)
	if err != nil {
		return nil, opError("load entries", fmt.Errorf("session %s: %w", sessionID, err))
	}
	return out, nil
}

// LoadContext implements storage.Store.
func (db *DB) LoadContext(ctx context.Context, sessionID string) (transcript.Context, error) {
	entries, err := db.LoadLiveEntries(ctx, sessionID)
	if err != nil {
		return transcript.Context{}, err
	}
	return transcript.BuildContext(entries), nil
}

// LoadLiveEntries implements storage.Store: the session's snapshot and the
// entries after it, or, without a usable snapshot, two index ranges, so the
// compacted messages are never visited (loadLiveQuery).
func (db *DB) LoadLiveEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return nil, opError("load context", err)
	}
	entries, _, err := db.loadLive(ctx, sid)
	if err != nil {
		return nil, opError("load context", fmt.Errorf("session %s: %w", sessionID, err))
	}
	return entries, nil
}

// loadLive reads a session's live entries, and whether they came from a
// snapshot with nothing stored after it (a new one would be the same).
func (db *DB) loadLive(ctx context.Context, sid int64) ([]transcript.Entry, bool, error) {
	if entries, current, ok, err := db.liveFromSnapshot(ctx, sid); err != nil || ok {
		return entries, current, err
	}
	entries, err := db.queryEntries(ctx, &db.stmts.loadLive, sid)
	if err != nil {
		return nil, false, err
	}
	sortBySeq(entries)
	return entries, false, nil
}

// liveFromSnapshot reads the live entries from the session's snapshot and
// the entries stored after it; ok is false when there is no snapshot or it
// cannot be used (see backend.FromSnapshot), and the entries must be read.
// The snapshot holds every entry at or below its last seq (an append below
// it drops it: AppendEntries), so it lacks only the entries after it, read
// next.
func (db *DB) liveFromSnapshot(ctx context.Context, sid int64) (entries []transcript.Entry, current, ok bool, err error) {
	var upto int64
	// The driver copies each blob it returns into a slice of its own and
	// never uses that slice again (TestDriverBlobsAreFresh): the snapshot
	// can be kept without a second copy.
	var snap sql.RawBytes
	rows, err := db.stmts.loadSnapshot.rows(ctx, db.r, sid)
	if err != nil {
		return nil, false, false, err
	}
	if rows.Next() {
		err = rows.Scan(&upto, &snap)
	}
	if cerr := rows.Close(); err == nil {
		err = cmp.Or(rows.Err(), cerr)
	}
	if err != nil || snap == nil {
		return nil, false, false, err
	}
	snapped, derr := backend.DecodeSnapshot(snap)
	if derr != nil {
		db.log.Warn("a session snapshot does not decode; reading its entries", "session_row", sid, "err", derr)
		return nil, false, false, nil
	}
	tail, err := db.queryEntries(ctx, &db.stmts.loadAfter, sid, upto)
	if err != nil {
		return nil, false, false, err
	}
	sortBySeq(tail)
	entries, ok = backend.FromSnapshot(snapped, tail)
	return entries, len(tail) == 0, ok, nil
}

// SnapshotSession implements storage.Store: the live entries, read as a
// resume reads them, encoded and stored unless the snapshot is current.
// The write is not fenced by the session's owner: it only repeats what the
// entries hold, and an older snapshot never replaces a newer one
// (backend.SaveSnapshot).
func (db *DB) SnapshotSession(ctx context.Context, sessionID string) error {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return opError("snapshot session", err)
	}
	entries, current, err := db.loadLive(ctx, sid)
	if err != nil || current || len(entries) == 0 {
		return opError("snapshot session", err)
	}
	args, err := backend.SaveSnapshotArgs(sid, entries)
	if err == nil {
		err = db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, backend.SaveSnapshot, args...)
			return err
		})
	}
	return opError("snapshot session", err)
}

// queryEntries runs a read statement returning (seq, type, ts, payload) rows
// in order and decodes them. Decoding JSON costs several times the reading, so
// large results are decoded by parallel workers while the rows are still read.
func (db *DB) queryEntries(ctx context.Context, h *hotStmt, args ...any) ([]transcript.Entry, error) {
	rows, err := h.rows(ctx, db.r, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var d backend.Decoder
	var (
		seq, ts int64
		typ     string
		payload string // the driver's own string: nothing else holds it
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &typ, &ts, &payload); err != nil {
			d.Abort()
			return nil, err
		}
		// A string's bytes never change: the decoded message may share them
		// (msgjson.UnmarshalMessageShared) instead of copying them again.
		d.Add(seq, typ, ts, unsafe.Slice(unsafe.StringData(payload), len(payload)))
	}
	if err := rows.Err(); err != nil {
		d.Abort()
		return nil, err
	}
	return d.Result()
}

// minSeq is the lowest seq of rows.
func minSeq(rows []backend.Row) int64 {
	m := rows[0].Seq
	for _, r := range rows[1:] {
		m = min(m, r.Seq)
	}
	return m
}

// storedAlready reports whether the session holds exactly these entries at
// their sequence numbers: the append is a retry of one that was committed
// (its caller saw an error, a connection lost in the commit), and succeeds
// without writing, as AppendEntries' contract says.
func storedAlready(ctx context.Context, tx *sql.Tx, sid int64, rows []backend.Row) bool {
	for _, r := range rows {
		var typ, payload string
		var ts int64
		err := tx.QueryRowContext(ctx, `SELECT type, ts, payload FROM entries WHERE session_id = ? AND seq = ?`, sid, r.Seq).Scan(&typ, &ts, &payload)
		if err != nil || typ != r.Type || ts != r.TS || payload != r.Payload {
			return false
		}
	}
	return true
}

// sortBySeq puts entries read in index ranges in Seq order; they mostly are.
func sortBySeq(entries []transcript.Entry) {
	bySeq := func(a, b transcript.Entry) int { return cmp.Compare(a.Seq, b.Seq) }
	if !slices.IsSortedFunc(entries, bySeq) {
		slices.SortStableFunc(entries, bySeq)
	}
}
