package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// batched runs the writes concurrently so that they land in one group commit,
// in the order given: the writer is held busy until every write is queued
// behind it (synctest.Wait returns once each is blocked handing its write
// over), then released. It returns each write's error, in order.
func batched(t *testing.T, db *DB, writes []func() error) []error {
	t.Helper()
	hold, held := make(chan struct{}), make(chan struct{})
	go db.inTx(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		close(held)
		<-hold
		return nil
	})
	<-held
	errs := make([]error, len(writes))
	done := make(chan struct{})
	for i, w := range writes {
		go func() {
			errs[i] = w()
			done <- struct{}{}
		}()
		synctest.Wait() // queued behind the previous one: the batch keeps the order of writes
	}
	close(hold)
	for range writes {
		<-done
	}
	return errs
}

func openBubbled(t *testing.T, path string, opts ...Option) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// In one group commit, a write that fails leaves nothing and does not take the
// others down with it.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openBubbled(t, filepath.Join(t.TempDir(), FileName))
		defer db.Close()
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C", Thread: "1"}, storage.ThreadInit{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{})
		if err != nil {
			t.Fatal(err)
		}
		// copy > 0 makes another entry at seq (an identical one would be a
		// retry, which succeeds).
		entry := func(seq int64, copy int) []transcript.Entry {
			text := fmt.Sprint("m", seq)
			if copy > 0 {
				text = fmt.Sprint("m", seq, "/", copy)
			}
			return []transcript.Entry{transcript.MessageEntry(seq, llm.UserText(text))}
		}
		if err := db.AppendEntries(ctx, s.ID, entry(0, 0)); err != nil {
			t.Fatal(err)
		}
		// Seqs 1..10, each odd one twice; seq 0 again (already stored).
		var writes []func() error
		var seqs []int64
		for seq := int64(1); seq <= 10; seq++ {
			n := 1 + int(seq%2)
			for c := range n {
				seqs = append(seqs, seq)
				writes = append(writes, func() error { return db.AppendEntries(ctx, s.ID, entry(seq, c)) })
			}
		}
		seqs = append(seqs, 0)
		writes = append(writes, func() error { return db.AppendEntries(ctx, s.ID, entry(0, 1)) })

		errs := batched(t, db, writes)
		ok := map[int64]int{}
		for i, err := range errs {
			switch {
			case err == nil:
				ok[seqs[i]]++
			case !errors.Is(err, storage.ErrDuplicateEntry):
				t.Errorf("write of seq %d: %v, want nil or ErrDuplicateEntry", seqs[i], err)
			}
		}
		for seq := int64(1); seq <= 10; seq++ {
			if ok[seq] != 1 {
				t.Errorf("seq %d succeeded %d times, want exactly once", seq, ok[seq])
			}
		}
		if ok[0] != 0 {
			t.Errorf("seq 0 appended again")
		}
		got, err := db.LoadEntries(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 11 {
			t.Fatalf("stored %d entries, want 11", len(got))
		}
		for i, e := range got {
			if e.Seq != int64(i) || !strings.HasPrefix(e.Message.TextContent(), fmt.Sprint("m", i)) {
				t.Errorf("entry %d = seq %d %q, want seq %d %q", i, e.Seq, e.Message.TextContent(), i, fmt.Sprint("m", i))
			}
		}
	})
}

// A batch in which a write fails runs each of its writes again on its own
// (commitBatch): what a write returns is its last run's, not both runs'.
// InterruptRuns, batched ahead of a failing append, reports each run once.
func TestGroupCommitRerunReportsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openBubbled(t, filepath.Join(t.TempDir(), FileName))
		defer db.Close()
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C", Thread: "1"}, storage.ThreadInit{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{})
		if err != nil {
			t.Fatal(err)
		}
		first := []transcript.Entry{transcript.MessageEntry(0, llm.UserText("hi"))}
		if err := db.AppendEntries(ctx, s.ID, first); err != nil {
			t.Fatal(err)
		}
		r1, err := db.StartRun(ctx, th.ID, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := db.StartRun(ctx, th.ID, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var runs []storage.Run
		errs := batched(t, db, []func() error{
			func() (err error) { runs, err = db.InterruptRuns(ctx); return err },
			func() error { // seq 0 again, other text: fails
				return db.AppendEntries(ctx, s.ID, []transcript.Entry{transcript.MessageEntry(0, llm.UserText("other"))})
			},
		})
		if errs[0] != nil || !errors.Is(errs[1], storage.ErrDuplicateEntry) {
			t.Fatalf("errors %v, want nil and ErrDuplicateEntry", errs)
		}
		var ids []int64
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint([]int64{r1, r2}) {
			t.Errorf("InterruptRuns reported runs %v, want %v once each", ids, []int64{r1, r2})
		}
	})
}

