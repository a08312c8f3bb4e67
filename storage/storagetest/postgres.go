package storagetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
)

// requirePostgres reports whether the PostgreSQL half must run.
func requirePostgres() bool { return os.Getenv(EnvRequirePostgres) == "1" }

// MainWithPostgres runs a test binary (call it from TestMain). With
// THREADSMITH_REQUIRE_POSTGRES=1 and no THREADSMITH_TEST_POSTGRES, it starts
// a throwaway cluster (StartCluster), points THREADSMITH_TEST_POSTGRES at it
// for the tests, and stops it when they are done.
func MainWithPostgres(m *testing.M) int {
	if os.Getenv(EnvPostgresDSN) != "" || !requirePostgres() {
		return m.Run()
	}
	c, err := StartCluster()
	if err != nil {
		fmt.Fprintf(os.Stderr, "storagetest: %s=1 and no %s, and starting a throwaway PostgreSQL failed: %v\n",
			EnvRequirePostgres, EnvPostgresDSN, err)
		return 1
	}
	os.Setenv(EnvPostgresDSN, c.DSN)
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "storagetest: stopping the throwaway PostgreSQL: %v\n", err)
	}
	return code
}

// PostgresDSN returns the DSN of the PostgreSQL the tests may use. Without
// one it skips t, saying so plainly; when PostgreSQL is required
// (THREADSMITH_REQUIRE_POSTGRES=1) it starts a cluster for t instead, and
// fails t if it cannot.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgresDSN)
	if dsn != "" {
		return dsn
	}
	if requirePostgres() {
		// A test binary without MainWithPostgres: a cluster for this test.
		c, err := StartCluster()
		if err != nil {
			t.Fatalf("%s=1 and no %s, and starting a throwaway PostgreSQL failed: %v", EnvRequirePostgres, EnvPostgresDSN, err)
		}
		t.Cleanup(func() {
			if err := c.Stop(); err != nil {
				t.Errorf("stopping the throwaway PostgreSQL: %v", err)
			}
		})
		return c.DSN
	}
	t.Skipf("PostgreSQL half SKIPPED: %s is not set. Run it with %s=postgres://user@host/db, or with %s=1 to start a throwaway cluster (needs %s)",
		EnvPostgresDSN, EnvPostgresDSN, EnvRequirePostgres, DefaultPostgresBin)
	return ""
}

// NewPostgres is the PostgreSQL backend's NewFunc: each database is a new
// schema of the database dsn names, dropped when the test ends.
func NewPostgres(dsn string, opts ...postgres.Option) NewFunc {
	return func(t testing.TB, now func() time.Time) Opener {
		t.Helper()
		schemaDSN := FreshSchema(t, dsn)
		opts := append([]postgres.Option{postgres.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
		if now != nil {
			// Leases are judged by the server's clock: the suite's clock
			// moves it by as much as it moved forward.
			opts = append(opts, postgres.WithClock(now),
				postgres.WithServerClockShift(func() time.Duration { return now().Sub(time.Now()) }))
		}
		return func(ctx context.Context) (storage.Store, error) {
			return postgres.Open(ctx, schemaDSN, opts...)
		}
	}
}

// FreshSchema creates an empty schema in the database dsn names and returns
// a DSN that uses it (search_path); the schema is dropped when t ends.
func FreshSchema(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	name := "ts_" + strings.ToLower(rand.Text()[:12])
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", EnvPostgresDSN, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return WithSearchPath(dsn, name)
}

// WithSearchPath adds search_path=schema to a URL or key=value DSN.
func WithSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "search_path=" + schema
	}
	return dsn + " search_path=" + schema
}
