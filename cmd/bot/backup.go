package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// RunBackup is -backup FILE: a consistent copy of the SQLite database in
// data_dir, taken while the bot runs (or not), written to FILE, which must
// not exist. Restoring is copying FILE to <data_dir>/threadsmith.db while
// no bot runs there.
func (m *Main) RunBackup(ctx context.Context, w io.Writer) error {
	cfg, err := m.loadConfig()
	if err != nil {
		return err
	}
	if cfg.Storage.Driver == config.StoragePostgres {
		return configError{fmt.Errorf("-backup copies the SQLite database; storage.driver is postgres: back it up with pg_dump")}
	}
	start := time.Now()
	if err := sqlite.BackupFile(ctx, sqlitePath(cfg), m.Backup); err != nil {
		return err
	}
	fmt.Fprintf(w, "backed up %s to %s in %s\n", sqlitePath(cfg), m.Backup, time.Since(start).Round(time.Millisecond))
	return nil
}
