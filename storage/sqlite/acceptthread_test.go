package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// A new thread's first message the store cannot hold (the disk full while
// the input is written, after the thread's row is) leaves no thread: the
// thread and its input are one transaction. The checks made before the
// write (storagetest's AcceptInboundInThread) do not show that.
func TestAcceptInboundInThreadFullLeavesNoThread(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db := openAt(t, path)
	newThread(t, db, "slack", "1.0")
	db.Close()

	var pages int
	if err := rawDB(t, path).QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path, sqlite.WithExtraPragmas("max_page_count("+strconv.Itoa(pages)+")"))
	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "2.0"}
	in := storage.Inbound{Platform: "slack", EventID: "EvFull", Channel: "C1", MessageID: "2.0",
		Text: strings.Repeat("a long message that needs new pages ", 2000), Mode: storage.ModePrompt}
	if _, err := db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "r"}, in); !errors.Is(err, storage.ErrFull) {
		t.Fatalf("AcceptInboundInThread on a full database = %v, want ErrFull", err)
	}
	if th, err := db.GetThread(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the thread of a first message the store refused: %+v, %v; want ErrNotFound", th, err)
	}
	db.Close()

	// Once there is room, the redelivery creates the thread with its input.
	db = openAt(t, path)
	a, err := db.AcceptInboundInThread(ctx, key, storage.ThreadInit{Repo: "r"}, in)
	if err != nil || !a.Created || a.Duplicate {
		t.Errorf("redelivery after the failure = %+v, %v; want a new thread, the input stored", a, err)
	}
}
