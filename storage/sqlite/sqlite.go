// Package sqlite is threadsmith's embedded storage backend: storage.Store in
// one SQLite file (FileName in the data directory). The contract is
// storage.Store's; this package documents what is its own.
//
// Durability: the database runs in WAL mode with synchronous=NORMAL: a killed
// process loses nothing that was committed; a power loss may lose the last
// transactions but never corrupts the file. The file and its -wal and -shm
// files are private (0600).
//
// Concurrency: a DB is safe for concurrent use. Writes go to one goroutine that
// owns the only write connection; writes that arrive together share one commit
// (group commit; a failing write is retried alone), so busy sessions do not
// queue behind one commit each and nobody spins on SQLite's busy handler.
// Reads use a separate read-only pool and never wait for writers. WAL
// checkpoints run in the background, never inside a write.
//
// Errors: besides the contract's, Open refuses a file that is not SQLite
// (ErrNotDatabase), one that is not threadsmith's (storage.ErrForeignDatabase)
// and a schema newer than this binary knows (storage.ErrSchemaTooNew), naming
// the file. Listeners of ListenInbound are this DB's own: one process per
// database.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/threadsmith/threadsmith/storage"
)

var _ storage.Store = (*DB)(nil)

// FileName is the database file's name inside the data directory.
const FileName = "threadsmith.db"

// pragmas run on every connection, through the DSN, so that a connection the
// pool opens later behaves like the first one. busy_timeout first: the others
// may need a lock.
var pragmas = []string{
	"busy_timeout(10000)",
	"journal_mode(WAL)",
	"foreign_keys(1)",
	"synchronous(NORMAL)",
	// After a checkpoint resets the WAL, cut it back to this size rather than
	// keep the largest it ever grew to.
	"journal_size_limit(67108864)",
}

// DB is an open threadsmith database.
type DB struct {
	path string
	w    *sql.DB // the one write connection (transactions are BEGIN IMMEDIATE)
	r    *sql.DB // read-only pool
	log  *slog.Logger
	now  func() time.Time

	stmts statements

	// The writer goroutine (writer.go) takes writes from writes until quit
	// closes; writerDone closes when it has stopped. writes is nil without
	// group commit.
	writes     chan *writeReq
	urgent     chan *writeReq // writes a platform acknowledgement waits on: served first
	quit       chan struct{}
	writerDone chan struct{}

	ckpt     *sql.DB // the checkpointer's connection; nil with autocheckpoint
	ckptDone chan struct{}

	// sessionIDs caches session uid → row id. Only DeleteThread deletes
	// sessions, and it removes their uids from the cache; so an
	// entry never goes stale.
	sessionIDs sync.Map

	eventRetention time.Duration
	hooks          storage.Hooks

	retentionMu sync.Mutex   // TryRetentionLock
	lastPrune   atomic.Int64 // Unix ms of the last processed_events prune

	inbound listeners // who hears of accepted input (notify.go)

	closeOnce sync.Once
	closeErr  error
}

