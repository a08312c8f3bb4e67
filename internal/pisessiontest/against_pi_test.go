package pisessiontest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// benchShapes are the sessions timed against pi: sizes from 100 KB to 20 MB,
// ASCII- and non-ASCII-heavy, many small tool calls, few huge outputs, many
// compactions.
var benchShapes = []struct {
	name  string
	shape sessiongen.Shape
}{
	{"ascii-100KB", sessiongen.Shape{Bytes: 100_000}},
	{"nonascii-100KB", sessiongen.Shape{Bytes: 100_000, NonASCII: true}},
	{"ascii-2MB", sessiongen.Shape{Bytes: 2_000_000}},
	{"nonascii-5MB", sessiongen.Shape{Bytes: 5_000_000, NonASCII: true}},
	{"small-calls-3MB", sessiongen.Shape{Bytes: 3_000_000, ResultMin: 40, ResultMax: 400, AnswerEvery: 12}},
	{"compactions-5MB", sessiongen.Shape{Bytes: 5_000_000, CompactAt: 50_000, Keep: 20_000}},
	{"huge-outputs-20MB", sessiongen.Shape{Bytes: 20_000_000, HugeEvery: 5, HugeMin: 500_000, HugeMax: 2_000_000}},
	{"ascii-20MB", sessiongen.Shape{Bytes: 20_000_000}},
}

