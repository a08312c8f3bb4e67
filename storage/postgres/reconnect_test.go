package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// After the server ended every connection of the pool (a restart, a
// network cut, an administrator), the next writes succeed on new
// connections instead of failing once per dead pooled connection.
func TestWritesSurviveTheServerEndingEveryConnection(t *testing.T) {
	dsn := storagetest.PostgresDSN(t)
	schema := storagetest.FreshSchema(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := postgres.Open(ctx, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	accept := func(n int) error {
		key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: fmt.Sprintf("%d.0", n)}
		in := storage.Inbound{Platform: "slack", EventID: fmt.Sprintf("Ev%d", n), Channel: "C1", MessageID: fmt.Sprintf("%d.0", n),
			AuthorID: "U1", AuthorName: "alice", Text: "hi", Mode: storage.ModePrompt}
		_, err := db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "r", Branch: "b"}, in)
		return err
	}
	if err := accept(1); err != nil {
		t.Fatal(err)
	}
	pids := postgres.IdleBackendPIDs(ctx, db)
	if len(pids) == 0 {
		t.Fatal("no idle pooled connection after a write")
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, pids); err != nil {
		t.Fatal(err)
	}
	// The server has ended them once they are gone from pg_stat_activity.
	for {
		var left int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])`, pids).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d pooled connections still there after pg_terminate_backend", left)
		case <-time.After(5 * time.Millisecond):
		}
	}
	for n := 2; n <= 4; n++ {
		if err := accept(n); err != nil {
			t.Errorf("write %d after the server ended the pool's connections: %v", n, err)
		}
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping after: %v", err)
	}
}

// A session's append while PostgreSQL cannot be reached (a proxy in front
// of it refuses connections) is repeated once the database is back, instead
// of being reported lost: the entry is stored and no persist_failed event
// is emitted.
func TestSessionAppendWaitsForTheDatabase(t *testing.T) {
	dsn := storagetest.PostgresDSN(t)
	schema := storagetest.FreshSchema(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxy := netfault.New(t, netfault.HostPort(schema))
	db, err := postgres.Open(ctx, proxy.URL(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var pauses []time.Duration
	s, err := agent.New(agent.Config{ID: rec.ID, Store: db, ModelName: "a",
		Models:           []agent.ModelSpec{{Name: "a", ContextWindow: 1000}, {Name: "b", ContextWindow: 2000}},
		StoreUnavailable: func(err error) bool { return errors.Is(err, storage.ErrUnavailable) },
		// The database comes back during the second pause.
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			pauses = append(pauses, d)
			n := len(pauses)
			mu.Unlock()
			if n == 2 {
				return proxy.Up()
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	var failed []agent.PersistFailed
	s.Subscribe(func(ev agent.Event) {
		if pf, ok := ev.(agent.PersistFailed); ok {
			mu.Lock()
			failed = append(failed, pf)
			mu.Unlock()
		}
	})
	proxy.Down()
	if err := s.SetModel("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := db.LoadEntries(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(entries) != 1 || len(failed) != 0 {
		t.Fatalf("stored %d entries, persist failures %+v; want the model change stored, no failure", len(entries), failed)
	}
	if len(pauses) != 2 || pauses[0] != 250*time.Millisecond || pauses[1] != 500*time.Millisecond {
		t.Errorf("pauses %v, want 250ms then 500ms", pauses)
	}
}
