package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// A resume reads the session's snapshot, not its rows; a damaged one is
// passed over and replaced; one up to a higher seq is never replaced by one
// up to a lower seq (storagetest.CheckResumeReadsTheSnapshot).
func TestResumeReadsTheSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db := openAt(t, path)
	raw := rawDB(t, path)
	storagetest.CheckResumeReadsTheSnapshot(t, db, storagetest.SnapshotRow{
		Get: func(t *testing.T) (upto int64, snapshot []byte) {
			if err := raw.QueryRow(`SELECT upto, snapshot FROM session_snapshots`).Scan(&upto, &snapshot); err != nil {
				t.Fatal(err)
			}
			return upto, snapshot
		},
		Set: func(t *testing.T, upto int64, snapshot []byte) {
			if _, err := raw.Exec(`UPDATE session_snapshots SET upto = ?, snapshot = ?`, upto, snapshot); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// The driver hands each blob it returns in a slice of its own that it never
// writes again, which lets the store keep a snapshot read into sql.RawBytes
// without copying it (liveFromSnapshot). A driver that reused its buffer
// would fail here, not in a resumed conversation.
func TestDriverBlobsAreFresh(t *testing.T) {
	raw := rawDB(t, filepath.Join(t.TempDir(), "blobs.db"))
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec(`CREATE TABLE b (id INTEGER PRIMARY KEY, v BLOB); INSERT INTO b VALUES (1, zeroblob(9000)), (2, randomblob(9000)), (3, randomblob(100))`); err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for range 3 {
		rows, err := raw.Query(`SELECT v FROM b ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v sql.RawBytes
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, v)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range kept {
		if i%3 != 0 {
			continue
		}
		for j, c := range v {
			if c != 0 {
				t.Fatalf("blob %d changed at byte %d after later reads", i, j)
			}
		}
	}
}
