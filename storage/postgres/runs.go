package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
)

// Runs.

// StartRun implements storage.RunStore.
func (db *DB) StartRun(ctx context.Context, threadID int64, sessionID string, inboundID int64) (int64, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return 0, opError("start run", err)
	}
	var inbound *int64
	if inboundID != 0 {
		inbound = &inboundID
	}
	var id int64
	err = db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := checkFence(ctx, tx, threadID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO runs (thread_id, session_id, inbound_id, started_at) VALUES ($1, $2, $3, $4) RETURNING id`,
			threadID, sid, inbound, db.nowMS()).Scan(&id)
	})
	if isCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d or inbound %d: %w", threadID, inboundID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError("start run", err)
	}
	return id, nil
}

// FinishRun implements storage.RunStore.
func (db *DB) FinishRun(ctx context.Context, runID int64, outcome storage.RunOutcome) error {
	if outcome == "" {
		return opError("finish run", errors.New("empty outcome"))
	}
	var started, ended int64
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := checkFenceOf(ctx, tx, "runs", runID); err != nil {
			return err
		}
		ended = db.nowMS()
		err := tx.QueryRow(ctx, `UPDATE runs SET ended_at = $1, outcome = $2 WHERE id = $3 AND ended_at IS NULL RETURNING started_at`,
			ended, string(outcome), runID).Scan(&started)
		if err == nil {
			return recordRunUsage(ctx, tx, runID)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1`, runID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %d: %w", runID, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("run %d: %w", runID, storage.ErrRunEnded)
	})
	if err == nil && db.hooks.RunFinished != nil {
		db.hooks.RunFinished(outcome, time.Duration(ended-started)*time.Millisecond)
	}
	return opError("finish run", err)
}

const runColumns = `r.id, r.thread_id, t.platform, t.team, t.channel, t.thread, s.uid, coalesce(r.inbound_id, 0),
	r.started_at, coalesce(r.ended_at, 0), coalesce(r.outcome, '')`

const runFrom = ` FROM runs r JOIN threads t ON t.id = r.thread_id JOIN sessions s ON s.id = r.session_id `

func scanRun(r pgx.Row) (storage.Run, error) {
	var run storage.Run
	var started, ended int64
	var outcome string
	err := r.Scan(&run.ID, &run.ThreadID, &run.Thread.Platform, &run.Thread.Team, &run.Thread.Channel, &run.Thread.Thread,
		&run.SessionID, &run.InboundID, &started, &ended, &outcome)
	run.Outcome = storage.RunOutcome(outcome)
	run.StartedAt = fromMS(started)
	if ended != 0 {
		run.EndedAt = fromMS(ended)
	}
	return run, err
}

// GetRun implements storage.RunStore.
func (db *DB) GetRun(ctx context.Context, runID int64) (storage.Run, error) {
	r, err := db.reader()
	if err != nil {
		return storage.Run{}, opError("get run", err)
	}
	run, err := scanRun(r.QueryRow(ctx, `SELECT `+runColumns+runFrom+`WHERE r.id = $1`, runID))
	return run, lookupError("get run", err)
}

// InterruptRuns implements storage.RunStore, marking the runs in one
// statement.
func (db *DB) InterruptRuns(ctx context.Context) ([]storage.Run, error) {
	var runs []storage.Run
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		runs = runs[:0]
		var thread *int64 // nil: every thread
		if l, ok := storage.LeaseFrom(ctx); ok {
			if err := checkFence(ctx, tx, l.ThreadID); err != nil {
				return err
			}
			thread = &l.ThreadID
		}
		rows, err := tx.Query(ctx, `WITH r AS (
				UPDATE runs SET ended_at = $1, outcome = $2 WHERE ended_at IS NULL AND ($3::bigint IS NULL OR thread_id = $3)
				RETURNING *)
			SELECT `+runColumns+` FROM r JOIN threads t ON t.id = r.thread_id JOIN sessions s ON s.id = r.session_id ORDER BY r.id`,
			db.nowMS(), string(storage.RunInterrupted), thread)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			run, err := scanRun(rows)
			if err != nil {
				return err
			}
			runs = append(runs, run)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range runs {
			if err := recordRunUsage(ctx, tx, r.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, opError("interrupt runs", err)
	}
	if db.hooks.RunFinished != nil {
		for _, r := range runs {
			db.hooks.RunFinished(storage.RunInterrupted, r.EndedAt.Sub(r.StartedAt))
		}
	}
	return runs, nil
}

// ThreadRuns implements storage.HistoryStore.
func (db *DB) ThreadRuns(ctx context.Context, threadID int64) ([]storage.Run, error) {
	return queryAll(ctx, db, "thread runs", scanRun, `SELECT `+runColumns+runFrom+`WHERE r.thread_id = $1 ORDER BY r.id`, threadID)
}

// WaitingRuns implements storage.Store.
func (db *DB) WaitingRuns(ctx context.Context) ([]storage.Run, error) {
	return queryAll(ctx, db, "waiting runs", scanRun, `SELECT `+runColumns+runFrom+`WHERE r.outcome = $1
		AND NOT EXISTS (SELECT 1 FROM runs n WHERE n.thread_id = r.thread_id AND n.id > r.id) ORDER BY r.id`, string(storage.RunWaiting))
}

// Outbound.

// RecordOutbound implements storage.OutboundStore.
func (db *DB) RecordOutbound(ctx context.Context, o storage.Outbound) (int64, error) {
	switch o.Kind {
	case storage.OutboundStatus, storage.OutboundAnswer, storage.OutboundNotice, storage.OutboundAck:
	default:
		return 0, opError("record outbound", fmt.Errorf("unknown kind %q", o.Kind))
	}
	if o.Channel == "" || o.MessageID == "" {
		return 0, opError("record outbound", errors.New("channel and message id are required"))
	}
	var run *int64
	if o.RunID != 0 {
		run = &o.RunID
	}
	now := db.nowMS()
	var id int64
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := checkFence(ctx, tx, o.ThreadID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO outbound (thread_id, run_id, kind, channel, message_id, text, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id`,
			o.ThreadID, run, string(o.Kind), o.Channel, o.MessageID, text(o.Text), now).Scan(&id)
	})
	if isCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d or run %d: %w", o.ThreadID, o.RunID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError("record outbound", err)
	}
	return id, nil
}

// UpdateOutbound implements storage.OutboundStore.
func (db *DB) UpdateOutbound(ctx context.Context, id int64, body string) error {
	return opError("update outbound", db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := checkFenceOf(ctx, tx, "outbound", id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE outbound SET text = $1, updated_at = $2 WHERE id = $3`, text(body), db.nowMS(), id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("outbound %d: %w", id, storage.ErrNotFound)
		}
		return nil
	}))
}

