package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/threadsmith/threadsmith/storage"
)

// migrationFiles holds the schema history: NNNN_name.sql, applied in order.
// Published files are never edited; a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the parsed, ordered schema history. It panics at start on a
// malformed set, which only a broken build can produce (and a test catches).
var migrations = mustLoadMigrations(migrationFiles)

func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := loadMigrations(fsys)
	if err != nil {
		panic(err)
	}
	return ms
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []migration
	for i, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("storage: migration %s: name must be NNNN_name.sql", base)
		}
		if v != i+1 {
			return nil, fmt.Errorf("storage: migration %s: version %d, want %d (no gaps, no duplicates)", base, v, i+1)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	return out, nil
}

// SchemaVersion is the schema version this binary creates and understands.
func SchemaVersion() int { return len(migrations) }

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`

// inspect looks at an existing file through a connection that changes nothing
// (no journal-mode switch, no schema), and refuses files threadsmith must not
// touch: a foreign SQLite database, or a schema newer than this binary.
func inspect(ctx context.Context, path string) error {
	probe, err := sql.Open("sqlite", dsn(path, []string{"busy_timeout(10000)"}))
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", path, err)
	}
	defer probe.Close()
	probe.SetMaxOpenConns(1)
	conn, err := probe.Conn(ctx)
	if err != nil {
		return openError(path, err)
	}
	defer conn.Close()

	tables, err := userTables(ctx, conn)
	if err != nil {
		return openError(path, err)
	}
	if len(tables) == 0 {
		return nil // new or empty: ours to create
	}
	if !slices.Contains(tables, "schema_migrations") {
		shown := tables
		if len(shown) > 5 {
			shown = append(shown[:5:5], "…")
		}
		return fmt.Errorf("storage: open %s: %w: it has tables (%s) but no schema_migrations; point data_dir elsewhere",
			path, storage.ErrForeignDatabase, strings.Join(shown, ", "))
	}
	v, err := currentVersion(ctx, conn)
	if err != nil {
		return openError(path, err)
	}
	if v > SchemaVersion() {
		return fmt.Errorf("storage: open %s: %w: the file has schema version %d, this binary knows up to %d; refusing to open it (run a newer threadsmith)",
			path, storage.ErrSchemaTooNew, v, SchemaVersion())
	}
	return nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func userTables(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

func currentVersion(ctx context.Context, q querier) (int, error) {
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// migrate applies the migrations the file lacks, each in its own transaction
// together with its schema_migrations row, so a crash leaves the file at a
// recorded version. Running it again does nothing.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.w.ExecContext(ctx, createMigrationsTable); err != nil {
		return openError(db.path, err)
	}
	for _, m := range migrations {
		applied := false
		err := db.runTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			// Read the version inside the write transaction: another process
			// opening the same file may have migrated meanwhile.
			v, err := currentVersion(ctx, tx)
			if err != nil {
				return err
			}
			if v > SchemaVersion() {
				return fmt.Errorf("%w: version %d, this binary knows up to %d", storage.ErrSchemaTooNew, v, SchemaVersion())
			}
			if v >= m.version {
				return nil
			}
			if v != m.version-1 {
				return fmt.Errorf("schema version %d cannot take migration %s", v, m.name)
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, db.nowMS()); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			applied = true
			return nil
		})
		if err != nil {
			if errors.Is(err, storage.ErrSchemaTooNew) {
				return fmt.Errorf("storage: open %s: %w", db.path, err)
			}
			return fmt.Errorf("storage: migrate %s: %w", db.path, wrapCode(err))
		}
		if applied {
			db.log.Info("applied schema migration", "version", m.version, "name", m.name)
		}
	}
	return nil
}