// TestAgainstPi times, on each shape, what a person waits for: resuming a
// thread (its session loaded from SQLite and the model context rebuilt, as the
// bridge does on resume) against pi resuming the same session file
// (resume.mjs), and the compaction planning functions against pi's (bench.mjs),
// in interleaved rounds, and prints the medians. It runs only when
// THREADSMITH_PI_BENCH names a directory holding pi's anchor scripts with
// their node_modules installed (BENCHMARKS.md, "Resume against pi"):
//
//	THREADSMITH_PI_BENCH=/tmp/pi-compaction go test -run TestAgainstPi -v -timeout 60m ./internal/pisessiontest/
//
// THREADSMITH_PI_ROUNDS sets the number of rounds (3) and THREADSMITH_PI_SHAPES
// a comma-separated subset of the shapes. Resume is timed on PostgreSQL too
// when THREADSMITH_TEST_POSTGRES names a database or
// THREADSMITH_REQUIRE_POSTGRES=1 (a throwaway cluster).
func TestAgainstPi(t *testing.T) {
	dir := os.Getenv("THREADSMITH_PI_BENCH")
	if dir == "" {
		t.Skip("THREADSMITH_PI_BENCH is not set: no pi to time against")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("THREADSMITH_PI_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	only := os.Getenv("THREADSMITH_PI_SHAPES")
	ctx := context.Background()
	tmp := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(tmp, "bench.db"), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stores := []struct {
		name string
		db   storage.Store
	}{{"", db}}
	if os.Getenv(storagetest.EnvPostgresDSN) != "" || os.Getenv(storagetest.EnvRequirePostgres) == "1" {
		pg, err := postgres.Open(ctx, storagetest.FreshSchema(t, storagetest.PostgresDSN(t)), postgres.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		stores = append(stores, struct {
			name string
			db   storage.Store
		}{", PostgreSQL", pg})
	} else {
		t.Logf("PostgreSQL not timed: set %s or %s=1", storagetest.EnvPostgresDSN, storagetest.EnvRequirePostgres)
	}

	var runs []*shapeRun
	for i, s := range benchShapes {
		if only != "" && !slices.Contains(strings.Split(only, ","), s.name) {
			continue
		}
		entries := sessiongen.Generate(uint64(i+1), s.shape)
		var b bytes.Buffer
		if err := sessiongen.WritePi(&b, entries); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(tmp, s.name+".jsonl")
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		// Each store holds the session twice: with the snapshot a session
		// has once a run ended (what a resume reads), and without one (a
		// session whose last run was cut by a crash: its rows are read).
		sessions := map[string]string{}
		for _, st := range stores {
			th, _, err := st.db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: s.name}, storage.ThreadInit{})
			if err != nil {
				t.Fatal(err)
			}
			for _, snapshot := range []bool{true, false} {
				sess, err := st.db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
				if err != nil {
					t.Fatal(err)
				}
				for j := 0; j < len(entries); j += 200 {
					if err := st.db.AppendEntries(ctx, sess.ID, entries[j:min(j+200, len(entries))]); err != nil {
						t.Fatal(err)
					}
				}
				if !snapshot {
					sessions[st.name+rowsOnly] = sess.ID
					continue
				}
				if err := st.db.SnapshotSession(ctx, sess.ID); err != nil {
					t.Fatal(err)
				}
				sessions[st.name] = sess.ID
			}
		}
		loaded, err := db.LoadEntries(ctx, sessions[""])
		if err != nil {
			t.Fatal(err)
		}
		r := &shapeRun{name: s.name, file: file, sessions: sessions, size: b.Len(), entries: entries, loaded: loaded, fig: map[string][]float64{}}
		r.messages = len(transcript.BuildContext(entries).Messages)
		runs = append(runs, r)
	}

	piRuns := func(size int) int { return max(3, min(30, 30_000_000/size)) }
	for round := 0; round < rounds; round++ {
		for _, r := range runs {
			n := piRuns(r.size)
			var res struct {
				Messages int     `json:"messages"`
				Median   float64 `json:"resume_median_ms"`
			}
			node(t, dir, &res, "resume.mjs", r.file, strconv.Itoa(n))
			if res.Messages != r.messages {
				t.Fatalf("%s: pi's context has %d messages, ours %d", r.name, res.Messages, r.messages)
			}
			r.fig["pi resume"] = append(r.fig["pi resume"], res.Median)
			var bench struct {
				Load     float64 `json:"load_median_ms"`
				Estimate float64 `json:"estimate_all_ms"`
				FindCut  float64 `json:"findcut_ms"`
				Prepare  float64 `json:"prepare_ms"`
			}
			node(t, dir, &bench, "bench.mjs", r.file, strconv.Itoa(max(20, min(300, 300_000_000/r.size))))
			r.fig["pi EstimateTokens"] = append(r.fig["pi EstimateTokens"], bench.Estimate)
			r.fig["pi FindCutPoint"] = append(r.fig["pi FindCutPoint"], bench.FindCut)
			r.fig["pi Prepare"] = append(r.fig["pi Prepare"], bench.Prepare)

			for _, st := range stores {
				for _, w := range []string{st.name, st.name + rowsOnly} {
					id := r.sessions[w]
					r.fig["resume"+w] = append(r.fig["resume"+w], median(n, func() {
						es, err := st.db.LoadLiveEntries(ctx, id)
						if err != nil {
							t.Fatal(err)
						}
						if got := len(transcript.BuildContext(es).Messages); got != r.messages {
							t.Fatalf("%s: resumed context has %d messages, want %d", r.name, got, r.messages)
						}
					}))
				}
				id := r.sessions[st.name]
				r.fig["full load"+st.name] = append(r.fig["full load"+st.name], median(n, func() {
					es, err := st.db.LoadEntries(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					transcript.BuildContext(es)
				}))
			}
			// The planning functions run on what the bot plans with: entries
			// loaded from the store (texts carry their UTF-16 lengths from
			// decoding), and, for comparison, on the generated entries
			// (texts built in memory, counted byte by byte).
			for _, in := range []struct {
				suffix  string
				entries []transcript.Entry
			}{{"", r.loaded}, {", built", r.entries}} {
				es := in.entries
				r.fig["EstimateTokens"+in.suffix] = append(r.fig["EstimateTokens"+in.suffix], perOp(func() {
					for i := range es {
						if es[i].Message != nil {
							compaction.EstimateTokens(*es[i].Message)
						}
					}
				}))
				r.fig["FindCutPoint"+in.suffix] = append(r.fig["FindCutPoint"+in.suffix], perOp(func() {
					compaction.FindCutPoint(es, 0, len(es), 20000)
				}))
				r.fig["Prepare"+in.suffix] = append(r.fig["Prepare"+in.suffix], perOp(func() {
					if _, err := compaction.Prepare(es, compaction.DefaultSettings()); err != nil && !errors.Is(err, compaction.ErrNothingToCompact) {
						t.Fatal(err)
					}
				}))
			}
		}
		t.Log(table(round+1, runs))
	}
}

// rowsOnly names the figures of a session without a snapshot.
const rowsOnly = ", no snapshot"

// table prints the medians of the rounds so far, ours against pi's.
func table(rounds int, runs []*shapeRun) string {
	var out strings.Builder
	fmt.Fprintf(&out, "\nmedians of %d interleaved rounds, ms\n", rounds)
	fmt.Fprintf(&out, "| shape | pi file | entries | what | threadsmith | pi (same run) | pi / threadsmith |\n|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		for _, w := range []struct{ ours, pi string }{
			{"resume", "pi resume"}, {"resume" + rowsOnly, "pi resume"}, {"full load", "pi resume"},
			{"resume, PostgreSQL", "pi resume"}, {"resume, PostgreSQL" + rowsOnly, "pi resume"}, {"full load, PostgreSQL", "pi resume"},
			{"EstimateTokens", "pi EstimateTokens"}, {"FindCutPoint", "pi FindCutPoint"}, {"Prepare", "pi Prepare"},
			{"EstimateTokens, built", "pi EstimateTokens"}, {"FindCutPoint, built", "pi FindCutPoint"}, {"Prepare, built", "pi Prepare"},
		} {
			if len(r.fig[w.ours]) == 0 {
				continue
			}
			o, p := med(r.fig[w.ours]), med(r.fig[w.pi])
			fmt.Fprintf(&out, "| %s | %.2f MB | %d | %s | %.3f | %.3f | %.1f× |\n", r.name, float64(r.size)/1e6, len(r.entries), w.ours, o, p, p/o)
		}
	}
	return out.String()
}

// shapeRun is a shape being timed: its files and the figures of each round.
type shapeRun struct {
	name, file      string
	sessions        map[string]string // by store: "" (SQLite), ", PostgreSQL"
	size, messages  int
	entries, loaded []transcript.Entry
	fig             map[string][]float64
}

// node runs one of pi's anchor scripts and decodes the JSON line it prints.
func node(t *testing.T, dir string, v any, script string, args ...string) {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), v); err != nil {
		t.Fatalf("node %s printed %q: %v", script, b, err)
	}
}

// median runs f n times and returns the median duration in milliseconds.
func median(n int, f func()) float64 {
	f() // as pi's scripts, the first run is not counted
	ds := make([]float64, n)
	for i := range ds {
		t := time.Now()
		f()
		ds[i] = float64(time.Since(t)) / 1e6
	}
	return med(ds)
}

// perOp returns f's average duration in milliseconds over a batch of at
// least 100 ms (and 3 runs), as pi's bench.mjs measures estimate, cut and
// prepare: one preemption on a loaded machine then moves the figure little.
func perOp(f func()) float64 {
	f()
	n := 0
	t := time.Now()
	for n < 3 || time.Since(t) < 100*time.Millisecond {
		f()
		n++
	}
	return float64(time.Since(t)) / 1e6 / float64(n)
}

func med(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
