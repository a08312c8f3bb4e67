package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// BenchmarkAppendConcurrent measures the latency of AppendEntries (one entry per
// call, as the agent appends on each message_end) with 50 sessions appending at
// once in a closed loop, the worst case of 50 busy threads. It reports p50/p99
// per call. Variants: the default (group commit on one write connection,
// prepared statements); one transaction per call on one connection; the same
// with statements prepared per call; one transaction per call on a pool of
// 8 write connections contending through SQLite's busy handler; group commit
// with synchronous=FULL (an fsync per commit) instead of NORMAL; and group
// commit without the writer's yields (the code before them).
func BenchmarkAppendConcurrent(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []sqlite.Option
	}{
		{"group-commit", nil},
		{"group-commit-synchronous-full", []sqlite.Option{sqlite.WithExtraPragmas("synchronous(FULL)")}},
		{"tx-per-call", []sqlite.Option{sqlite.WithoutGroupCommit()}},
		{"tx-per-call-unprepared", []sqlite.Option{sqlite.WithoutGroupCommit(), sqlite.WithoutPreparedStatements()}},
		{"tx-per-call-8-conns", []sqlite.Option{sqlite.WithoutGroupCommit(), sqlite.WithWriteConns(8)}},
	} {
		b.Run(v.name, func(b *testing.B) { benchAppendConcurrent(b, 50, 0, v.opts...) })
	}
	// The writer before it yielded to writers about to queue (see writeLoop).
	b.Run("group-commit-no-yield", func(b *testing.B) {
		defer sqlite.SetCommitYields(0)()
		benchAppendConcurrent(b, 50, 0)
	})
}

// BenchmarkAppendPaced is BenchmarkAppendConcurrent with each of the 50
// sessions appending 20 times a second (1,000 appends/s in all, far above what
// 50 model-bound sessions produce), the latency a busy but unsaturated bot sees.
func BenchmarkAppendPaced(b *testing.B) {
	b.Run("group-commit", func(b *testing.B) { benchAppendConcurrent(b, 50, 50*time.Millisecond) })
	b.Run("tx-per-call", func(b *testing.B) { benchAppendConcurrent(b, 50, 50*time.Millisecond, sqlite.WithoutGroupCommit()) })
	b.Run("tx-per-call-autocheckpoint", func(b *testing.B) {
		benchAppendConcurrent(b, 50, 50*time.Millisecond, sqlite.WithoutGroupCommit(), sqlite.WithAutoCheckpoint())
	})
}

// benchAppendConcurrent runs sessions appenders, each appending b.N/sessions
// entries, back to back or one per interval.
func benchAppendConcurrent(b *testing.B, sessions int, interval time.Duration, opts ...sqlite.Option) {
	ctx := context.Background()
	db := openDB(b, opts...)
	ids := make([]string, sessions)
	pools := make([][]transcript.Entry, sessions)
	for i := range ids {
		ids[i] = newSession(b, db, fmt.Sprintf("%d.0", i)).ID
		pools[i] = genEntries(uint64(i), 200)
	}
	perSession := max(b.N/sessions, 1)
	lat := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	var busy sync.Map
	b.ResetTimer()
	for i := range sessions {
		wg.Go(func() {
			l := make([]time.Duration, 0, perSession)
			var tick <-chan time.Time
			if interval > 0 {
				// Spread the sessions over the interval.
				time.Sleep(time.Duration(i) * interval / time.Duration(sessions))
				t := time.NewTicker(interval)
				defer t.Stop()
				tick = t.C
			}
			for k := range perSession {
				if tick != nil {
					<-tick
				}
				e := pools[i][k%len(pools[i])]
				e.Seq = int64(k)
				start := time.Now()
				if err := db.AppendEntries(ctx, ids[i], []transcript.Entry{e}); err != nil {
					busy.Store(i, err)
					return
				}
				l = append(l, time.Since(start))
			}
			lat[i] = l
		})
	}
	wg.Wait()
	b.StopTimer()
	busy.Range(func(k, v any) bool {
		b.Errorf("session %v: %v", k, v)
		return true
	})
	storagetest.ReportLatencies(b, lat)
}

