package postgres_test

import (
	"context"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/transcript"
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
			c0 := processCPU(b)
			for b.Loop() {
				if n, err := postgres.ReadLiveRows(ctx, db, s.ID); err != nil || n == 0 {
					b.Fatalf("ReadLiveRows: %d bytes, %v", n, err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
		b.Run(sh.name+"/decoded", func(b *testing.B) {
			c0 := processCPU(b)
			for b.Loop() {
				if es, err := db.LoadLiveEntries(ctx, s.ID); err != nil || len(es) != len(entries) {
					b.Fatalf("LoadLiveEntries: %d entries, %v", len(es), err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
		for _, load := range []struct {
			name string
			f    func(context.Context, string) ([]transcript.Entry, error)
		}{{"LoadLiveEntries", db.LoadLiveEntries}, {"LoadEntries", db.LoadEntries}} {
			b.Run(sh.name+"/"+load.name, func(b *testing.B) {
				c0 := processCPU(b)
				for b.Loop() {
					es, err := load.f(ctx, s.ID)
					if err != nil || len(es) != len(entries) {
						b.Fatalf("%s: %d entries, %v", load.name, len(es), err)
					}
					transcript.BuildContext(es)
				}
				b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
			})
		}
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
			c0 := processCPU(b)
			for b.Loop() {
				es, err := db.LoadLiveEntries(ctx, snapped.ID)
				if err != nil || len(es) != len(entries) {
					b.Fatalf("LoadLiveEntries: %d entries, %v", len(es), err)
				}
				transcript.BuildContext(es)
			}
			b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}

// processCPU is the CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
