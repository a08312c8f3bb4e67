package postgres_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(storagetest.MainWithPostgres(m)) }

// Every SQLite migration has its PostgreSQL mirror, under the same number
// and name: a schema change made for one backend only fails here.
func TestMigrationsMirrorSQLite(t *testing.T) {
	lite, err := fs.Glob(os.DirFS("../sqlite/migrations"), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	pg, err := fs.Glob(os.DirFS("migrations"), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(lite, " ") != strings.Join(pg, " ") {
		t.Errorf("SQLite migrations %v\nPostgreSQL migrations %v\nwant the same files", lite, pg)
	}
	if postgres.SchemaVersion() != sqlite.SchemaVersion() {
		t.Errorf("PostgreSQL schema version %d, SQLite %d", postgres.SchemaVersion(), sqlite.SchemaVersion())
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

// What a write reported as done survives the database server crashing (an
// immediate stop: no checkpoint, WAL replay at the next start), and the
// store answers again once it is back. Needs its own cluster.
func TestCommittedWritesSurviveAServerCrash(t *testing.T) {
	storagetest.PostgresDSN(t) // skips, saying how to run it, unless PostgreSQL is wanted
	c, err := storagetest.StartCluster()
	if err != nil && os.Getenv(storagetest.EnvRequirePostgres) != "1" {
		t.Skipf("crashing PostgreSQL needs a cluster of the test's own, and starting one failed: %v", err)
	}
	if err != nil {
		t.Fatalf("a cluster of its own: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t, c.DSN)
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := db.CreateSession(ctx, th.ID, storage.SessionInit{})
	in, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "1.1", ThreadID: th.ID, Mode: storage.ModePrompt})
	if err != nil {
		t.Fatal(err)
	}
	for seq := range 50 {
		if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{transcript.MessageEntry(int64(seq), llm.UserText("x"))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err == nil {
		t.Error("Ping succeeded with the server down")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The pool reconnects by itself.
	if n, err := db.NextSeq(ctx, s.ID); err != nil || n != 50 {
		t.Errorf("NextSeq after the crash = %d, %v; want 50", n, err)
	}
	if got, err := db.GetInbound(ctx, in); err != nil || got.ID != in {
		t.Errorf("the accepted input after the crash: %+v, %v", got, err)
	}
	db.Close()
	db, err = postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if es, err := db.LoadEntries(ctx, s.ID); err != nil || len(es) != 50 {
		t.Errorf("entries after the crash and a reopen: %d, %v; want 50", len(es), err)
	}
}

// A server that refuses writes (a standby, default_transaction_read_only) is
// storage.ErrReadOnly, as a read-only SQLite file is: Open, which migrates,
// says so instead of a bare driver error.
func TestReadOnlyServerIsErrReadOnly(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	db, err := postgres.Open(ctx, dsn+"&default_transaction_read_only=on")
	if err == nil {
		db.Close()
	}
	if !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("Open on a read-only server = %v, want ErrReadOnly", err)
	}
}

// A replica stopped inside a transaction holds its lease row's lock. The
// claim of another replica does not wait for it (lock_timeout): it fails
// at once and the next poll tries again; and the server ends the stuck
// session (idle_in_transaction_session_timeout), after which the claim
// succeeds.
func TestLeaseClaimDoesNotWaitForAStuckTransaction(t *testing.T) {
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	ctx := context.Background()
	var shift time.Duration
	db, err := postgres.Open(ctx, dsn, postgres.WithServerClockShift(func() time.Duration { return shift }))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{Repo: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.AcquireLease(ctx, th.ID, "replica-a", time.Second); err != nil || !ok {
		t.Fatalf("AcquireLease: %v, %v", ok, err)
	}
	// The stuck replica: a session idle in a transaction that locked the
	// row, as a write under its lease does. Its timeout stands for the one
	// Open sets on the bot's connections (5 s), shorter to keep the test
	// short.
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cc.RuntimeParams["idle_in_transaction_session_timeout"] = "2s"
	stuck, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close(ctx)
	if _, err := stuck.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := stuck.Exec(ctx, `SELECT 1 FROM thread_leases WHERE thread_id = $1 FOR SHARE`, th.ID); err != nil {
		t.Fatal(err)
	}
	shift = time.Minute // replica-a's lease ran out
	start := time.Now()
	_, ok, err := db.AcquireLease(ctx, th.ID, "replica-b", time.Second)
	if took := time.Since(start); err == nil || ok || took > 1500*time.Millisecond {
		t.Errorf("a claim of a row a stuck session locks = %v, %v after %s; want a lock timeout within ~1 s", ok, err, took)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if l, ok, err := db.AcquireLease(ctx, th.ID, "replica-b", time.Second); err == nil && ok {
			if l.Owner != "replica-b" {
				t.Fatalf("lease = %+v", l)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim never succeeded: the stuck session was not ended")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Open ends a session of the bot's that sits idle inside a transaction
// (the stuck replica TestLeaseClaimDoesNotWaitForAStuckTransaction plays),
// unless the DSN says otherwise.
func TestOpenEndsSessionsIdleInATransaction(t *testing.T) {
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	ctx := context.Background()
	for _, c := range []struct{ what, dsn, want string }{
		{"a DSN without it", dsn, "5s"},
		{"a DSN with 7s", dsn + sep(dsn) + "idle_in_transaction_session_timeout=7s", "7s"},
	} {
		db, err := postgres.Open(ctx, c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		got, err := postgres.Setting(ctx, db, "idle_in_transaction_session_timeout")
		db.Close()
		if err != nil || got != c.want {
			t.Errorf("Open of %s: idle_in_transaction_session_timeout = %q, %v; want %q", c.what, got, err, c.want)
		}
	}
}

// sep is what joins one more parameter to dsn.
func sep(dsn string) string {
	switch {
	case !strings.Contains(dsn, "://"):
		return " "
	case strings.Contains(dsn, "?"):
		return "&"
	}
	return "?"
}

// Close returns while a listener runs (as SQLite's does): the listener's
// connection is let go instead of holding the pool's Close until the
// listener's context ends, and the listener then waits for its context
// quietly.
func TestCloseWhileListeningForInput(t *testing.T) {
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan struct{}, 1)
	listening := make(chan error, 1)
	go func() {
		listening <- db.ListenInbound(ctx, func(int64) {
			select {
			case heard <- struct{}{}:
			default:
			}
		})
	}()
	// Input until the listener hears it: it holds its connection now.
	for i := 0; ; i++ {
		if _, _, err := db.AcceptInbound(ctx, storage.Inbound{ThreadID: th.ID, Platform: "slack", Channel: "C1", MessageID: strconv.Itoa(i), Mode: storage.ModePrompt}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-heard:
		case <-time.After(50 * time.Millisecond):
			continue
		}
		break
	}
	closed := make(chan struct{})
	go func() { db.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("Close waited for the listener's context")
	}
	select {
	case err := <-listening:
		t.Errorf("ListenInbound returned %v before its context ended", err)
	default:
	}
	cancel()
	<-closed
	if err := <-listening; err != nil {
		t.Errorf("ListenInbound = %v", err)
	}
}
