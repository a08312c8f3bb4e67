package sqlite

import "github.com/threadsmith/threadsmith/storage"

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
