package storagetest_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(storagetest.MainWithPostgres(m)) }

// The embedded backend: a SQLite file per test, always run.
func TestSQLite(t *testing.T) {
	storagetest.Run(t, func(t testing.TB, now func() time.Time) storagetest.Opener {
		path := filepath.Join(t.TempDir(), sqlite.FileName)
		return func(ctx context.Context) (storage.Store, error) {
			return sqlite.Open(ctx, path, sqlite.WithLogger(slog.New(slog.DiscardHandler)), sqlite.WithClock(now))
		}
	})
}

// The PostgreSQL backend: the same suite, unchanged. Skipped (and says so)
// without THREADSMITH_TEST_POSTGRES; required with THREADSMITH_REQUIRE_POSTGRES=1.
func TestPostgres(t *testing.T) {
	storagetest.Run(t, storagetest.NewPostgres(storagetest.PostgresDSN(t)))
}
