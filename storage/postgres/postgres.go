// Package postgres is threadsmith's PostgreSQL backend: the same records and
// the same contract (storage.Store) as the embedded SQLite one, for teams that
// run several replicas against one database. The conformance suite in
// storage/storagetest runs unchanged against both.
//
// The contract is storage.Store's (the doc comments on its methods); this
// package documents what is its own. Times are stored as Unix milliseconds,
// entry payloads as json (the exact text written).
//
// Concurrency: the pool runs transactions in parallel (READ COMMITTED); each
// write is a single statement or relies on a unique index, so concurrent
// writers need no locks of their own. A transaction that loses a deadlock or
// a serialization conflict is retried.
//
// Operating it: Open applies the embedded migrations (migrations/, one per
// SQLite migration) under an advisory lock, so replicas starting together
// migrate once; a database whose schema is newer than the binary is refused.
// The pool holds up to 16 connections unless the DSN says pool_max_conns=N.
// The schema lives in the DSN's search_path (search_path=name selects one).
// Differences from SQLite: free text cannot hold NUL or invalid UTF-8 (they
// are stored as U+FFFD); a commit whose connection breaks before the answer
// may or may not have happened (the caller sees an error either way).
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// Option configures Open.
type Option func(*options)

type options struct {
	log            *slog.Logger
	now            func() time.Time
	shift          func() time.Duration
	hooks          storage.Hooks
	eventRetention time.Duration
	maxConns       int32
}

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock sets the clock used for timestamps and event pruning (default:
// time.Now): the replica's own clock. Leases and schedule firings are judged
// by the server's clock instead (serverMS).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithServerClockShift moves the server's clock, as leases and firings read
// it, by what shift returns: tests let leases lapse with it without waiting.
// Unset, the server's clock is taken as it is.
func WithServerClockShift(shift func() time.Duration) Option {
	return func(o *options) { o.shift = shift }
}

// WithHooks sets the hooks told of finished runs and recorded pushes.
func WithHooks(h storage.Hooks) Option { return func(o *options) { o.hooks = h } }

// WithEventRetention sets how long processed platform event ids are
// remembered (default 24h).
func WithEventRetention(d time.Duration) Option { return func(o *options) { o.eventRetention = d } }

// WithMaxConns sets the pool's size (default: the DSN's pool_max_conns, else 16).
func WithMaxConns(n int) Option { return func(o *options) { o.maxConns = int32(n) } }

// DB is an open threadsmith database on PostgreSQL.
type DB struct {
	pool  *pgxpool.Pool
	where string // host:port/database, for errors (never the password)
	log   *slog.Logger
	now   func() time.Time
	shift func() time.Duration // WithServerClockShift
	hooks storage.Hooks

	eventRetention time.Duration
	lastPrune      atomic.Int64

	sessionIDs sync.Map // session uid → row id; DeleteThread removes those it deletes

	closed    atomic.Bool
	closeOnce sync.Once
	quit      chan struct{} // closed by Close: listeners let their connections go
}

var _ storage.Store = (*DB)(nil)

// Open connects to the database dsn names (a postgres:// URL or key=value
// string, as libpq takes them) and brings its schema up to date. A schema
// newer than this binary knows is storage.ErrSchemaTooNew; a database that
// has tables but none of threadsmith's is storage.ErrForeignDatabase.
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	o := options{log: slog.Default(), now: time.Now, eventRetention: 24 * time.Hour}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors may quote the DSN, password included: say only what kind.
		return nil, errors.New("storage/postgres: open: storage.dsn is not a valid PostgreSQL connection string")
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	} else if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = 16
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "threadsmith"
	// A replica stopped in the middle of a transaction (SIGSTOP, a frozen
	// VM) would hold its locks — a thread's lease row among them, keeping
	// every other replica from taking the thread over — until it woke up.
	// The server ends such a session instead; the bot's own transactions
	// never wait between their statements.
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = "5s"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("storage/postgres: open %s: %w", where, err)
	}
	db := &DB{pool: pool, where: where, log: o.log.With("component", "storage", "backend", "postgres"), now: o.now,
		shift: o.shift, hooks: o.hooks, eventRetention: o.eventRetention, quit: make(chan struct{})}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("storage/postgres: open %s: %w", where, wrap(err))
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	db.lastPrune.Store(db.nowMS())
	return db, nil
}

// Where names the database (host:port/database) without credentials.
func (db *DB) Where() string { return db.where }

// Close implements storage.Store: it closes the pool.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closed.Store(true)
		close(db.quit) // pool.Close waits for the listeners' connections
		db.pool.Close()
	})
	return nil
}

// Ping implements storage.OpsStore.
func (db *DB) Ping(ctx context.Context) error {
	if db.closed.Load() {
		return opError("ping", storage.ErrClosed)
	}
	var one int
	err := db.pool.QueryRow(ctx, `SELECT 1`).Scan(&one)
	db.lostConnection(err)
	return opError("ping", err)
}

func (db *DB) nowMS() int64 { return db.now().UnixMilli() }

// serverMS is SQL for the server's clock in Unix milliseconds at the
// statement's start, plus the parameter p (shiftMS). Leases and firings are
// judged by this one clock: a replica whose clock is off or steps cannot take
// a live lease early, nor keep its own past its time.
func serverMS(p string) string {
	return "(floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint + " + p + "::bigint)"
}

