package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// Every connection either pool opens carries the pragmas, not just the first.
func TestPragmasOnEveryConnection(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), FileName), WithReadConns(3), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Hold three read connections at once so the pool must open three.
	var conns []*sql.Conn
	for range 3 {
		c, err := db.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	w, err := db.w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	want := map[string]string{
		"journal_mode":       "wal",
		"foreign_keys":       "1",
		"busy_timeout":       "10000",
		"synchronous":        "1", // NORMAL
		"journal_size_limit": "67108864",
	}
	check := func(name string, c *sql.Conn, queryOnly string) {
		for p, v := range want {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+p).Scan(&got); err != nil {
				t.Fatalf("%s: PRAGMA %s: %v", name, p, err)
			}
			if !strings.EqualFold(got, v) {
				t.Errorf("%s: PRAGMA %s = %s, want %s", name, p, got, v)
			}
		}
		var got string
		if err := c.QueryRowContext(ctx, "PRAGMA query_only").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != queryOnly {
			t.Errorf("%s: PRAGMA query_only = %s, want %s", name, got, queryOnly)
		}
	}
	for i, c := range conns {
		check("read connection "+string(rune('1'+i)), c, "1")
	}
	check("write connection", w, "0")
	// Commits leave checkpoints to the checkpointer.
	var auto string
	if err := w.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if auto != "0" {
		t.Errorf("write connection: PRAGMA wal_autocheckpoint = %s, want 0", auto)
	}
}

func TestLoadMigrationsRejectsGapsAndBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
		"duplicate": {"migrations/0001_a.sql": {}, "migrations/0001_b.sql": {}},
		"bad name":  {"migrations/init.sql": {}},
	} {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("%s: loadMigrations succeeded, want an error", name)
		}
	}
	ms, err := loadMigrations(fstest.MapFS{"migrations/0002_b.sql": {Data: []byte("B")}, "migrations/0001_a.sql": {Data: []byte("A")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].sql != "A" || ms[1].version != 2 || ms[1].name != "0002_b" {
		t.Errorf("loadMigrations = %+v, want 0001_a (A) then 0002_b", ms)
	}
	if len(migrations) == 0 {
		t.Error("no embedded migrations")
	}
}
