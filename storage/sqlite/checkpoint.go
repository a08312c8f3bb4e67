package sqlite

import (
	"context"
	"time"
)

// checkpointLoop copies the WAL back into the database file every interval,
// on its own connection. SQLite would otherwise checkpoint inside whichever
// commit crosses 1,000 WAL pages, and that commit, with every write queued
// behind it, would wait for the checkpoint's fsyncs. A PASSIVE checkpoint
// takes no write lock: writers keep appending to the WAL meanwhile.
func (db *DB) checkpointLoop(interval time.Duration) {
	defer close(db.ckptDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-db.quit:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var busy, logPages, done int
		err := db.ckpt.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done)
		cancel()
		if err != nil {
			db.log.Warn("checkpoint failed", "err", err)
			continue
		}
		if logPages > 0 {
			db.log.Debug("checkpoint", "wal_pages", logPages, "checkpointed", done)
		}
	}
}
