package postgres_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(storagetest.MainWithPostgres(m)) }

// Every SQLite migration has its PostgreSQL mirror, under the same number
// and name: a schema change made for one backend only fails here.
func TestMigrationsMirrorSQLite(t *testing.T) {
	sqlite, err := fs.Glob(os.DirFS("../migrations"), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	pg, err := fs.Glob(os.DirFS("migrations"), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sqlite, " ") != strings.Join(pg, " ") {
		t.Errorf("SQLite migrations %v\nPostgreSQL migrations %v\nwant the same files", sqlite, pg)
	}
	if postgres.SchemaVersion() != storage.SchemaVersion() {
		t.Errorf("PostgreSQL schema version %d, SQLite %d", postgres.SchemaVersion(), storage.SchemaVersion())
	}
}

func TestOpenRefusesNewerAndForeignSchemas(t *testing.T) {
	dsn := storagetest.PostgresDSN(t)
	ctx := context.Background()
	exec := func(dsn, sql string) {
		t.Helper()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}

	newer := storagetest.FreshSchema(t, dsn)
	db, err := postgres.Open(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	exec(newer, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future', 0)`)
	if _, err := postgres.Open(ctx, newer); !errors.Is(err, storage.ErrSchemaTooNew) {
		t.Errorf("open of a newer schema: %v, want ErrSchemaTooNew", err)
	}

	foreign := storagetest.FreshSchema(t, dsn)
	exec(foreign, `CREATE TABLE customers (id int)`)
	if _, err := postgres.Open(ctx, foreign); !errors.Is(err, storage.ErrForeignDatabase) {
		t.Errorf("open of a foreign schema: %v, want ErrForeignDatabase", err)
	}

	// Several replicas starting at once migrate the schema once.
	fresh := storagetest.FreshSchema(t, dsn)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, err := postgres.Open(ctx, fresh)
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent open: %v", err)
		}
	}
}

// A malformed DSN is refused without echoing it (it may hold a password).
func TestOpenDoesNotEchoTheDSN(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://u:s3cret@host:notaport/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("open of a bad DSN: %v", err)
	}
}

// The hooks are told of each finished run and recorded push once, runs found
// interrupted included, as with SQLite.
func TestHooks(t *testing.T) {
	ctx := context.Background()
	var finished []storage.RunOutcome
	var pushes []storage.PushResult
	db, err := postgres.Open(ctx, storagetest.FreshSchema(t, storagetest.PostgresDSN(t)), postgres.WithHooks(storage.Hooks{
		RunFinished:  func(o storage.RunOutcome, _ time.Duration) { finished = append(finished, o) },
		PushRecorded: func(r storage.PushResult) { pushes = append(pushes, r) },
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{})
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := db.StartRun(ctx, th.ID, s.ID, 0)
	db.StartRun(ctx, th.ID, s.ID, 0)
	if err := db.FinishRun(ctx, r1, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	db.FinishRun(ctx, r1, storage.RunDone) // already ended: not told again
	if _, err := db.InterruptRuns(ctx); err != nil {
		t.Fatal(err)
	}
	db.RecordPush(ctx, storage.Push{ThreadID: th.ID, Branch: "b", Result: storage.PushRejected})
	if !slices.Equal(finished, []storage.RunOutcome{storage.RunDone, storage.RunInterrupted}) || !slices.Equal(pushes, []storage.PushResult{storage.PushRejected}) {
		t.Errorf("hooks told runs %v and pushes %v", finished, pushes)
	}
}
