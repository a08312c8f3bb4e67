package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Backup writes a consistent copy of the database to dst while writes go
// on; see BackupFile. It reads through a connection of its own: the read
// pool's are query_only, which VACUUM INTO is not.
func (db *DB) Backup(ctx context.Context, dst string) error {
	return BackupFile(ctx, db.path, dst)
}

// BackupFile writes a consistent copy of the SQLite database at path to dst
// while a bot may be using it: it reads the file as any reader does, through
// SQLite's own locks, and neither migrates it nor creates it. The copy is
// one snapshot (each write of the bot is in it whole or not at all), is
// compacted, and is private to the user (0600).
//
// dst must not exist: a backup never overwrites a file. The copy is written
// beside dst under another name and linked into place once complete, so dst
// is either the whole copy or absent.
func BackupFile(ctx context.Context, path, dst string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("storage: backup %s: %w", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("storage: backup %s: %w", abs, err)
	}
	if err := checkHeader(abs); err != nil {
		return err
	}
	p, err := sql.Open("sqlite", dsn(abs, []string{"busy_timeout(10000)"}, "mode=ro"))
	if err != nil {
		return fmt.Errorf("storage: backup %s: %w", abs, err)
	}
	defer p.Close()
	p.SetMaxOpenConns(1)
	return backupInto(ctx, p, abs, dst)
}

func backupInto(ctx context.Context, r *sql.DB, src, dst string) error {
	dst, err := filepath.Abs(dst)
	if err != nil {
		return fmt.Errorf("storage: backup to %s: %w", dst, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("storage: backup to %s: %w: a backup never overwrites a file", dst, os.ErrExist)
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".partial-"+strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("storage: backup to %s: %w", dst, err)
	}
	f.Close()
	defer os.Remove(tmp)
	if _, err := r.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return fmt.Errorf("storage: backup %s to %s: %w", src, dst, err)
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("storage: backup to %s: %w", dst, err)
	}
	// A link fails where dst appeared meanwhile: never overwritten.
	if err := os.Link(tmp, dst); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("storage: backup to %s: %w: a backup never overwrites a file", dst, os.ErrExist)
		}
		return fmt.Errorf("storage: backup to %s: %w", dst, err)
	}
	return syncFile(filepath.Dir(dst))
}

// syncFile flushes a file (or a folder's entries) to the disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
