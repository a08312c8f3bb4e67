package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// Commits never checkpoint; the checkpointer copies the WAL into the database
// file in the background, once per interval.
func TestCheckpointerCopiesWALInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), FileName)
		db := openBubbled(t, path)
		defer db.Close()
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C", Thread: "1"}, storage.ThreadInit{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{})
		if err != nil {
			t.Fatal(err)
		}
		size := func() int64 {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return fi.Size()
		}
		// Let the first checkpoint pass, so what follows is only in the WAL.
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		before := size()
		for seq := range int64(100) {
			m := llm.UserText(strings.Repeat("x", 8000))
			if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{transcript.MessageEntry(seq, m)}); err != nil {
				t.Fatal(err)
			}
		}
		if got := size(); got != before {
			t.Fatalf("database file grew from %d to %d bytes on commit, want the writes only in the WAL", before, got)
		}
		time.Sleep(time.Second) // the checkpointer's next tick
		synctest.Wait()
		if got := size(); got < before+800_000 {
			t.Errorf("database file is %d bytes after the checkpoint interval, want at least %d (the entries copied from the WAL)", got, before+800_000)
		}
	})
}