const outboundColumns = `id, thread_id, coalesce(run_id, 0), kind, channel, message_id, text, created_at, updated_at`

func scanOutbound(r pgx.Row) (storage.Outbound, error) {
	var o storage.Outbound
	var kind string
	var created, updated int64
	err := r.Scan(&o.ID, &o.ThreadID, &o.RunID, &kind, &o.Channel, &o.MessageID, &o.Text, &created, &updated)
	o.Kind = storage.OutboundKind(kind)
	o.CreatedAt, o.UpdatedAt = fromMS(created), fromMS(updated)
	return o, err
}

// OutboundForRun implements storage.OutboundStore.
func (db *DB) OutboundForRun(ctx context.Context, runID int64) ([]storage.Outbound, error) {
	return queryAll(ctx, db, "outbound for run", scanOutbound, `SELECT `+outboundColumns+` FROM outbound WHERE run_id = $1 ORDER BY id`, runID)
}

// LastOutbound implements storage.OutboundStore.
func (db *DB) LastOutbound(ctx context.Context, threadID int64, kind storage.OutboundKind) (storage.Outbound, error) {
	out, err := queryAll(ctx, db, "last outbound", scanOutbound, `SELECT `+outboundColumns+` FROM outbound
		WHERE thread_id = $1 AND kind = $2 ORDER BY id DESC LIMIT 1`, threadID, string(kind))
	if err != nil {
		return storage.Outbound{}, err
	}
	if len(out) == 0 {
		return storage.Outbound{}, fmt.Errorf("storage: last outbound: %w", storage.ErrNotFound)
	}
	return out[0], nil
}

// Pushes.

// RecordPush implements storage.PushStore.
func (db *DB) RecordPush(ctx context.Context, p storage.Push) (int64, error) {
	switch p.Result {
	case storage.PushOK, storage.PushRejected, storage.PushError:
	default:
		return 0, opError("record push", fmt.Errorf("unknown result %q", p.Result))
	}
	if p.Branch == "" {
		return 0, opError("record push", errors.New("empty branch"))
	}
	var id int64
	err := db.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO pushes (thread_id, branch, sha, result, detail, pushed_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, p.ThreadID, p.Branch, p.SHA, string(p.Result), text(p.Detail), db.nowMS()).Scan(&id)
	})
	if isCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d: %w", p.ThreadID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError("record push", err)
	}
	if db.hooks.PushRecorded != nil {
		db.hooks.PushRecorded(p.Result)
	}
	return id, nil
}

func scanPush(r pgx.Row) (storage.Push, error) {
	var p storage.Push
	var result string
	var at int64
	err := r.Scan(&p.ID, &p.ThreadID, &p.Branch, &p.SHA, &result, &p.Detail, &at)
	p.Result = storage.PushResult(result)
	p.At = fromMS(at)
	return p, err
}

const pushColumns = `id, thread_id, branch, sha, result, detail, pushed_at`

// LastPush implements storage.PushStore.
func (db *DB) LastPush(ctx context.Context, threadID int64) (storage.Push, error) {
	r, err := db.reader()
	if err != nil {
		return storage.Push{}, opError("last push", err)
	}
	p, err := scanPush(r.QueryRow(ctx, `SELECT `+pushColumns+` FROM pushes WHERE thread_id = $1 ORDER BY id DESC LIMIT 1`, threadID))
	if err != nil {
		return storage.Push{}, lookupError("last push", err)
	}
	return p, nil
}

// ThreadPushes implements storage.HistoryStore.
func (db *DB) ThreadPushes(ctx context.Context, threadID int64) ([]storage.Push, error) {
	return queryAll(ctx, db, "thread pushes", scanPush, `SELECT `+pushColumns+` FROM pushes WHERE thread_id = $1 ORDER BY id`, threadID)
}