// A write that fails does not end its batch's group commit: the writes
// before it commit together, it runs alone, and the writes after it commit
// together (instead of each in its own commit, which is what every write of a
// batch paid for one refused MarkInbound, say).
func TestGroupCommitKeepsBatchingPastAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBubbled(t, filepath.Join(t.TempDir(), FileName))
		defer db.Close()
		const n, failing = 10, 5
		refused := errors.New("refused")
		txs := make([]*sql.Tx, n)
		var writes []func() error
		for i := range n {
			writes = append(writes, func() error {
				return db.inTx(context.Background(), func(_ context.Context, tx *sql.Tx) error {
					txs[i] = tx
					if i == failing {
						return refused
					}
					return nil
				})
			})
		}
		errs := batched(t, db, writes)
		commits := map[*sql.Tx]bool{}
		for i, err := range errs {
			if (i == failing) != errors.Is(err, refused) || (i != failing && err != nil) {
				t.Errorf("write %d: %v", i, err)
			}
			if i != failing {
				commits[txs[i]] = true
			}
		}
		if txs[0] != txs[failing-1] || txs[failing+1] != txs[n-1] || len(commits) != 2 {
			t.Errorf("the %d writes around the failing one took %d commits, want 2 (those before it, those after it)", n-1, len(commits))
		}
	})
}

// On a full disk, what a batched write reported is what is stored: every
// success is there after a reopen, every failure is absent.
func TestGroupCommitOnFullDisk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), FileName)
		db := openBubbled(t, path)
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C", Thread: "1"}, storage.ThreadInit{})
		if err != nil {
			t.Fatal(err)
		}
		var pages int
		if err := db.r.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
			t.Fatal(err)
		}
		db.Close()

		db = openBubbled(t, path, withExtraPragmas("max_page_count("+strconv.Itoa(pages+3)+")"))
		var writes []func() error
		for i := range 12 {
			text := "small"
			if i%3 == 1 {
				text = strings.Repeat("big ", 20000) // needs far more than the free pages
			}
			writes = append(writes, func() error {
				_, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: fmt.Sprint("Ev", i), Channel: "C",
					ThreadID: th.ID, Text: text, Mode: storage.ModePrompt})
				return err
			})
		}
		errs := batched(t, db, writes)
		db.Close()

		db = openBubbled(t, path)
		defer db.Close()
		for i, err := range errs {
			var n int
			if err := db.r.QueryRow(`SELECT count(*) FROM inbound WHERE event_id = ?`, fmt.Sprint("Ev", i)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if i%3 == 1 && !errors.Is(err, storage.ErrFull) {
				t.Errorf("big write %d: %v, want ErrFull", i, err)
			}
			if (err == nil) != (n == 1) {
				t.Errorf("write %d reported %v but %d rows are stored", i, err, n)
			}
		}
	})
}

// A write abandoned by its caller before the writer takes it is not stored.
func TestAbandonedWriteIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openBubbled(t, filepath.Join(t.TempDir(), FileName))
		defer db.Close()
		ctx, cancel := context.WithCancel(context.Background())
		hold, held := make(chan struct{}), make(chan struct{})
		go db.inTx(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			close(held)
			<-hold
			return nil
		})
		<-held
		ran := false
		errc := make(chan error)
		go func() {
			errc <- db.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
				ran = true
				return nil
			})
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("abandoned write returned %v, want context.Canceled", err)
		}
		close(hold)
		// A later write goes through, after the abandoned one was dropped.
		if err := db.inTx(context.Background(), func(ctx context.Context, tx *sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if ran {
			t.Error("the abandoned write ran")
		}
	})
}
