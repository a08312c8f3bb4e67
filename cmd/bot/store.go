package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// openStore opens the database storage.driver names: the SQLite file in
// data_dir (the default), or the PostgreSQL database at storage.dsn.
func (m *Main) openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (storage.Store, error) {
	if cfg.Storage.Driver == config.StoragePostgres {
		db, err := postgres.Open(ctx, cfg.Storage.DSN, postgres.WithLogger(log), postgres.WithHooks(m.storageHooks()))
		if err != nil {
			return nil, err
		}
		log.Info("storage", "driver", "postgres", "database", db.Where())
		return db, nil
	}
	db, err := sqlite.Open(ctx, sqlitePath(cfg), sqlite.WithLogger(log), sqlite.WithHooks(m.storageHooks()))
	if err != nil {
		return nil, err // not a nil *sqlite.DB in a non-nil Store
	}
	return db, nil
}

func sqlitePath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, sqlite.FileName) }

// checkStorage reaches the configured database for -check: it opens it as
// the bot would (bringing its schema up to date) and pings it.
func checkStorage(ctx context.Context, cfg *config.Config, more func(storage.Store) string) (string, error) {
	log := slog.New(slog.DiscardHandler)
	var db storage.Store
	var where string
	var err error
	if cfg.Storage.Driver == config.StoragePostgres {
		var pg *postgres.DB
		pg, err = postgres.Open(ctx, cfg.Storage.DSN, postgres.WithLogger(log))
		if err == nil {
			db, where = pg, "postgres "+pg.Where()
		}
	} else {
		// A running bot's database is its own: -check does not open (and
		// so migrate) it under that bot, which may be an older build.
		l, lerr := peekDataDirLock(cfg.DataDir)
		if inUse := (*dataDirInUse)(nil); errors.As(lerr, &inUse) {
			return fmt.Sprintf("storage: sqlite %s in use by %s: not opened", sqlitePath(cfg), inUse.holder), nil
		}
		if lerr == nil {
			defer l.release()
		}
		// -check creates nothing: a database not there yet is the first
		// start's to create; -check says whether it can.
		if _, serr := os.Stat(sqlitePath(cfg)); errors.Is(serr, fs.ErrNotExist) {
			if err := creatable(cfg.DataDir); err != nil {
				return "", fmt.Errorf("data_dir: %v", err)
			}
			return fmt.Sprintf("storage: sqlite %s not there yet: the bot creates it at its first start", sqlitePath(cfg)), nil
		}
		var lite *sqlite.DB
		lite, err = sqlite.Open(ctx, sqlitePath(cfg), sqlite.WithLogger(log))
		if err == nil {
			db, where = lite, "sqlite "+lite.Path()
		}
	}
	if err != nil {
		return "", fmt.Errorf("storage.%s: %s", dsnKey(cfg), redactDSNError(err.Error(), cfg))
	}
	defer db.Close()
	if err := db.Ping(ctx); err != nil {
		return "", fmt.Errorf("storage: %s: %s", where, redactDSNError(err.Error(), cfg))
	}
	msg := fmt.Sprintf("storage: %s reachable (schema version %d)", where, sqlite.SchemaVersion())
	if more != nil {
		if line := more(db); line != "" {
			msg += "\n" + line
		}
	}
	return msg, nil
}

func dsnKey(cfg *config.Config) string {
	if cfg.Storage.Driver == config.StoragePostgres {
		return "dsn"
	}
	return "driver"
}

// redactDSNError keeps the DSN and its password out of an error shown to
// the operator.
func redactDSNError(msg string, cfg *config.Config) string {
	return redact(redact(msg, cfg.Storage.DSN), config.DSNPassword(cfg.Storage.DSN))
}

// creatable says whether dir exists as a writable folder or could be
// created: its nearest existing parent is a writable folder.
func creatable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && p != filepath.Dir(p):
			continue
		case err != nil:
			return err
		case !st.IsDir():
			return fmt.Errorf("%s: %s is not a folder", abs, p)
		}
		if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
			if p == abs {
				return fmt.Errorf("%s is not writable by this user: %w", abs, err)
			}
			return fmt.Errorf("%s cannot be created: %s is not writable by this user: %w", abs, p, err)
		}
		return nil
	}
}
