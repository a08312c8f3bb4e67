package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/threadsmith/threadsmith/internal/sessiongen"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// BenchmarkResumeSmall is a resume of a small session that never compacted
// (sessiongen's 100 KB shapes): LoadLiveEntries and the context rebuilt, and
// LoadEntries (every entry, here the same ones) as the floor; "roundtrip" is
// SELECT 1, "rows" reads the live entries' rows without decoding them and
// "decoded" is LoadLiveEntries without the context: the steps of a resume.
// cpu-µs/op is this process's CPU time per resume (the server's is not in
// it).
//
//	THREADSMITH_REQUIRE_POSTGRES=1 go test -run '^$' -bench ResumeSmall -count 3 ./storage/postgres
func BenchmarkResumeSmall(b *testing.B) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, storagetest.FreshSchema(b, storagetest.PostgresDSN(b)), postgres.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	for i, sh := range []struct {
		name  string
		shape sessiongen.Shape
	}{
		{"ascii-100KB", sessiongen.Shape{Bytes: 100_000}},
		{"nonascii-100KB", sessiongen.Shape{Bytes: 100_000, NonASCII: true}},
	} {
		entries := sessiongen.Generate(uint64(i+1), sh.shape)
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: sh.name}, storage.ThreadInit{})
		if err != nil {
			b.Fatal(err)
		}
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.AppendEntries(ctx, s.ID, entries); err != nil {
			b.Fatal(err)
		}
		// Where a resume's time goes: one round trip, the statement's rows
		// read without decoding, then decoded, then the context rebuilt.
		b.Run(sh.name+"/roundtrip", func(b *testing.B) {
			for b.Loop() {
				if err := postgres.RoundTrip(ctx, db); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sh.name+"/rows", func(b *testing.B) {
			storagetest.CPUPerOp(b, func() error {
				if n, err := postgres.ReadLiveRows(ctx, db, s.ID); err != nil || n == 0 {
					return fmt.Errorf("ReadLiveRows: %d bytes, %v", n, err)
				}
				return nil
			})
		})
		b.Run(sh.name+"/decoded", func(b *testing.B) {
			storagetest.CPUPerOp(b, func() error {
				if es, err := db.LoadLiveEntries(ctx, s.ID); err != nil || len(es) != len(entries) {
					return fmt.Errorf("LoadLiveEntries: %d entries, %v", len(es), err)
				}
				return nil
			})
		})
		b.Run(sh.name+"/LoadLiveEntries", func(b *testing.B) {
			storagetest.CPUPerOp(b, storagetest.Resume(ctx, db.LoadLiveEntries, s.ID, len(entries)))
		})
		b.Run(sh.name+"/LoadEntries", func(b *testing.B) {
			storagetest.CPUPerOp(b, storagetest.Resume(ctx, db.LoadEntries, s.ID, len(entries)))
		})
		// The same session with its snapshot, as a session that ran has:
		// what a resume reads.
		snapped, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.AppendEntries(ctx, snapped.ID, entries); err != nil {
			b.Fatal(err)
		}
		if err := db.SnapshotSession(ctx, snapped.ID); err != nil {
			b.Fatal(err)
		}
		b.Run(sh.name+"/snapshot", func(b *testing.B) {
			storagetest.CPUPerOp(b, storagetest.Resume(ctx, db.LoadLiveEntries, snapped.ID, len(entries)))
		})
	}
}
