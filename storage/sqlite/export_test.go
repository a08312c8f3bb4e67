package sqlite

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

// FindThreadQueries are FindActiveThread's queries, by branch and by origin.
var FindThreadQueries = []string{findThreadQuery("t.branch"), findThreadQuery("t.origin")}
