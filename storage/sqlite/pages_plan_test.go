package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// The session pages' reads of a thread's input (ThreadInbound, and the
// count in ThreadVersion that each live page polls every second) find the
// thread's rows by an index instead of scanning every message received.
func TestThreadInputIsReadByIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	openAt(t, path) // migrated
	raw := rawDB(t, path)
	for _, q := range []string{
		`SELECT count(*) FROM inbound WHERE thread_id = 1`,
		`SELECT id, text FROM inbound WHERE thread_id = 1 ORDER BY id`,
	} {
		if p := queryPlan(t, raw, q); !strings.Contains(p, "USING") || !strings.Contains(p, "INDEX inbound_thread") {
			t.Errorf("%s: plan %q, want the inbound_thread index", q, p)
		}
	}
}
