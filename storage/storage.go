// Package storage is threadsmith's storage contract: the records it keeps
// (threads and their sessions, each session's entry record, the durable queue
// of chat input, the messages the bot posted, runs, pushes, usage, posts that
// must survive a crash, thread leases and recently processed platform events),
// and Store, the interface every backend implements. Two do: storage/sqlite
// (one file, the default) and storage/postgres (for several replicas sharing a
// database). The conformance suite in storage/storagetest runs unchanged
// against both; the doc comments on Store's methods are the contract, and a
// backend documents only what is its own.
//
// Durability: every method that changes something is atomic (all of it or
// nothing) and committed before it returns, so what it reported as done
// survives the process being killed.
//
// Identity and order: ids and sequence numbers come from the store. Chat input
// is de-duplicated by the platform's ids (event id; channel and message id), an
// entry's seq is its place in its session's record, and a chat input is
// delivered in the same transaction that appends the user message it became.
//
// Errors: lookups of something that does not exist return ErrNotFound; a full
// disk or a read-only database surface as ErrFull or ErrReadOnly, so a caller
// can refuse to acknowledge input it could not store. Errors name the
// operation; they never carry user content.
//
// A consumer that needs only part of Store declares that part as its own
// interface (package web does); the groups below (ThreadStore, SessionStore,
// …) organise the contract.
package storage
