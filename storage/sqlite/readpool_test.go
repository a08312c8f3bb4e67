package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"testing"
)

// The read pool's connections map the database file and keep a large page
// cache (readPragmas); the write connection keeps SQLite's defaults.
func TestReadConnectionsMapTheFile(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), FileName), WithReadConns(2), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r1, err := db.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := db.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	w, err := db.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pragma := func(c interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}, p string) int64 {
		var v int64
		if err := c.QueryRowContext(ctx, "PRAGMA "+p).Scan(&v); err != nil {
			t.Fatalf("PRAGMA %s: %v", p, err)
		}
		return v
	}
	for i, c := range []*sql.Conn{r1, r2} {
		if got := pragma(c, "mmap_size"); got != 256<<20 {
			t.Errorf("read connection %d: mmap_size = %d, want %d", i+1, got, 256<<20)
		}
		if got := pragma(c, "cache_size"); got != -16384 {
			t.Errorf("read connection %d: cache_size = %d, want -16384", i+1, got)
		}
	}
	if got := pragma(w, "mmap_size"); got != 0 {
		t.Errorf("write connection: mmap_size = %d, want 0", got)
	}
}
