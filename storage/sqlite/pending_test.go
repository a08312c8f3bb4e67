package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// BenchmarkAnswerStoredAndMarked is what a run's end now writes for its
// answer: one transaction storing its messages (answer + footer), one mark
// per message when the platform answered. The baseline is the status
// message's outbound row the run end already wrote (one transaction).
func BenchmarkAnswerStoredAndMarked(b *testing.B) {
	ctx := context.Background()
	db := openAt(b, filepath.Join(b.TempDir(), sqlite.FileName))
	th := newThread(b, db, "slack", "1.0")
	n := 0 // keys stay unique across the sub-benchmark's rounds
	b.Run("answer+footer", func(b *testing.B) {
		for b.Loop() {
			n++
			i := n
			ids, err := db.RecordPendingPosts(ctx, []storage.PendingPost{
				{ThreadID: th.ID, Key: fmt.Sprintf("a%d", i), Text: "the answer"},
				{ThreadID: th.ID, Key: fmt.Sprintf("f%d", i), Text: "the footer"},
			})
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range ids {
				if err := db.MarkPosted(ctx, id, "1.5"); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("baseline-outbound-row", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.RecordOutbound(ctx, storage.Outbound{ThreadID: th.ID, Kind: storage.OutboundStatus, Channel: "C1", MessageID: "1.5", Text: "status"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
