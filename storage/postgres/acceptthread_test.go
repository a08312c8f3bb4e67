package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// A new thread's first message the server refuses inside the write (here
// a trigger says the disk is full as the input is inserted, after the
// thread's row) leaves no thread: the thread and its input are one
// transaction. The conformance suite's refusals are all made before it.
func TestAcceptInboundInThreadRefusedLeavesNoThread(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	db, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE FUNCTION refuse_inbound() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'no room' USING ERRCODE = 'disk_full'; END $$;
		CREATE TRIGGER refuse_inbound BEFORE INSERT ON inbound FOR EACH ROW EXECUTE FUNCTION refuse_inbound()`); err != nil {
		t.Fatal(err)
	}
	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "2.0"}
	in := storage.Inbound{Platform: "slack", EventID: "EvFull", Channel: "C1", MessageID: "2.0", Text: "hi", Mode: storage.ModePrompt}
	if _, err := db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "r"}, in); !errors.Is(err, storage.ErrFull) {
		t.Fatalf("AcceptInboundInThread refused by the server = %v, want ErrFull", err)
	}
	if th, err := db.GetThread(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the thread of a first message the store refused: %+v, %v; want ErrNotFound", th, err)
	}

	// Once there is room, the redelivery creates the thread with its input.
	if _, err := conn.Exec(ctx, `DROP TRIGGER refuse_inbound ON inbound`); err != nil {
		t.Fatal(err)
	}
	a, err := db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "r"}, in)
	if err != nil || !a.Created || a.Duplicate {
		t.Errorf("redelivery after the failure = %+v, %v; want a new thread, the input stored", a, err)
	}
}
