package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"testing"
	"testing/synctest"
)

// Writers that a commit releases, and that write again at once, land in one
// commit together: the writer lets them reach it before committing instead of
// committing the first alone. On one core the released writers are runnable
// but have not run when the first of them hands its next write over.
func TestGroupCommitWaitsForReleasedWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		db := openBubbled(t, filepath.Join(t.TempDir(), FileName))
		defer db.Close()
		ctx := context.Background()
		hold, held := make(chan struct{}), make(chan struct{})
		go db.inTx(ctx, func(context.Context, *sql.Tx) error {
			close(held)
			<-hold
			return nil
		})
		<-held
		const writers = 10
		txs := make([][2]*sql.Tx, writers)
		done := make(chan struct{})
		for i := range writers {
			go func() {
				for k := range 2 {
					if err := db.inTx(ctx, func(_ context.Context, tx *sql.Tx) error {
						txs[i][k] = tx
						return nil
					}); err != nil {
						t.Error(err)
					}
				}
				done <- struct{}{}
			}()
		}
		synctest.Wait() // every first write waits behind the held one
		close(hold)
		for range writers {
			<-done
		}
		for k, what := range []string{"first writes (all waiting)", "second writes (released by the first commit)"} {
			commits := map[*sql.Tx]bool{}
			for i := range writers {
				commits[txs[i][k]] = true
			}
			// One, give or take the race detector's shuffling of the
			// scheduler; without the yields each second write is a commit.
			if len(commits) > 2 {
				t.Errorf("%s: %d writes took %d commits, want 1 (2 at most)", what, writers, len(commits))
			}
		}
	})
}

// After a burst, the writer's memory of it fades: a lone writer's commits
// bring it back to 1, where the writer no longer yields before committing.
func TestRecentCommitsFadeAfterABurst(t *testing.T) {
	recent := nextRecent(0, 40)
	if recent != 40 {
		t.Fatalf("after a commit of 40: %d", recent)
	}
	lone := 0
	for ; recent > 1 && lone < 100; lone++ {
		recent = nextRecent(recent, 1)
	}
	if recent != 1 {
		t.Errorf("after %d commits of one write: recent %d, want 1 (the writer yields before each commit above it)", lone, recent)
	}
	if got := nextRecent(9, 3); got != 7 {
		t.Errorf("nextRecent(9, 3) = %d, want 7 (an eighth less, rounded up)", got)
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
