package sqlite

import (
	"context"

	"github.com/threadsmith/threadsmith/storage"
)

// Hooks for the external tests and benchmarks of this package.
var (
	WithWriteConns            = withWriteConns
	WithExtraPragmas          = withExtraPragmas
	WithoutPreparedStatements = withoutPreparedStatements
	WithoutGroupCommit        = withoutGroupCommit
	WithAutoCheckpoint        = withAutoCheckpoint
)

// AuthorSpendEndedQuery is the query AuthorSpend sums a person's ended runs
// with (args: platform, author id, since in Unix ms).
var AuthorSpendEndedQuery = endedUsageQuery(authorRuns, authorEnded)

// FindThreadQuery is FindActiveThread's query for q, and its arguments.
func FindThreadQuery(q storage.ThreadQuery) (string, []any) {
	query, args, _ := findThreadQuery(q)
	return query, args
}

// ReadLiveRows runs LoadLiveEntries' statement and reads its rows without
// decoding them: the store's share of a resume. It returns the payload bytes
// read.
func ReadLiveRows(ctx context.Context, db *DB, sessionID string) (int, error) {
	sid, err := db.sessionRowID(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	rows, err := db.stmts.loadLive.rows(ctx, db.r, sid)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	var seq, ts int64
	var typ, payload string
	for rows.Next() {
		if err := rows.Scan(&seq, &typ, &ts, &payload); err != nil {
			return 0, err
		}
		n += len(payload)
	}
	return n, rows.Err()
}
