package storagetest_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// BenchmarkAppendConcurrentBackends is storage's BenchmarkAppendConcurrent
// shape (50 sessions appending one realistic entry per call in a closed loop;
// p50/p99 per call) on each backend in the same run: SQLite (group commit,
// synchronous=NORMAL: a commit is not fsynced), PostgreSQL with its default
// synchronous_commit=on (every commit waits for its WAL fsync), and
// PostgreSQL with synchronous_commit=off (commits not waited for, closer to
// SQLite's NORMAL), and PostgreSQL with a pool of 4 and of 50 connections
// instead of the default 16. The PostgreSQL rows need THREADSMITH_TEST_POSTGRES or
// THREADSMITH_REQUIRE_POSTGRES=1.
func BenchmarkAppendConcurrentBackends(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), sqlite.FileName)
		db, err := sqlite.Open(context.Background(), path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		benchAppend(b, db, 50)
	})
	for _, v := range []struct{ name, params string }{
		{"postgres", ""},
		{"postgres-leased", ""},
		{"postgres-synchronous-commit-off", "synchronous_commit=off"},
		{"postgres-pool-4", "pool_max_conns=4"},
		{"postgres-pool-50", "pool_max_conns=50"},
	} {
		b.Run(v.name, func(b *testing.B) {
			dsn := storagetest.FreshSchema(b, storagetest.PostgresDSN(b))
			if v.params != "" {
				dsn += "&" + v.params
			}
			db, err := postgres.Open(context.Background(), dsn, postgres.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if v.name == "postgres-leased" {
				benchLeasedAppend(b, db, 50)
				return
			}
			benchAppend(b, db, 50)
		})
	}
}

func benchAppend(b *testing.B, db storage.Store, sessions int) {
	benchAppendAs(b, db, sessions, false)
}

// benchLeasedAppend is benchAppend with each thread leased and every append
// made under its lease (as a replica writes), fence check included.
func benchLeasedAppend(b *testing.B, db storage.Store, sessions int) {
	benchAppendAs(b, db, sessions, true)
}

func benchAppendAs(b *testing.B, db storage.Store, sessions int, leased bool) {
	ctx := context.Background()
	ctxs := make([]context.Context, sessions)
	ids := make([]string, sessions)
	pools := make([][]transcript.Entry, sessions)
	for i := range ids {
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: fmt.Sprint(i, ".0")}, storage.ThreadInit{})
		if err != nil {
			b.Fatal(err)
		}
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID
		pools[i] = sessiongen.Entries(uint64(i), 200)
		ctxs[i] = ctx
		if leased {
			l, ok, err := db.AcquireLease(ctx, th.ID, "bench", time.Hour)
			if err != nil || !ok {
				b.Fatalf("AcquireLease: %v, %v", ok, err)
			}
			ctxs[i] = storage.WithLease(ctx, l)
		}
	}
	perSession := max(b.N/sessions, 1)
	lat := make([][]time.Duration, sessions)
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	b.ResetTimer()
	for i := range sessions {
		wg.Go(func() {
			l := make([]time.Duration, 0, perSession)
			for k := range perSession {
				e := pools[i][k%len(pools[i])]
				e.Seq = int64(k)
				start := time.Now()
				if err := db.AppendEntries(ctxs[i], ids[i], []transcript.Entry{e}); err != nil {
					errs[i] = err
					return
				}
				l = append(l, time.Since(start))
			}
			lat[i] = l
		})
	}
	wg.Wait()
	b.StopTimer()
	for i, err := range errs {
		if err != nil {
			b.Errorf("session %d: %v", i, err)
		}
	}
	storagetest.ReportLatencies(b, lat)
}

// BenchmarkLoadSession5000Postgres is storage's BenchmarkLoadSession5000 (a
// realistic 5,000-entry session with a compaction every 1,000 entries, loaded
// whole) on PostgreSQL. It needs THREADSMITH_TEST_POSTGRES or
// THREADSMITH_REQUIRE_POSTGRES=1.
func BenchmarkLoadSession5000Postgres(b *testing.B) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, storagetest.FreshSchema(b, storagetest.PostgresDSN(b)), postgres.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	entries := sessiongen.Entries(7, 5000)
	for i := 0; i < len(entries); i += 500 {
		if err := db.AppendEntries(ctx, s.ID, entries[i:i+500]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if es, err := db.LoadEntries(ctx, s.ID); err != nil || len(es) != 5000 {
			b.Fatalf("LoadEntries = %d entries, %v", len(es), err)
		}
	}
}
