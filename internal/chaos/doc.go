// Package chaos holds the multi-replica tests (docs/behaviour.md §9,
// storage): several processes of the real bot (cmd/bot, built once per test
// binary) share one PostgreSQL database, the fake Slack spreads Socket Mode
// events over their connections, and replicas are killed with SIGKILL and
// restarted while mentions and follow-ups arrive. The tests check what the
// product promises: every accepted message reaches the model exactly once,
// every run is answered once, a thread never runs under two owners at once,
// and a dead replica's threads move to another within the lease time. The
// benchmarks measure throughput with 1–3 replicas against one on SQLite, and
// the takeover time after kill -9.
//
// TestSoak serves many threads through one process of the real bot on
// SQLite in compressed time (new threads, follow-ups, steers, !stop,
// !reset, long answers, pushes, idle evictions, kill -9 and start again),
// samples the process (RSS, the Go heap, goroutines, descriptors, threads
// in memory, the database and data_dir) and fails when, after the warm-up
// that follows the last restart, any of them grows with the threads served
// beyond what is stored, or when the same audit as TestChaos finds a
// message lost, run twice or answered twice. The CI form serves 150
// threads; THREADSMITH_SOAK=<threads> runs a long form (10000 or more),
// THREADSMITH_SOAK_SEED replays its random choices.
//
// Everything is in _test.go files: the package has no code of its own.
//
// PostgreSQL comes from storagetest: THREADSMITH_TEST_POSTGRES names a
// database, or THREADSMITH_REQUIRE_POSTGRES=1 starts a throwaway cluster
// (Debian's PostgreSQL 15); without either the tests skip and say so.
// THREADSMITH_CHAOS_DURATION (e.g. 5m) runs the long form of TestChaos: 200
// threads for that long instead of the short CI form. A third of the chaos
// is SIGSTOP past the lease and SIGCONT instead of SIGKILL (a live replica
// that lost its threads), unless THREADSMITH_CHAOS_PAUSES=0.
// THREADSMITH_CHAOS_SEED replays a run's random choices (the timing still
// varies); THREADSMITH_CHAOS_REPLICAS sets the count.
package chaos
