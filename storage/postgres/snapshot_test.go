package postgres_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/threadsmith/threadsmith/storage/postgres"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// A resume reads the session's snapshot, not its rows; a damaged one is
// passed over and replaced; one up to a higher seq is never replaced by one
// up to a lower seq (storagetest.CheckResumeReadsTheSnapshot).
func TestResumeReadsTheSnapshot(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t, storagetest.PostgresDSN(t))
	db, err := postgres.Open(ctx, dsn, postgres.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	storagetest.CheckResumeReadsTheSnapshot(t, db, storagetest.SnapshotRow{
		Get: func(t *testing.T) (upto int64, snapshot []byte) {
			if err := raw.QueryRow(ctx, `SELECT upto, snapshot FROM session_snapshots`).Scan(&upto, &snapshot); err != nil {
				t.Fatal(err)
			}
			return upto, snapshot
		},
		Set: func(t *testing.T, upto int64, snapshot []byte) {
			if _, err := raw.Exec(ctx, `UPDATE session_snapshots SET upto = $1, snapshot = $2`, upto, snapshot); err != nil {
				t.Fatal(err)
			}
		},
	})
}