// Open opens the database at path, creating the file and its directory when
// missing, and brings its schema up to date. It refuses, with an error naming
// the file, a file that is not SQLite (ErrNotDatabase), a SQLite file that is not
// threadsmith's (ErrForeignDatabase), and a schema newer than this binary knows
// (ErrSchemaTooNew); in those cases the file is left as it was.
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	o := options{log: slog.Default(), now: time.Now, readConns: 4, writeConns: 1, eventRetention: 24 * time.Hour,
		checkpointEvery: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	if path == "" {
		return nil, errors.New("storage: open: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("storage: open %s: create directory: %w", abs, err)
	}
	if err := checkHeader(abs); err != nil {
		return nil, err
	}
	// Transcripts hold code and whatever people paste: keep the file (and the
	// -wal and -shm files SQLite derives from it) private.
	f, err := os.OpenFile(abs, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", abs, err)
	}
	f.Close()
	if err := inspect(ctx, abs); err != nil {
		return nil, err
	}

	db := &DB{
		path:           abs,
		log:            o.log.With("component", "storage"),
		now:            o.now,
		eventRetention: o.eventRetention,
		hooks:          o.hooks,
		stmts:          newStatements(),
		quit:           make(chan struct{}),
	}
	base := slices.Concat(pragmas, o.extraPragmas)
	writer := base
	if !o.autoCheckpoint {
		// The checkpointer (checkpoint.go) does it, so that no write waits
		// for a checkpoint's fsyncs.
		writer = slices.Concat(base, []string{"wal_autocheckpoint(0)"})
	}
	if db.w, err = openPool(ctx, abs, o.writeConns, writer, "_txlock=immediate"); err != nil {
		return nil, err
	}
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if db.r, err = openPool(ctx, abs, max(o.readConns, 1), slices.Concat(base, readPragmas)); err != nil {
		db.Close()
		return nil, err
	}
	if !o.noPrepare {
		if err := db.stmts.prepare(ctx, db.w, db.r); err != nil {
			db.Close()
			return nil, openError(abs, err)
		}
	}
	if !o.autoCheckpoint {
		if db.ckpt, err = openPool(ctx, abs, 1, base); err != nil {
			db.Close()
			return nil, err
		}
		db.ckptDone = make(chan struct{})
		go db.checkpointLoop(o.checkpointEvery)
	}
	db.lastPrune.Store(db.now().UnixMilli())
	if !o.noGroupCommit {
		db.writes = make(chan *writeReq)
		db.urgent = make(chan *writeReq)
		db.writerDone = make(chan struct{})
		go db.writeLoop()
	}
	return db, nil
}

// openPool opens a pool of n connections that live as long as the DB.
func openPool(ctx context.Context, path string, n int, pragmas []string, extra ...string) (*sql.DB, error) {
	p, err := sql.Open("sqlite", dsn(path, pragmas, extra...))
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	p.SetMaxOpenConns(n)
	p.SetMaxIdleConns(n)
	p.SetConnMaxIdleTime(0)
	p.SetConnMaxLifetime(0)
	if err := p.PingContext(ctx); err != nil {
		p.Close()
		return nil, openError(path, err)
	}
	return p, nil
}

// Path is the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Close implements storage.Store: it releases the connections, after the
// writer and the checkpointer have stopped.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		var errs []error
		close(db.quit)
		if db.writerDone != nil {
			<-db.writerDone
		}
		if db.ckptDone != nil {
			<-db.ckptDone
		}
		if db.ckpt != nil {
			errs = append(errs, db.ckpt.Close())
		}
		db.stmts.close()
		if db.w != nil {
			// Let SQLite refresh its planner statistics, as it recommends on close.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if _, err := db.w.ExecContext(ctx, "PRAGMA optimize"); err != nil {
				db.log.Debug("pragma optimize on close failed", "err", err)
			}
			cancel()
			errs = append(errs, db.w.Close())
		}
		if db.r != nil {
			errs = append(errs, db.r.Close())
		}
		if err := errors.Join(errs...); err != nil {
			db.closeErr = fmt.Errorf("storage: close %s: %w", db.path, err)
		}
	})
	return db.closeErr
}

// Check runs SQLite's integrity check over the whole file and returns an error
// listing what is wrong, nil when the file is sound.
func (db *DB) Check(ctx context.Context) error {
	rows, err := db.r.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("storage: integrity check %s: %w", db.path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("storage: integrity check %s: %w", db.path, err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("storage: integrity check %s: %w", db.path, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("storage: integrity check %s: %w: %s", db.path, storage.ErrCorrupt, strings.Join(problems, "; "))
	}
	return nil
}

// dsn builds a modernc.org/sqlite data source name. The path travels as a file:
// URI so that any character in it (spaces, '?', '#') survives; SQLite ignores the
// driver's own "_" parameters.
func dsn(path string, pragmas []string, extra ...string) string {
	q := make([]string, 0, len(pragmas)+len(extra))
	for _, p := range pragmas {
		q = append(q, "_pragma="+url.QueryEscape(p))
	}
	q = append(q, extra...)
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: strings.Join(q, "&")}
	// url.URL renders an absolute path as file:///p; SQLite accepts that form.
	return u.String()
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// checkHeader refuses a file that exists, is not empty and is not SQLite, before
// SQLite gets to write anything into it.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF) {
		return nil // an empty file is an empty database
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("storage: open %s: %w", path, err)
	}
	if string(head[:n]) != sqliteMagic {
		return fmt.Errorf("storage: open %s: %w (it does not start with the SQLite header; move it away or point data_dir elsewhere)", path, ErrNotDatabase)
	}
	return nil
}

// openError wraps an error of the first contact with the file.
func openError(path string, err error) error {
	if isCode(err, codeNotADB) || isCode(err, codeCorrupt) {
		return fmt.Errorf("storage: open %s: %w: %w", path, ErrNotDatabase, err)
	}
	return fmt.Errorf("storage: open %s: %w", path, wrapCode(err))
}

// ms converts a time to stored Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts stored Unix milliseconds to a time (UTC).
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// nowMS is the clock's current time in Unix milliseconds.
func (db *DB) nowMS() int64 { return ms(db.now()) }
