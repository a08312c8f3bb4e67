package storage

import (
	"context"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// The application's storage contract. The records (Thread, Session, Inbound,
// Run, Outbound, Push, Usage, …) and the interfaces below are what the bridge,
// the agent, the pages and cmd/bot use; a backend implements Store. Two do:
// *DB (SQLite, this package, the embedded default) and storage/postgres. The
// conformance suite in storage/storagetest runs unchanged against both, and
// the doc comments on *DB's methods are the contract's semantics: atomic and
// durable when a write returns, ErrNotFound for a missing record, sequence
// numbers from the store, de-duplication by the platform's ids, and a chat
// input delivered in the same transaction that appends its user message.

// ThreadStore keeps the chat threads.
type ThreadStore interface {
	EnsureThread(ctx context.Context, key ThreadKey, init ThreadInit) (Thread, bool, error)
	GetThread(ctx context.Context, key ThreadKey) (Thread, error)
	ThreadByID(ctx context.Context, id int64) (Thread, error)
	ActiveThreads(ctx context.Context) ([]Thread, error)
	RecentThreads(ctx context.Context, platform string, since time.Time) ([]Thread, error)
	SetThreadWorkspace(ctx context.Context, threadID int64, ws ThreadInit) error
	SetThreadState(ctx context.Context, threadID int64, state ThreadState) error
	SetLastSeenMessage(ctx context.Context, threadID int64, messageID string) error
}

// SessionStore keeps sessions and their entry records. It is the agent's
// store (agent.Store) and the authority on sequence numbers (agent.SeqSource).
type SessionStore interface {
	agent.Store
	agent.SeqSource
	CreateSession(ctx context.Context, threadID int64, init SessionInit) (Session, error)
	GetSession(ctx context.Context, id string) (Session, error)
	SetSessionModel(ctx context.Context, id, model string) error
	LoadEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error)
	LoadContext(ctx context.Context, sessionID string) (transcript.Context, error)
	LoadLiveEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error)
}

// InboundStore is the durable queue of chat input, and the memory of
// platform events already processed.
type InboundStore interface {
	AcceptInbound(ctx context.Context, in Inbound) (id int64, duplicate bool, err error)
	AcceptInboundInThread(ctx context.Context, key ThreadKey, init ThreadInit, in Inbound) (Accepted, error)
	MarkInbound(ctx context.Context, id int64, state InboundState, detail string) error
	GetInbound(ctx context.Context, id int64) (Inbound, error)
	PendingInbound(ctx context.Context, threadID int64) ([]Inbound, error)
	AllPendingInbound(ctx context.Context) ([]Inbound, error)
	MarkEventProcessed(ctx context.Context, platform, eventID string) (first bool, err error)
}

// RunStore keeps the runs of the agent.
type RunStore interface {
	StartRun(ctx context.Context, threadID int64, sessionID string, inboundID int64) (int64, error)
	FinishRun(ctx context.Context, runID int64, outcome RunOutcome) error
	GetRun(ctx context.Context, runID int64) (Run, error)
	InterruptRuns(ctx context.Context) ([]Run, error)
}

// OutboundStore keeps the messages the bot posted.
type OutboundStore interface {
	RecordOutbound(ctx context.Context, o Outbound) (int64, error)
	UpdateOutbound(ctx context.Context, id int64, text string) error
	OutboundForRun(ctx context.Context, runID int64) ([]Outbound, error)
	LastOutbound(ctx context.Context, threadID int64, kind OutboundKind) (Outbound, error)
}

// PushStore keeps the push attempts.
type PushStore interface {
	RecordPush(ctx context.Context, p Push) (int64, error)
	LastPush(ctx context.Context, threadID int64) (Push, error)
}

// UsageStore sums token usage and cost.
type UsageStore interface {
	ThreadUsage(ctx context.Context, threadID int64) (Usage, error)
	UserUsage(ctx context.Context, platform, authorID string) (Usage, error)
}

// PageStore is what the session pages read (package web).
type PageStore interface {
	ThreadSummaries(ctx context.Context) ([]ThreadSummary, error)
	ThreadByID(ctx context.Context, id int64) (Thread, error)
	ThreadSessions(ctx context.Context, threadID int64) ([]Session, error)
	ThreadRuns(ctx context.Context, threadID int64) ([]Run, error)
	ThreadPushes(ctx context.Context, threadID int64) ([]Push, error)
	ThreadInbound(ctx context.Context, threadID int64) ([]Inbound, error)
	ThreadVersion(ctx context.Context, threadID int64) (string, error)
	LoadEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error)
}

// OpsStore is what the operator's probes and metrics read.
type OpsStore interface {
	// Ping checks that the database answers (the readiness probe).
	Ping(ctx context.Context) error
	PendingInboundCounts(ctx context.Context) (map[string]int, error)
}

// RunUsageStore keeps each ended run's usage as its own record (written by
// FinishRun and InterruptRuns).
type RunUsageStore interface {
	ThreadRunUsage(ctx context.Context, threadID int64) (map[int64]RunUsage, error)
	RunUsageOf(ctx context.Context, runID int64) (RunUsage, error)
}

// Store is the whole contract.
type Store interface {
	ThreadStore
	SessionStore
	InboundStore
	RunStore
	OutboundStore
	PushStore
	UsageStore
	PageStore
	OpsStore
	PendingPostStore
	RunUsageStore
	LeaseStore
	InboundNotifier
	// Close releases the backend. Writes that returned are durable already.
	Close() error
}

var _ Store = (*DB)(nil)