// shiftMS is the argument of serverMS: WithServerClockShift's, or 0.
func (db *DB) shiftMS() int64 {
	if db.shift == nil {
		return 0
	}
	return db.shift().Round(time.Millisecond).Milliseconds()
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// inTx runs fn in a transaction and commits it; a deadlock or serialization
// failure runs it again (fn must be repeatable: it is, it only talks to tx).
// A BEGIN that fails is tried again too, on a new connection: nothing ran, and
// after a restart of the server (or a network cut) the pool's idle
// connections are all dead, so the first statement of each would fail
// (lostConnection drops them).
func (db *DB) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if db.closed.Load() {
		return storage.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	for attempt, begins := 0, 0; attempt < 5; attempt++ {
		var tx pgx.Tx
		tx, err = db.pool.Begin(ctx)
		if err != nil {
			if db.lostConnection(err) && ctx.Err() == nil {
				if begins++; begins < beginAttempts {
					attempt--
					continue
				}
			}
			return err
		}
		err = fn(ctx, tx)
		if err == nil {
			err = tx.Commit(ctx)
		} else {
			_ = tx.Rollback(ctx)
		}
		db.lostConnection(err)
		if !isCode(err, "40001") && !isCode(err, "40P01") {
			return err
		}
	}
	return err
}

// beginAttempts bounds the BEGINs of one transaction: enough for a dead
// connection and then a fresh one.
const beginAttempts = 3

// exec runs one statement on its own (atomic by itself, committed when it
// returns), retried like inTx; a statement pgx never sent (pgconn.SafeToRetry)
// is sent again.
func (db *DB) exec(ctx context.Context, sql string, args ...any) error {
	if db.closed.Load() {
		return storage.ErrClosed
	}
	var err error
	for attempt, unsent := 0, 0; attempt < 5; attempt++ {
		_, err = db.pool.Exec(ctx, sql, args...)
		if db.lostConnection(err) && pgconn.SafeToRetry(err) && ctx.Err() == nil {
			if unsent++; unsent < beginAttempts {
				attempt--
				continue
			}
		}
		if !isCode(err, "40001") && !isCode(err, "40P01") {
			return err
		}
	}
	return err
}

// lostConnection drops every idle connection of the pool when err says the
// server is gone for this connection (it closed it, restarted, or the network
// cut it): the other idle ones were very likely cut with it, and each would
// fail its next statement. New connections are made as needed. It reports
// whether it did.
func (db *DB) lostConnection(err error) bool {
	if !connectionLost(err) {
		return false
	}
	db.pool.Reset()
	return true
}

// connectionLost reports whether err is the connection's, not the
// statement's: the server ended the session (class 08, 57P01–57P03: shut
// down, crashed, starting), the network failed, or pgx could not send.
func connectionLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err)
}

// q is what reads run on: the pool, or a transaction.
type q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// reader returns the pool for reads, or ErrClosed.
func (db *DB) reader() (q, error) {
	if db.closed.Load() {
		return nil, storage.ErrClosed
	}
	return db.pool, nil
}

// Errors.

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

func constraintOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

const (
	codeUnique     = "23505"
	codeForeignKey = "23503"
)

// wrap adds storage.ErrFull or storage.ErrReadOnly to errors that mean them.
func wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case isCode(err, "53100") || isCode(err, "53200"): // disk_full, out_of_memory
		return backend.Sentinel(storage.ErrFull, err)
	case isCode(err, "25006"): // read_only_sql_transaction (a standby, default_transaction_read_only)
		return backend.Sentinel(storage.ErrReadOnly, err)
	case connectionLost(err):
		return backend.Sentinel(storage.ErrUnavailable, err)
	}
	return err
}

func opError(op string, err error) error { return backend.OpError(op, wrap(err)) }

// lookupError turns pgx.ErrNoRows into storage.ErrNotFound.
func lookupError(op string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("storage: %s: %w", op, storage.ErrNotFound)
	}
	return opError(op, err)
}

// Migrations.

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

var migrations = mustLoadMigrations()

func mustLoadMigrations() []migration {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	slices.Sort(names)
	var out []migration
	for i, n := range names {
		base := path.Base(n)
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil || v != i+1 {
			panic(fmt.Sprintf("storage/postgres: migration %s: want version %d as NNNN_name.sql", base, i+1))
		}
		b, err := fs.ReadFile(migrationFiles, n)
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	return out
}

// SchemaVersion is the schema version this binary creates and understands.
// It equals sqlite.SchemaVersion(): each SQLite migration has its mirror.
func SchemaVersion() int { return len(migrations) }

// migrateLock is the advisory lock key that serialises replicas migrating the
// same database at once.
const migrateLock = 0x7468726561647331 // "threads1"

func (db *DB) migrate(ctx context.Context) error {
	fail := func(err error) error { return fmt.Errorf("storage/postgres: migrate %s: %w", db.where, wrap(err)) }
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return fail(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLock))

	var haveMigrations bool
	var others int
	if err := conn.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'),
		(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())`).Scan(&haveMigrations, &others); err != nil {
		return fail(err)
	}
	if !haveMigrations && others > 0 {
		return fmt.Errorf("storage/postgres: open %s: %w: its schema has %d tables but no schema_migrations; use an empty database or schema",
			db.where, storage.ErrForeignDatabase, others)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at BIGINT  NOT NULL)`); err != nil {
		return fail(err)
	}
	var v int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fail(err)
	}
	if v > SchemaVersion() {
		return fmt.Errorf("storage/postgres: open %s: %w: the database has schema version %d, this binary knows up to %d; refusing to use it (run a newer threadsmith)",
			db.where, storage.ErrSchemaTooNew, v, SchemaVersion())
	}
	for _, m := range migrations[v:] {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, db.nowMS())
			return err
		})
		if err != nil {
			return fail(err)
		}
		db.log.Info("applied schema migration", "version", m.version, "name", m.name)
	}
	return nil
}
