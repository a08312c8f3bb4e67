package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RunOutcome says how a run ended. The constants are the ones threadsmith
// writes; any non-empty text is stored as given.
type RunOutcome string

const (
	RunDone        RunOutcome = "done"        // the agent finished
	RunFailed      RunOutcome = "error"       // the agent gave up on an error
	RunStopped     RunOutcome = "stopped"     // !stop
	RunInterrupted RunOutcome = "interrupted" // found running at start: the process died
)

// Run is one run of the agent on a thread's session.
type Run struct {
	ID        int64
	ThreadID  int64
	Thread    ThreadKey // where to tell people about it
	SessionID string
	InboundID int64 // the input that started it, 0 if none
	StartedAt time.Time
	EndedAt   time.Time  // zero while running
	Outcome   RunOutcome // "" while running
}

// StartRun records that a run began on the thread's session, started by the
// inbound message inboundID (0 for none), and returns its id.
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
		err = fmt.Errorf("thread %d or inbound %d: %w", threadID, inboundID, ErrNotFound)
	}
	if err != nil {
		return 0, opError("start run", err)
	}
	return id, nil
}

// FinishRun records how a run ended, with the usage of its replies
// (RunUsageOf). A run that already ended (or was marked interrupted) is
// ErrRunEnded; an unknown one ErrNotFound.
func (db *DB) FinishRun(ctx context.Context, runID int64, outcome RunOutcome) error {
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
			return fmt.Errorf("run %d: %w", runID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("run %d: %w", runID, ErrRunEnded)
	})
	if err == nil && db.hooks.RunFinished != nil {
		db.hooks.RunFinished(outcome, time.Duration(ended-started)*time.Millisecond)
	}
	return opError("finish run", err)
}

const runColumns = `r.id, r.thread_id, t.platform, t.team, t.channel, t.thread, s.uid, coalesce(r.inbound_id, 0),
	r.started_at, coalesce(r.ended_at, 0), coalesce(r.outcome, '')`

const runFrom = ` FROM runs r JOIN threads t ON t.id = r.thread_id JOIN sessions s ON s.id = r.session_id `

func scanRun(r scanner) (Run, error) {
	var run Run
	var started, ended int64
	err := r.Scan(&run.ID, &run.ThreadID, &run.Thread.Platform, &run.Thread.Team, &run.Thread.Channel, &run.Thread.Thread,
		&run.SessionID, &run.InboundID, &started, &ended, &run.Outcome)
	run.StartedAt = fromMS(started)
	if ended != 0 {
		run.EndedAt = fromMS(ended)
	}
	return run, err
}

// GetRun returns the run with that id, or ErrNotFound.
func (db *DB) GetRun(ctx context.Context, runID int64) (Run, error) {
	run, err := scanRun(db.r.QueryRowContext(ctx, `SELECT `+runColumns+runFrom+`WHERE r.id = ?`, runID))
	return run, lookupError("get run", err)
}

// InterruptRuns marks every run still in progress as interrupted and returns
// them (oldest first) with their threads, so the bridge can say so in each
// thread. Called once at start, when no run of this process has begun: a run
// found in progress then was cut off by the previous process's death. Under
// a lease (WithLease) it is the new owner's of a thread taken over: only that
// thread's runs, and ErrFenced once the lease is stale.
func (db *DB) InterruptRuns(ctx context.Context) ([]Run, error) {
	var runs []Run
	err := db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		runs = runs[:0] // fn may run more than once (inTx)
		var thread any  // nil: every thread
		if l, ok := LeaseFrom(ctx); ok {
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
			now, RunInterrupted, thread); err != nil {
			return err
		}
		for i := range runs {
			runs[i].EndedAt, runs[i].Outcome = fromMS(now), RunInterrupted
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
			db.hooks.RunFinished(RunInterrupted, r.EndedAt.Sub(r.StartedAt))
		}
	}
	return runs, nil
}
