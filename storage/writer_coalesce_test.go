package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Writers that a commit releases, and that write again at once, land in one
// commit together: the writer lets them reach it before committing instead of
// committing the first alone. On one core the released writers are runnable
// but have not run when the first of them hands its write over.
func TestGroupCommitWaitsForRunnableWriters(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	db := openBubbled(t, filepath.Join(t.TempDir(), FileName))
	defer db.Close()
	ctx := context.Background()
	nop := func(context.Context, *sql.Tx) error { return nil }
	for round := range 5 {
		release := make(chan struct{})
		const writers = 10
		txs := make([]*sql.Tx, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				<-release
				if err := db.inTx(ctx, func(_ context.Context, tx *sql.Tx) error {
					txs[i] = tx
					return nil
				}); err != nil {
					t.Error(err)
				}
			})
		}
		// The writes are released by the end of another one, as a commit
		// releases its writers.
		if err := db.inTx(ctx, nop); err != nil {
			t.Fatal(err)
		}
		close(release)
		wg.Wait()
		commits := map[*sql.Tx]bool{}
		for _, tx := range txs {
			commits[tx] = true
		}
		if len(commits) != 1 {
			t.Fatalf("round %d: %d writes released together took %d commits, want 1", round, writers, len(commits))
		}
	}
}

// SetCommitYields sets how often the writer yields before a commit (0: the
// code path before it did) for the benchmarks; it returns the restore. Call it
// before Open: the writer reads it without synchronization.
func SetCommitYields(n int) (restore func()) {
	old := maxYields
	maxYields = n
	return func() { maxYields = old }
}