// sessionWith5000 stores a realistic 5,000-entry session (with compactions) and
// returns its id.
func sessionWith5000(b *testing.B, db *sqlite.DB) string {
	s := newSession(b, db, "1.0")
	entries := genEntries(7, 5000)
	for i := 0; i < len(entries); i += 500 {
		if err := db.AppendEntries(context.Background(), s.ID, entries[i:i+500]); err != nil {
			b.Fatal(err)
		}
	}
	return s.ID
}

// BenchmarkLoadSession5000 measures restoring a 5,000-entry session: every
// entry (LoadEntries), and only the live context (LoadContext, what a resume
// needs; the session has a compaction every 1,000 entries).
func BenchmarkLoadSession5000(b *testing.B) {
	ctx := context.Background()
	db := openDB(b)
	id := sessionWith5000(b, db)
	b.Run("LoadEntries", func(b *testing.B) {
		for b.Loop() {
			if es, err := db.LoadEntries(ctx, id); err != nil || len(es) != 5000 {
				b.Fatalf("LoadEntries = %d entries, %v", len(es), err)
			}
		}
	})
	b.Run("LoadContext", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.LoadContext(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDatabaseBytes reports the file size per 1,000 realistic entries
// appended one per call, after a checkpoint, next to the size of their JSON.
func BenchmarkDatabaseBytes(b *testing.B) {
	for b.Loop() {
		path := filepath.Join(b.TempDir(), sqlite.FileName)
		db := openAt(b, path)
		s := newSession(b, db, "1.0")
		entries := genEntries(9, 5000)
		payload := 0
		for _, e := range entries {
			if err := db.AppendEntries(context.Background(), s.ID, []transcript.Entry{e}); err != nil {
				b.Fatal(err)
			}
			payload += jsonSize(e)
		}
		db.Close()
		raw := rawDB(b, path)
		if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		raw.Close()
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size())/5, "file-B/1000entries")
		b.ReportMetric(float64(payload)/5, "json-B/1000entries")
	}
}

// BenchmarkAcceptInbound measures storing one chat message (the work done
// before a platform event is acknowledged).
func BenchmarkAcceptInbound(b *testing.B) {
	db := openDB(b)
	th := newThread(b, db, "slack", "1.0")
	k := 0
	for b.Loop() {
		k++
		if _, _, err := db.AcceptInbound(context.Background(), storage.Inbound{Platform: "slack", EventID: fmt.Sprint("Ev", k),
			Channel: "C1", MessageID: fmt.Sprintf("1.%09d", k), ThreadID: th.ID, AuthorID: "U1", Text: "please fix the failing test in server/handler.go",
			Mode: storage.ModePrompt}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAcceptInboundInThread measures a new thread's first message (a
// mention): the thread created and the input stored in one transaction, the
// write a Slack mention's acknowledgement waits for. cpu-µs/op is the
// process's CPU time per call (getrusage): steadier than the wall time, which
// the commit's write to the WAL dominates on a shared disk.
func BenchmarkAcceptInboundInThread(b *testing.B) {
	db := openDB(b)
	k := 0
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	defer func() { b.ReportMetric(float64((cpu()-start).Microseconds())/float64(b.N), "cpu-µs/op") }()
	for b.Loop() {
		k++
		ts := fmt.Sprintf("1.%09d", k)
		if _, err := db.AcceptInboundInThread(context.Background(), storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: ts},
			storage.ThreadInit{Repo: "app", Branch: "bot/" + ts}, storage.Inbound{Platform: "slack", EventID: fmt.Sprint("Ev", k),
				Channel: "C1", MessageID: ts, AuthorID: "U1", Text: "please fix the failing test in server/handler.go",
				Mode: storage.ModePrompt}); err != nil {
			b.Fatal(err)
		}
	}
}

func jsonSize(e transcript.Entry) int {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return len(b)
}

// BenchmarkFinishRunLongSession is a run's end on a 5,000-entry session: the
// outcome and the run's usage (recordRunUsage), in the writer's transaction,
// where every other write waits. Each round is a run of one input and 10 new
// entries after the previous run's end; only FinishRun is timed.
func BenchmarkFinishRunLongSession(b *testing.B) {
	ctx := context.Background()
	db := openDB(b)
	id := sessionWith5000(b, db)
	s, err := db.GetSession(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	more := genEntries(11, 5000)
	seq := int64(5000)
	for b.Loop() {
		b.StopTimer()
		in, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", Channel: "C1", ThreadID: s.ThreadID,
			EventID: fmt.Sprint("Ev", seq), Text: "go on", Mode: storage.ModePrompt})
		if err != nil {
			b.Fatal(err)
		}
		run, err := db.StartRun(ctx, s.ThreadID, id, in)
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]transcript.Entry, 10)
		for i := range batch {
			e := more[(int(seq)+i)%len(more)]
			e.Seq = seq + int64(i)
			batch[i] = e
		}
		batch[0] = transcript.MessageEntry(seq, llm.Message{Role: llm.RoleUser, InputID: fmt.Sprint(in), Content: []llm.Content{llm.Text("go on")}})
		if err := db.AppendEntries(ctx, id, batch); err != nil {
			b.Fatal(err)
		}
		seq += 10
		b.StartTimer()
		if err := db.FinishRun(ctx, run, storage.RunDone); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetThread is the look-up every delivered message makes before it
// is acknowledged (the bridge's Receive), prepared on the read pool or
// parsed on every call.
func BenchmarkGetThread(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []sqlite.Option
	}{{"prepared", nil}, {"unprepared", []sqlite.Option{sqlite.WithoutPreparedStatements()}}} {
		b.Run(bc.name, func(b *testing.B) {
			db := openDB(b, bc.opts...)
			th := newThread(b, db, "slack", "1.0")
			for b.Loop() {
				if _, err := db.GetThread(context.Background(), th.Key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResumeSmall is a resume of a small session that never compacted
// (sessiongen's 100 KB shapes): LoadLiveEntries and the context rebuilt, with
// the queries prepared on the read pool or parsed on every call, and
// LoadEntries (every entry, here the same ones) as the floor. "rows" reads
// the live entries' rows without decoding them and "decoded" is
// LoadLiveEntries without the context: the steps of a resume.
// cpu-µs/op is the process's CPU time per resume, steadier than wall time on
// a shared machine.
func BenchmarkResumeSmall(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts []sqlite.Option
	}{{"prepared", nil}, {"unprepared", []sqlite.Option{sqlite.WithoutPreparedStatements()}}} {
		db := openDB(b, bc.opts...)
		for i, sh := range []struct {
			name  string
			shape sessiongen.Shape
		}{
			{"ascii-100KB", sessiongen.Shape{Bytes: 100_000}},
			{"nonascii-100KB", sessiongen.Shape{Bytes: 100_000, NonASCII: true}},
		} {
			entries := sessiongen.Generate(uint64(i+1), sh.shape)
			s := newSession(b, db, sh.name)
			if err := db.AppendEntries(ctx, s.ID, entries); err != nil {
				b.Fatal(err)
			}
			// Where a resume's time goes: the statement's rows read
			// without decoding, then decoded, then the context rebuilt.
			b.Run(bc.name+"/"+sh.name+"/rows", func(b *testing.B) {
				storagetest.CPUPerOp(b, func() error {
					if n, err := sqlite.ReadLiveRows(ctx, db, s.ID); err != nil || n == 0 {
						return fmt.Errorf("ReadLiveRows: %d bytes, %v", n, err)
					}
					return nil
				})
			})
			b.Run(bc.name+"/"+sh.name+"/decoded", func(b *testing.B) {
				storagetest.CPUPerOp(b, func() error {
					if es, err := db.LoadLiveEntries(ctx, s.ID); err != nil || len(es) != len(entries) {
						return fmt.Errorf("LoadLiveEntries: %d entries, %v", len(es), err)
					}
					return nil
				})
			})
			b.Run(bc.name+"/"+sh.name+"/LoadLiveEntries", func(b *testing.B) {
				storagetest.CPUPerOp(b, storagetest.Resume(ctx, db.LoadLiveEntries, s.ID, len(entries)))
			})
			b.Run(bc.name+"/"+sh.name+"/LoadEntries", func(b *testing.B) {
				storagetest.CPUPerOp(b, storagetest.Resume(ctx, db.LoadEntries, s.ID, len(entries)))
			})
			// The same session with its snapshot, as a session that ran
			// has: what a resume reads.
			snapped := newSession(b, db, sh.name+"-snapshot")
			if err := db.AppendEntries(ctx, snapped.ID, entries); err != nil {
				b.Fatal(err)
			}
			if err := db.SnapshotSession(ctx, snapped.ID); err != nil {
				b.Fatal(err)
			}
			b.Run(bc.name+"/"+sh.name+"/snapshot", func(b *testing.B) {
				storagetest.CPUPerOp(b, storagetest.Resume(ctx, db.LoadLiveEntries, snapped.ID, len(entries)))
			})
		}
	}
}

// BenchmarkRunEnd times what the end of a run costs a session: appending
// the run's entries (a prompt, a tool call, its result, an answer), and with
// its snapshot taken after them (what the agent does), on sessions of
// several shapes with a snapshot from their previous run. The appends alone
// are the baseline of the same run.
func BenchmarkRunEnd(b *testing.B) {
	ctx := context.Background()
	db := openDB(b)
	for i, sh := range []struct {
		name  string
		shape sessiongen.Shape
	}{
		{"ascii-100KB", sessiongen.Shape{Bytes: 100_000}},
		{"nonascii-100KB", sessiongen.Shape{Bytes: 100_000, NonASCII: true}},
		{"ascii-2MB", sessiongen.Shape{Bytes: 2_000_000}},
		{"small-calls-3MB", sessiongen.Shape{Bytes: 3_000_000, ResultMin: 40, ResultMax: 400, AnswerEvery: 12}},
		{"huge-outputs-20MB", sessiongen.Shape{Bytes: 20_000_000, HugeEvery: 5, HugeMin: 500_000, HugeMax: 2_000_000}},
	} {
		entries := sessiongen.Generate(uint64(i+1), sh.shape)
		for _, snapshot := range []bool{false, true} {
			name := sh.name + "/append"
			if snapshot {
				name += "+snapshot"
			}
			s := newSession(b, db, name)
			for j := 0; j < len(entries); j += 200 {
				if err := db.AppendEntries(ctx, s.ID, entries[j:min(j+200, len(entries))]); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.SnapshotSession(ctx, s.ID); err != nil {
				b.Fatal(err)
			}
			live, err := db.LoadLiveEntries(ctx, s.ID)
			if err != nil {
				b.Fatal(err)
			}
			seq := entries[len(entries)-1].Seq + 1
			snap, err := backend.EncodeSnapshot(live)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(name, func(b *testing.B) {
				defer b.ReportMetric(float64(len(snap))/1e6, "snapshot-MB")
				for b.Loop() {
					run := []transcript.Entry{
						transcript.MessageEntry(seq, llm.UserText("and now the tests")),
						transcript.MessageEntry(seq+1, llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall("c", "bash", []byte(`{"command":"go test ./..."}`))}, StopReason: llm.StopReasonToolUse}),
						transcript.MessageEntry(seq+2, llm.Message{Role: llm.RoleToolResult, ToolCallID: "c", ToolName: "bash", Content: []llm.Content{llm.Text("ok  \texample.com/p\t0.012s")}}),
						transcript.MessageEntry(seq+3, llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("They pass.")}, StopReason: llm.StopReasonStop}),
					}
					seq += 4
					if err := db.AppendEntries(ctx, s.ID, run); err != nil {
						b.Fatal(err)
					}
					if snapshot {
						if err := db.SnapshotSession(ctx, s.ID); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
