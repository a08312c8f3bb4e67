package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// inboundChannel is the NOTIFY channel AcceptInbound sends a thread's id on.
const inboundChannel = "threadsmith_inbound"

// ListenInbound implements storage.InboundNotifier with LISTEN on a
// connection of its own (taken from the pool, closed at the end rather than
// returned listening). A lost connection is opened again, after a pause that
// doubles up to 5 s; what was accepted meanwhile is found by the owners'
// polling.
func (db *DB) ListenInbound(ctx context.Context, fn func(threadID int64)) error {
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := db.listen(ctx, fn)
		if db.closed.Load() {
			break // as on SQLite, nothing more comes until ctx ends
		}
		if err != nil && ctx.Err() == nil {
			db.log.Warn("listening for accepted input failed; polling until it is back", "err", err, "retry_in", pause)
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			pause = min(2*pause, 5*time.Second)
			continue
		}
		pause = 100 * time.Millisecond
	}
	<-ctx.Done()
	return nil
}

func (db *DB) listen(ctx context.Context, fn func(threadID int64)) error {
	if db.closed.Load() {
		return storage.ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // Close ends the wait (its pool.Close waits for conn)
		select {
		case <-db.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// Never back into the pool while listening: close it, and the pool
		// drops it on release.
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Conn().Close(cctx)
		cancel()
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+inboundChannel); err != nil {
		return err
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			fn(id)
		}
	}
}

var _ storage.InboundNotifier = (*DB)(nil)
