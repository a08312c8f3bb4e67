package sqlite

import (
	"log/slog"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// readPragmas are run on the read pool's connections only, after the
// pragmas of every connection. Loading a session reads every page of its
// entries (payloads of a few KB span overflow pages): SQLite's own page
// cache of 2 MB per connection held a tenth of a 5,000-entry session, so
// each load read it again with a pread per page. Pages of the database file
// are read through a memory map instead (pages still in the WAL keep being
// read), and the cache holds a large session between loads. A memory-mapped
// read that fails with an I/O error ends the process (SIGBUS) where pread
// would return an error; the read pool never writes, so no write can be
// torn by it.
var readPragmas = []string{
	"query_only(1)",
	"mmap_size(268435456)", // 256 MiB of address space, pages shared with the OS's cache
	"cache_size(-16384)",   // 16 MiB per read connection
}

// Option configures Open.
type Option func(*options)

type options struct {
	log             *slog.Logger
	now             func() time.Time
	readConns       int
	writeConns      int
	eventRetention  time.Duration
	extraPragmas    []string
	noPrepare       bool
	noGroupCommit   bool
	autoCheckpoint  bool
	checkpointEvery time.Duration
	hooks           storage.Hooks
}

// WithHooks sets the hooks (default: none).
func WithHooks(h storage.Hooks) Option { return func(o *options) { o.hooks = h } }

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock sets the clock used for timestamps and event pruning (default: time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithReadConns sets the size of the read pool (default 4).
func WithReadConns(n int) Option { return func(o *options) { o.readConns = n } }

// WithEventRetention sets how long processed platform event ids are remembered
// (default 24h, far beyond Slack's and Discord's redelivery windows).
func WithEventRetention(d time.Duration) Option {
	return func(o *options) { o.eventRetention = d }
}

// withWriteConns lets benchmarks compare the single write connection with a pool
// of writers contending through SQLite's busy handler.
func withWriteConns(n int) Option { return func(o *options) { o.writeConns = n } }

// withExtraPragmas adds pragmas to every connection (tests: max_page_count).
func withExtraPragmas(p ...string) Option {
	return func(o *options) { o.extraPragmas = append(o.extraPragmas, p...) }
}

// withoutPreparedStatements makes hot statements be prepared per transaction,
// for benchmarks.
func withoutPreparedStatements() Option { return func(o *options) { o.noPrepare = true } }

// withoutGroupCommit makes every write its own transaction, for benchmarks.
func withoutGroupCommit() Option { return func(o *options) { o.noGroupCommit = true } }

// withAutoCheckpoint leaves checkpoints to SQLite (in the committing write),
// for benchmarks.
func withAutoCheckpoint() Option { return func(o *options) { o.autoCheckpoint = true } }
