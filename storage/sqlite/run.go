package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// StartRun implements storage.Store.
func (db *DB) StartRun(ctx context.Context, threadID int64, sessionID string, inboundID int64) (int64, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return 0, opError("start run", err)
	}
	var inbound any
	if inboundID != 0 {
		inbound = inboundID
	}
	var id int64
	err = db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := checkFence(ctx, tx, threadID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO runs (thread_id, session_id, inbound_id, started_at) VALUES (?, ?, ?, ?) RETURNING id`,
			threadID, sid, inbound, db.nowMS()).Scan(&id)
	})
	if isExtCode(err, codeForeignKey) {
		err = fmt.Errorf("thread %d or inbound %d: %w", threadID, inboundID, storage.ErrNotFound)
	}
	if err != nil {
		return 0, opError("start run", err)
	}
	return id, nil
}

// FinishRun implements storage.Store.
func (db *DB) FinishRun(ctx context.Context, runID int64, outcome storage.RunOutcome) error {
	if outcome == "" {
		return opError("finish run", errors.New("empty outcome"))
	}
	var started, ended int64
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := checkFenceOf(ctx, tx, "runs", runID); err != nil {
			return err
		}
		ended = db.nowMS()
		err := tx.QueryRowContext(ctx, `UPDATE runs SET ended_at = ?, outcome = ? WHERE id = ? AND ended_at IS NULL RETURNING started_at`,
			ended, outcome, runID).Scan(&started)
		if err == nil {
			return recordRunUsage(ctx, tx, runID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, runID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
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

func scanRun(r scanner) (storage.Run, error) {
	var run storage.Run
	var started, ended int64
	err := r.Scan(&run.ID, &run.ThreadID, &run.Thread.Platform, &run.Thread.Team, &run.Thread.Channel, &run.Thread.Thread,
		&run.SessionID, &run.InboundID, &started, &ended, &run.Outcome)
	run.StartedAt = fromMS(started)
	if ended != 0 {
		run.EndedAt = fromMS(ended)
	}
	return run, err
}

// GetRun implements storage.Store.
func (db *DB) GetRun(ctx context.Context, runID int64) (storage.Run, error) {
	run, err := scanRun(db.r.QueryRowContext(ctx, `SELECT `+runColumns+runFrom+`WHERE r.id = ?`, runID))
	return run, lookupError("get run", err)
}

// InterruptRuns implements storage.Store.
func (db *DB) InterruptRuns(ctx context.Context) ([]storage.Run, error) {
	var runs []storage.Run
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		runs = runs[:0] // fn may run more than once (inTx)
		var thread any  // nil: every thread
		if l, ok := storage.LeaseFrom(ctx); ok {
			if err := checkFence(ctx, tx, l.ThreadID); err != nil {
				return err
			}
			thread = l.ThreadID
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+runColumns+runFrom+`WHERE r.ended_at IS NULL AND (?1 IS NULL OR r.thread_id = ?1) ORDER BY r.id`, thread)
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
		if err := rows.Err(); err != nil {
			return err
		}
		if len(runs) == 0 {
			return nil
		}
		now := db.nowMS()
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET ended_at = ?1, outcome = ?2 WHERE ended_at IS NULL AND (?3 IS NULL OR thread_id = ?3)`,
			now, storage.RunInterrupted, thread); err != nil {
			return err
		}
		for i := range runs {
			runs[i].EndedAt, runs[i].Outcome = fromMS(now), storage.RunInterrupted
			if err := recordRunUsage(ctx, tx, runs[i].ID); err != nil {
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
