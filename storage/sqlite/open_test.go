package sqlite_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// quiet keeps migration logs out of test output.
var quiet = sqlite.WithLogger(slog.New(slog.DiscardHandler))

// openDB opens a fresh database in t.TempDir() and closes it when the test ends.
func openDB(t testing.TB, opts ...sqlite.Option) *sqlite.DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), sqlite.FileName), opts...)
}

func openAt(t testing.TB, path string, opts ...sqlite.Option) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, append([]sqlite.Option{quiet}, opts...)...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// rawDB opens the file with the bare driver, to look at or damage it behind the
// package's back.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func migrationRows(t *testing.T, path string) []int {
	t.Helper()
	rows, err := rawDB(t, path).Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

func TestOpenCreatesFileAndMigrates(t *testing.T) {
	ctx := context.Background()
	// A directory that does not exist yet, and characters a URI would mangle.
	path := filepath.Join(t.TempDir(), "data dir", "odd?#name", sqlite.FileName)
	db, err := sqlite.Open(ctx, path, quiet)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if db.Path() != path {
		t.Errorf("Path() = %q, want %q", db.Path(), path)
	}
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1.1"}, storage.ThreadInit{Repo: "app"})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database file not created at %s: %v", path, err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("database file mode = %o, want 600 (transcripts are private)", perm)
	}
	if got, want := len(migrationRows(t, path)), sqlite.SchemaVersion(); got != want {
		t.Fatalf("schema_migrations has %d rows, want %d", got, want)
	}

	// Opening again applies nothing new and keeps the data.
	db = openAt(t, path)
	got, err := db.ThreadByID(ctx, th.ID)
	if err != nil {
		t.Fatalf("ThreadByID after reopen: %v", err)
	}
	if got.Repo != "app" {
		t.Errorf("repo after reopen = %q, want %q", got.Repo, "app")
	}
	if got := migrationRows(t, path); len(got) != sqlite.SchemaVersion() || got[len(got)-1] != sqlite.SchemaVersion() {
		t.Errorf("schema_migrations after reopen = %v, want versions 1..%d once each", got, sqlite.SchemaVersion())
	}
	if err := db.Check(ctx); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// A file written by an older binary gets the migrations it lacks, in order,
// and keeps its data.
func TestOpenUpgradesOlderSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db := openAt(t, path)
	th := newThread(t, db, "slack", "1.0")
	db.Close()
	// Take the file back to version 1, as the first release left it.
	raw := rawDB(t, path)
	if _, err := raw.Exec(`DROP INDEX threads_by_branch; DROP INDEX threads_by_origin; DROP INDEX entries_by_type; DROP INDEX threads_recent; ALTER TABLE threads DROP COLUMN active_at; DROP TABLE pending_posts; DROP TABLE thread_leases; DROP TABLE run_usage; DROP INDEX inbound_thread; DROP INDEX inbound_author; DROP TABLE decisions; DROP INDEX runs_ended;
		ALTER TABLE threads DROP COLUMN origin; DROP TABLE openings; DROP TABLE schedule_firings; DROP TABLE session_snapshots;
		DELETE FROM schema_migrations WHERE version > 1`); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db = openAt(t, path)
	if got, want := migrationRows(t, path), sqlite.SchemaVersion(); len(got) != want || got[len(got)-1] != want {
		t.Errorf("schema_migrations after upgrade = %v, want versions 1..%d", got, want)
	}
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'entries_by_type'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("index entries_by_type after upgrade: count %d, err %v; want it recreated by migration 2", n, err)
	}
	got, err := db.ThreadByID(ctx, th.ID)
	if err != nil {
		t.Errorf("thread after upgrade: %v", err)
	}
	if !got.ActiveAt.Equal(got.UpdatedAt) {
		t.Errorf("thread active at %v after upgrade, want its last update %v (migration 3)", got.ActiveAt, got.UpdatedAt)
	}
}

func TestOpenEmptyFileIsANewDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	openAt(t, path)
	if got := len(migrationRows(t, path)); got != sqlite.SchemaVersion() {
		t.Errorf("schema_migrations has %d rows, want %d", got, sqlite.SchemaVersion())
	}
}

// refused opens path expecting a refusal wrapping want, and checks the error
// names the file and the file was not modified.
func refused(t *testing.T, path string, want error) error {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), path, quiet)
	if err == nil {
		db.Close()
		t.Fatalf("Open(%s) succeeded, want an error wrapping %v", path, want)
	}
	if !errors.Is(err, want) {
		t.Errorf("Open error = %v, want one wrapping %v", err, want)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("Open error %q does not name the file %s", err, path)
	}
	after, err2 := os.ReadFile(path)
	if err2 != nil {
		t.Fatal(err2)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("refused file was modified (%d bytes before, %d after)", len(before), len(after))
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Errorf("refused file got a WAL next to it")
	}
	return err
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db, err := sqlite.Open(context.Background(), path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw := rawDB(t, path)
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future', 0)`, sqlite.SchemaVersion()+7); err != nil {
		t.Fatal(err)
	}
	// Back to a single file so that "unchanged" is a byte comparison.
	if _, err := raw.Exec(`PRAGMA journal_mode = DELETE`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	err = refused(t, path, storage.ErrSchemaTooNew)
	if !strings.Contains(err.Error(), "newer threadsmith") {
		t.Errorf("error %q does not say what to do", err)
	}
}

func TestOpenRefusesRandomBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	if err := os.WriteFile(path, []byte(rand.Text()+rand.Text()+strings.Repeat("x", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, path, sqlite.ErrNotDatabase)
}

func TestOpenRefusesDamagedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	raw := rawDB(t, path)
	if _, err := raw.Exec(`CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the header, wreck the schema page's b-tree header.
	for i := 100; i < 120; i++ {
		b[i] = 0xff
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	refused(t, path, sqlite.ErrNotDatabase)
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	raw := rawDB(t, path)
	if _, err := raw.Exec(`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('acme')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	err := refused(t, path, storage.ErrForeignDatabase)
	if !strings.Contains(err.Error(), "customers") {
		t.Errorf("error %q does not list the tables it found", err)
	}
}
