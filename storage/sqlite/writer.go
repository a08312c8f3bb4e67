package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/threadsmith/threadsmith/storage"
)

// Group commit. Every write goes to one goroutine that owns the write
// connection. When several writes wait (50 busy threads finishing a message at
// once), it runs them in one transaction and commits once: a write is still
// all-or-nothing and durable when its method returns, but the commit's cost
// (WAL frames, locking) is paid once per batch instead of once per write,
// which keeps tail latency flat under load. Should a write of a batch fail,
// the batch is rolled back and run again around it (commitTaken).

// maxBatch bounds a batch so that one commit stays short.
const maxBatch = 64

// writeReq is one write waiting for the writer.
type writeReq struct {
	ctx   context.Context
	fn    func(ctx context.Context, tx *sql.Tx) error
	state atomic.Int32 // reqWaiting → reqTaken (writer) or reqAbandoned (caller gave up)
	done  chan error   // buffered: the writer never blocks on it
}

const (
	reqWaiting int32 = iota
	reqTaken
	reqAbandoned
)

// inTx runs fn in a write transaction and returns once it is committed (or
// failed, and then nothing of fn was stored). fn must not keep tx, and must use
// the ctx it is given: once the writer has taken a write, the write is finished
// even if the caller's context ends meanwhile (an interrupted statement would
// roll back the writes batched with it). A caller whose context ends while the
// write still waits gets ctx.Err() and the write is skipped. fn may run more
// than once (a batch in which another write failed runs again: commitTaken),
// so it must set what it returns afresh, not add to it.
func (db *DB) inTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return db.write(ctx, db.writes, fn)
}

// inUrgentTx is inTx for writes that a chat platform's acknowledgement waits
// on (accepting input): the writer takes them before other waiting writes, so
// a burst of session writes cannot hold up the 3-second deadline.
func (db *DB) inUrgentTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return db.write(ctx, db.urgent, fn)
}

func (db *DB) write(ctx context.Context, lane chan *writeReq, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if lane == nil {
		return db.runTx(ctx, fn)
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case lane <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-db.quit:
		return storage.ErrClosed
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqWaiting, reqAbandoned) {
			return ctx.Err()
		}
		return <-r.done // taken: it finishes promptly
	}
}

// runTx runs fn in its own transaction on the write connection.
func (db *DB) runTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(ctx, tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// writeLoop owns the write connection until Close.
func (db *DB) writeLoop() {
	defer close(db.writerDone)
	batch := make([]*writeReq, 0, maxBatch)
	recent := 0 // about the most writes recent commits took
	for {
		batch = batch[:0]
		select {
		case r := <-db.urgent:
			batch = append(batch, r)
		case r := <-db.writes:
			batch = append(batch, r)
		case <-db.quit:
			return
		}
		// Take whoever else is waiting right now, urgent writes first; never
		// wait for more.
	urgent:
		for len(batch) < maxBatch {
			select {
			case r := <-db.urgent:
				batch = append(batch, r)
			default:
				break urgent
			}
		}
		batch = db.drain(batch)
		// Writers the last commit released are runnable but may not have
		// reached the channel yet (on 2 cores, most of them): without
		// letting them run, the writer commits the first one alone, then the
		// rest, and under load commits mostly single writes, each paying a
		// commit's WAL frames. So while the batch is smaller than recent
		// commits (whose writers may be about to write again), the writer
		// yields and takes who came; it stops as soon as a yield brings no
		// one. A yield has no timer (it returns at once when nobody else is
		// runnable), but it lets every runnable goroutine of the process go
		// first: a lone writer, whose recent commits were its own, never
		// yields. Recent is a maximum that decays by an eighth per commit,
		// so that one commit of a single write, in a burst, does not end
		// the yields.
		for range maxYields {
			n := len(batch)
			if n >= min(recent, maxBatch) {
				break
			}
			runtime.Gosched()
			if batch = db.drain(batch); len(batch) == n {
				break
			}
		}
		recent = nextRecent(recent, db.commitBatch(batch))
	}
}

// nextRecent is recent after a commit of n writes: n, or recent less an
// eighth (rounded up, so that it comes down to a lone writer's 1 instead of
// staying at 7 and below after a burst).
func nextRecent(recent, n int) int { return max(n, recent-(recent+7)/8) }

// maxYields bounds the yields before a commit: each brings the writers that
// became runnable meanwhile, and a few cover a burst's stragglers. (A
// variable for the benchmark that compares with no yields.)
var maxYields = 2

// drain adds the writes waiting right now to batch, up to maxBatch.
func (db *DB) drain(batch []*writeReq) []*writeReq {
	for len(batch) < maxBatch {
		select {
		case r := <-db.urgent:
			batch = append(batch, r)
		case r := <-db.writes:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commitBatch commits the writes of batch whose callers still wait and
// returns how many there were.
func (db *DB) commitBatch(batch []*writeReq) int {
	taken := batch[:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(reqWaiting, reqTaken) {
			taken = append(taken, r)
		}
	}
	db.commitTaken(taken)
	return len(taken)
}

// commitTaken commits writes the writer took, in order. Optimistically, all
// of them in one transaction with no savepoints: a savepoint and its release
// cost two statements per write, as much as the write itself, and writes
// seldom fail. If one does, the transaction is rolled back; the writes before
// it, which succeeded from that same state, commit together again, the
// failing one runs alone, and the writes after it go on as a batch of their
// own: only the failing one fails, as if they had never been batched, and a
// failure costs two commits more instead of one per write.
func (db *DB) commitTaken(taken []*writeReq) {
	for len(taken) > 0 {
		if len(taken) == 1 { // nothing to share
			r := taken[0]
			r.done <- db.runTx(context.WithoutCancel(r.ctx), r.fn)
			return
		}
		tx, err := db.w.BeginTx(context.Background(), nil)
		if err != nil {
			for _, r := range taken {
				r.done <- err
			}
			return
		}
		failed := len(taken)
		for i, r := range taken {
			if err := r.fn(context.WithoutCancel(r.ctx), tx); err != nil {
				failed = i
				break
			}
		}
		if failed == len(taken) {
			err := tx.Commit()
			for _, r := range taken {
				r.done <- err
			}
			return
		}
		tx.Rollback()
		db.commitTaken(taken[:failed])
		r := taken[failed]
		r.done <- db.runTx(context.WithoutCancel(r.ctx), r.fn)
		taken = taken[failed+1:]
	}
}

// execOne runs a statement that must change exactly one row; none is
// ErrNotFound, named by what.
func execOne(ctx context.Context, tx *sql.Tx, what, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, storage.ErrNotFound)
	}
	return nil
}
