package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// AuthorSpend, read before each run and between its model calls, finds the
// runs that ended since the day began by an index instead of scanning every
// run ever made.
func TestAuthorSpendReadsRunsByIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	openAt(t, path) // migrated
	raw := rawDB(t, path)
	if p := queryPlan(t, raw, sqlite.AuthorSpendEndedQuery, "slack", "U1", 1); strings.Contains(p, "SCAN r") || strings.Contains(p, "SCAN u") {
		t.Errorf("plan %q scans a table of runs", p)
	}
}

// FindActiveThread reads a repository's active thread through an index,
// never by scanning every thread (each forge webhook asks).
func TestFindActiveThreadReadsByIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	openAt(t, path) // migrated
	raw := rawDB(t, path)
	for _, q := range []storage.ThreadQuery{{Repo: "app", Branch: "bot/x"}, {Repo: "app", Origin: "issue #1"}} {
		query, args := sqlite.FindThreadQuery(q)
		if p := queryPlan(t, raw, query, args...); strings.Contains(p, "SCAN t") {
			t.Errorf("plan %q scans the threads", p)
		}
	}
}

// queryPlan is SQLite's plan for query, its steps joined by "; ".
func queryPlan(t *testing.T, raw *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := raw.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
