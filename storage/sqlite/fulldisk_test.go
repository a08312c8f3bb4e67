package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/workspace/diskuse/disktest"
)

// A real full disk (not a page limit): the store refuses what it cannot
// write with ErrFull, stores none of it, keeps reading, and takes the same
// input once space returns, on the same open database, with no restart.
func TestFullDiskRefusesThenRecovers(t *testing.T) {
	ctx := context.Background()
	dir := disktest.Small(t, 8<<20)
	db := openAt(t, filepath.Join(dir, sqlite.FileName))
	th := newThread(t, db, "slack", "1.0")
	accept(t, db, storage.Inbound{Platform: "slack", EventID: "Ev0", Channel: "C1", MessageID: "1.0", ThreadID: th.ID, Text: "before", Mode: storage.ModePrompt})

	filler := filepath.Join(dir, "big.bin")
	disktest.Fill(t, filler)
	big := strings.Repeat("a message that needs room ", 8000)
	for i := range 3 {
		in := storage.Inbound{Platform: "slack", EventID: fmt.Sprint("EvFull", i), Channel: "C1", MessageID: fmt.Sprint("2.", i), ThreadID: th.ID, Text: big, Mode: storage.ModePrompt}
		if _, _, err := db.AcceptInbound(ctx, in); !errors.Is(err, storage.ErrFull) {
			t.Fatalf("AcceptInbound %d on a full disk: %v, want ErrFull", i, err)
		}
	}
	if got, err := db.GetThread(ctx, th.Key); err != nil || got.ID != th.ID {
		t.Errorf("reading on a full disk: %v", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		in := storage.Inbound{Platform: "slack", EventID: fmt.Sprint("EvFull", i), Channel: "C1", MessageID: fmt.Sprint("2.", i), ThreadID: th.ID, Text: big, Mode: storage.ModePrompt}
		if id, dup := accept(t, db, in); dup || id == 0 {
			t.Errorf("redelivery %d once space returned: id %d duplicate %v, want stored as new", i, id, dup)
		}
	}
	pending, err := db.PendingInbound(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 4 {
		t.Errorf("%d messages pending, want 4 (one before the disk filled, three after)", len(pending))
	}
}
