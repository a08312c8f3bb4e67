package sqlite

// Hooks for the external tests and benchmarks of this package.
var (
	WithWriteConns            = withWriteConns
	WithExtraPragmas          = withExtraPragmas
	WithoutPreparedStatements = withoutPreparedStatements
	WithoutGroupCommit        = withoutGroupCommit
	WithAutoCheckpoint        = withAutoCheckpoint
)
