package storage

import (
	"context"
	"time"

	"github.com/threadsmith/threadsmith/agent/transcript"
)

// ThreadStore keeps the chat threads.
type ThreadStore interface {
	// EnsureThread returns the thread with key, creating it with init when it
	// does not exist yet; created says which happened. An existing thread
	// keeps its workspace fields (init is ignored for it). A key without
	// platform, channel or thread is refused.
	EnsureThread(ctx context.Context, key ThreadKey, init ThreadInit) (t Thread, created bool, err error)
	// GetThread returns the thread with key, or ErrNotFound.
	GetThread(ctx context.Context, key ThreadKey) (Thread, error)
	// ThreadByID returns the thread with that id, or ErrNotFound.
	ThreadByID(ctx context.Context, id int64) (Thread, error)
	// ActiveThreads returns every active thread, oldest first, for resuming
	// at start.
	ActiveThreads(ctx context.Context) ([]Thread, error)
	// FindActiveThread returns the oldest active thread of q.Repo working
	// on q.Branch, or whose origin is q.Origin when q.Branch is "", or
	// ErrNotFound; a query naming neither finds nothing.
	FindActiveThread(ctx context.Context, q ThreadQuery) (Thread, error)
	// RecentThreads returns the platform's active threads a person wrote in
	// at or after since, oldest first: the threads worth catching up on after
	// a reconnect. Idle and closed threads are left out, however many there
	// are.
	RecentThreads(ctx context.Context, platform string, since time.Time) ([]Thread, error)
	// SetThreadWorkspace records the thread's repository, branch and
	// workspace path; an unknown thread is ErrNotFound.
	SetThreadWorkspace(ctx context.Context, threadID int64, ws ThreadInit) error
	// SetThreadState records whether the thread is active or closed; another
	// state is refused, an unknown thread is ErrNotFound.
	SetThreadState(ctx context.Context, threadID int64, state ThreadState) error
	// SetLastSeenMessage records messageID as the newest message seen in the
	// thread. It only moves forward: an older id (a late or replayed event)
	// leaves the recorded one in place, and "" changes nothing. Accepting
	// input does this itself for the input it stores.
	SetLastSeenMessage(ctx context.Context, threadID int64, messageID string) error
}

// SessionStore keeps sessions and their entry records. It has what the
// agent's session needs of a store (AppendEntries, NextSeq) and is the
// authority on sequence numbers.
type SessionStore interface {
	// AppendEntries stores entries of a session atomically: all of them or,
	// on error, none; they are durable when it returns. Each entry's Seq is
	// its place in the record: gaps are allowed (an append that failed is not
	// retried with the same numbers), order is by seq, never by time. A seq
	// the session already has is refused with a *DuplicateEntryError, unless
	// the session holds exactly these entries at their numbers: the call
	// repeats an append that was committed, and succeeds without writing. A
	// user message carrying an InputID (the decimal inbound id) marks that
	// input delivered in the same transaction, if it is still pending and
	// belongs to the session's thread. An entry of a type the store does not
	// know keeps its raw JSON. An unknown session is ErrNotFound. Under a
	// lease (WithLease) it is fenced.
	AppendEntries(ctx context.Context, sessionID string, entries []transcript.Entry) error
	// NextSeq returns the session's next free entry sequence number (0 for a
	// session without entries), as of every append committed before the
	// call: a session whose append was refused as a duplicate moves its
	// entries there.
	NextSeq(ctx context.Context, sessionID string) (int64, error)
	// CreateSession starts a new session on the thread, with a new random
	// public id, and makes it the thread's current one. Settings that are not
	// valid JSON are refused; an unknown thread is ErrNotFound.
	CreateSession(ctx context.Context, threadID int64, init SessionInit) (Session, error)
	// GetSession returns the session with that public id, or ErrNotFound.
	GetSession(ctx context.Context, id string) (Session, error)
	// SetSessionModel records the session's model (the transcript's
	// model_change entry is the agent's to append); an unknown session is
	// ErrNotFound.
	SetSessionModel(ctx context.Context, id, model string) error
	// LoadEntries returns a session's entries in seq order. The live context
	// is transcript.BuildContext of the result. A stored entry that does not
	// decode is ErrCorrupt; an unknown session ErrNotFound.
	LoadEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error)
	// LoadContext returns the session's live context, equal to
	// transcript.BuildContext(LoadEntries(…)), reading only what
	// LoadLiveEntries reads: a session resumed after many compactions loads
	// in time proportional to its live context, not to its history.
	LoadContext(ctx context.Context, sessionID string) (transcript.Context, error)
	// LoadLiveEntries returns the entries a resumed session needs, in seq
	// order: the entries from the latest compaction's first kept entry on
	// (the compaction itself included), and the model and thinking-level
	// changes before them. Their BuildContext equals that of all entries, and
	// the next compaction can be prepared from them.
	LoadLiveEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error)
	// SnapshotSession stores the session's live entries as one value, its
	// snapshot, so that LoadLiveEntries reads that value and the few
	// entries stored after it instead of a row per live entry. The entries
	// stay the record: a snapshot holds only what they hold, and a missing,
	// damaged or unusable one makes LoadLiveEntries read the entries as
	// before. A snapshot is never replaced by one that holds entries up to
	// a lower seq. An unknown session is ErrNotFound.
	SnapshotSession(ctx context.Context, sessionID string) error
}

// InboundStore is the durable queue of chat input, and the memory of
// platform events already processed.
type InboundStore interface {
	// AcceptInbound stores a chat message as received, in its thread
	// (in.ThreadID; an unknown thread is ErrNotFound). It is committed when
	// it returns, so the adapter acknowledges the platform event only after
	// a nil error; on error (disk full: ErrFull) it must not acknowledge, and
	// the platform redelivers. A message already accepted — same (platform,
	// event id), or same (platform, channel, message id) — is not stored
	// again: duplicate is true and id is the first copy's. Stored input is
	// its thread's activity (ActiveAt; a closed thread is active again) and,
	// when it has a message id, its newest message seen (as
	// SetLastSeenMessage). Input without platform or channel, with an
	// unknown mode or with attachments that are not JSON is refused.
	// Listeners (InboundNotifier) hear of every input stored.
	AcceptInbound(ctx context.Context, in Inbound) (id int64, duplicate bool, err error)
	// AcceptInboundInThread is EnsureThread and AcceptInbound in one
	// transaction, for the first message of a thread: the thread with key is
	// created with init unless it exists, and in (whose ThreadID is that
	// thread's, whatever it was) is accepted in it. Both are committed when
	// it returns, or neither is: a message refused (invalid, or the store
	// full) leaves no thread behind. A thread it creates is active at the
	// input's time with the input's message as its newest seen.
	AcceptInboundInThread(ctx context.Context, key ThreadKey, init ThreadInit, in Inbound) (Accepted, error)
	// MarkInbound moves an inbound message to state. detail is the queue
	// ("steer" or "followUp") for InboundQueued and the reason (required) for
	// InboundDropped; it is ignored for InboundDelivered. A queued message
	// may be re-queued; a transition the state machine does not allow (out
	// of delivered or dropped, back to received) is ErrInvalidTransition, an
	// unknown message ErrNotFound.
	MarkInbound(ctx context.Context, id int64, state InboundState, detail string) error
	// GetInbound returns the inbound message with that id, or ErrNotFound.
	GetInbound(ctx context.Context, id int64) (Inbound, error)
	// PendingInbound returns the thread's input not yet delivered nor
	// dropped (received or queued), in arrival order.
	PendingInbound(ctx context.Context, threadID int64) ([]Inbound, error)
	// AllPendingInbound returns every thread's pending input in arrival
	// order, for delivering it after a restart.
	AllPendingInbound(ctx context.Context) ([]Inbound, error)
	// MarkEventProcessed records a platform event that is not chat input (a
	// retried Slack envelope of an ignored event, a Discord replay, …) and
	// reports whether this is its first delivery. Ids are remembered for the
	// backend's event retention (a day by default); older ones are pruned as
	// new ones arrive. Platform and event id are required.
	MarkEventProcessed(ctx context.Context, platform, eventID string) (first bool, err error)
}

// RunStore keeps the runs of the agent.
type RunStore interface {
	// StartRun records that a run began on the thread's session, started by
	// the inbound message inboundID (0 for none), and returns its id. An
	// unknown thread, session or input is ErrNotFound. Under a lease
	// (WithLease) it is fenced.
	StartRun(ctx context.Context, threadID int64, sessionID string, inboundID int64) (int64, error)
	// FinishRun records how a run ended (a non-empty outcome), and with it
	// the usage of the run's replies (RunUsageOf) and Hooks.RunFinished. A
	// run that already ended (or was marked interrupted) is ErrRunEnded; an
	// unknown one ErrNotFound. Under a lease (WithLease) it is fenced.
	FinishRun(ctx context.Context, runID int64, outcome RunOutcome) error
	// GetRun returns the run with that id, or ErrNotFound.
	GetRun(ctx context.Context, runID int64) (Run, error)
	// InterruptRuns marks every run still in progress as interrupted, with
	// its usage recorded, and returns them (oldest first) with their threads,
	// so the bridge can say so in each thread. Called once at start, when no
	// run of this process has begun: a run found in progress then was cut off
	// by the previous process's death. Under a lease (WithLease) it is the
	// new owner's of a thread taken over: only that thread's runs, and
	// ErrFenced once the lease is stale.
	InterruptRuns(ctx context.Context) ([]Run, error)
	// WaitingRuns returns the runs that ended RunWaiting and are the last
	// run of their thread (oldest first, with their threads): input that
	// waits for the model, for answering it after a restart.
	WaitingRuns(ctx context.Context) ([]Run, error)
}

// OutboundStore keeps the messages the bot posted.
type OutboundStore interface {
	// RecordOutbound stores a message the bot posted and returns its id. An
	// unknown kind, or a message without channel or message id, is refused;
	// an unknown thread or run is ErrNotFound.
	// Under a lease (WithLease) it is fenced.
	RecordOutbound(ctx context.Context, o Outbound) (int64, error)
	// UpdateOutbound records that the message was edited to text; an
	// unknown message is ErrNotFound. Under a lease (WithLease) it is fenced.
	UpdateOutbound(ctx context.Context, id int64, text string) error
	// OutboundForRun returns the messages posted for a run, in posting order.
	OutboundForRun(ctx context.Context, runID int64) ([]Outbound, error)
	// LastOutbound returns the thread's most recent message of that kind, or
	// ErrNotFound.
	LastOutbound(ctx context.Context, threadID int64, kind OutboundKind) (Outbound, error)
}

// PushStore keeps the push attempts.
type PushStore interface {
	// RecordPush stores a push attempt and returns its id, then tells
	// Hooks.PushRecorded. An unknown result or an empty branch is refused;
	// an unknown thread is ErrNotFound.
	RecordPush(ctx context.Context, p Push) (int64, error)
	// LastPush returns the thread's most recent push attempt, or ErrNotFound.
	LastPush(ctx context.Context, threadID int64) (Push, error)
}

// DecisionStore keeps the decisions people made in threads: plans offered,
// approved, revised and cancelled, pushes approved.
type DecisionStore interface {
	// RecordDecision stores a decision (its At is the store's clock) and
	// returns its id. An unknown kind or an empty user id is refused; an
	// unknown thread is ErrNotFound. It is not fenced: a decision a person
	// made is recorded whichever replica heard it.
	RecordDecision(ctx context.Context, d Decision) (int64, error)
	// ThreadDecisions returns the thread's decisions, oldest first.
	ThreadDecisions(ctx context.Context, threadID int64) ([]Decision, error)
}

// UsageStore sums token usage and cost, as the replies' messages recorded
// them.
type UsageStore interface {
	// ThreadUsage sums the replies of every session the thread had (a !reset
	// starts a new session; the thread's cost includes the old ones).
	ThreadUsage(ctx context.Context, threadID int64) (Usage, error)
	// UserUsage sums, over every thread, the replies to one person's input:
	// each reply counts for the author of the latest user message before it
	// that came from chat input.
	UserUsage(ctx context.Context, platform, authorID string) (Usage, error)
}

// RunUsageStore reads each ended run's usage, a record of its own written by
// FinishRun and InterruptRuns: the replies of the run's session since the
// previous run of that session ended (and not before the user message of the
// run's own input).
type RunUsageStore interface {
	// ThreadRunUsage returns the recorded usage of the thread's ended runs,
	// by run id. Runs still going, and runs that ended before the store
	// recorded usage per run, have none.
	ThreadRunUsage(ctx context.Context, threadID int64) (map[int64]RunUsage, error)
	// RunUsageOf returns the recorded usage of one ended run, or ErrNotFound.
	RunUsageOf(ctx context.Context, runID int64) (RunUsage, error)
}

// SpendStore sums what a person's requests and a thread cost, for budgets
// (budget.per_user_daily, budget.per_thread): from the runs' usage records,
// so that each read is bounded by the runs it counts, not the entries.
type SpendStore interface {
	// AuthorSpend sums the usage of the runs that input of authorID on
	// platform started: the runs that ended at or after since, with their
	// recorded usage (RunUsageOf), and the runs still going, with the
	// replies of theirs stored so far, on every thread and every replica. A
	// run counts whole on the day it ends; a run no input started (0)
	// counts for nobody. Cost is what the replies recorded: a reply of a
	// model without a price adds tokens and nothing to Cost.
	AuthorSpend(ctx context.Context, platform, authorID string, since time.Time) (Usage, error)
	// ThreadSpend sums the usage of the thread's runs, of every session: the
	// ended ones by their recorded usage, those still going by their replies
	// stored so far. Runs that ended before the store recorded usage per
	// run count nothing.
	ThreadSpend(ctx context.Context, threadID int64) (Usage, error)
}

// HistoryStore reads a thread's whole record, for showing it: the list of
// threads and, per thread, its sessions, runs, pushes and input. These only
// read, and never wait for writers.
type HistoryStore interface {
	// ThreadSummaries returns every thread, most recently active first.
	ThreadSummaries(ctx context.Context) ([]ThreadSummary, error)
	// AuthorThreadSummaries returns the platform's threads where authorID
	// asked something of the agent (input other than a command: a prompt,
	// !steer or !followup), most recently active first as ThreadSummaries,
	// at most limit of them (limit <= 0: none). A thread where the person
	// only typed commands, and threads of another platform, are left out.
	AuthorThreadSummaries(ctx context.Context, platform, authorID string, limit int) ([]ThreadSummary, error)
	// ThreadSessions returns the thread's sessions, oldest first (a !reset
	// starts a new one; the last is the current one).
	ThreadSessions(ctx context.Context, threadID int64) ([]Session, error)
	// ThreadRuns returns the thread's runs, oldest first.
	ThreadRuns(ctx context.Context, threadID int64) ([]Run, error)
	// ThreadPushes returns the thread's push attempts, oldest first.
	ThreadPushes(ctx context.Context, threadID int64) ([]Push, error)
	// ThreadInbound returns the thread's chat input, oldest first: who wrote
	// each prompt and when.
	ThreadInbound(ctx context.Context, threadID int64) ([]Inbound, error)
	// ThreadVersion is a cheap fingerprint of what a thread's record shows:
	// it changes when an entry is appended to its current session, a
	// session, run or push begins or ends, a decision is recorded, or input
	// arrives or is delivered.
	// A page following the thread polls it and re-reads the record only when
	// it changed.
	ThreadVersion(ctx context.Context, threadID int64) (string, error)
}

// OpsStore is what the operator's probes and metrics read.
type OpsStore interface {
	// Ping checks that the database answers a read (the readiness probe).
	Ping(ctx context.Context) error
	// PendingInboundCounts counts the input accepted but not yet delivered,
	// by state ("received", "queued"): the queue depth an operator watches.
	PendingInboundCounts(ctx context.Context) (map[string]int, error)
}

// PendingPostStore keeps posts that must survive a crash.
type PendingPostStore interface {
	// RecordPendingPosts stores posts, in order, in one transaction and
	// returns their ids. Key and text are required; an unknown thread or run
	// is ErrNotFound. Under a lease (WithLease) it is fenced like the other
	// writes of a thread: a stale owner's answer is neither stored nor posted
	// at the next start.
	RecordPendingPosts(ctx context.Context, posts []PendingPost) ([]int64, error)
	// MarkPosted records that the platform took the post as messageID, or,
	// with messageID "", that it refused it for good: either way it is not
	// posted again. It is not fenced: a post the platform took is marked
	// whoever sent it. Marking a post twice keeps the first mark; an unknown
	// post is ErrNotFound.
	MarkPosted(ctx context.Context, id int64, messageID string) error
	// UnpostedPosts returns the posts never marked, oldest first, with their
	// threads' keys.
	UnpostedPosts(ctx context.Context) ([]PendingPost, error)
}

// LeaseStore keeps thread leases (see Lease).
type LeaseStore interface {
	// AcquireLease takes threadID for owner for ttl. ok is false, with the
	// holder's lease, when another owner's lease is live. Acquiring a lease
	// the owner still holds renews it and keeps its fence; any other
	// acquisition gets a larger fence. An empty owner or a ttl that is not
	// positive is refused; an unknown thread is ErrNotFound.
	AcquireLease(ctx context.Context, threadID int64, owner string, ttl time.Duration) (l Lease, ok bool, err error)
	// RenewLease extends a lease to now+ttl. A lease the thread no longer
	// has (acquired anew since) is ErrFenced; an expired lease nobody took
	// is renewed.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives the thread up at once (its fence stays); a lease
	// already lost is ErrFenced.
	ReleaseLease(ctx context.Context, l Lease) error
	// UnownedThreads returns, by id, the threads that have work left — input
	// accepted and not delivered, a run not ended, a post not made — and no
	// live lease: the replica that owned them died, or gave them up, or
	// nobody claimed them yet. A replica claims them (AcquireLease) and
	// recovers each.
	UnownedThreads(ctx context.Context) ([]int64, error)
}

// RetentionStore forgets threads nobody used for a long time
// (storage.retention). A thread is expired at a cutoff when nobody wrote in it
// (ActiveAt) and nothing of it changed (UpdatedAt), no run of it started or
// ended, at or after the cutoff; and it is never expired while it has a run in
// progress, input accepted and not yet delivered nor dropped, a post not yet
// made, or a live lease (another replica owns it).
type RetentionStore interface {
	// ExpiredThreads returns up to limit threads expired at cutoff, least
	// recently active first: one batch for the sweeper to delete.
	ExpiredThreads(ctx context.Context, cutoff time.Time, limit int) ([]Thread, error)
	// DeleteThread deletes the thread and every record of it — sessions and
	// their entries, input, runs and their usage, posted messages, pending
	// posts, pushes, decisions, its lease — in one transaction, if it is still expired
	// at cutoff when the transaction holds it; deleted says whether it was.
	// An unknown thread is not deleted (false, nil). A thread deleted is
	// forgotten: input in the same chat thread later creates a new one. The
	// thread's files (workspace, scratch) are the caller's to delete.
	DeleteThread(ctx context.Context, threadID int64, cutoff time.Time) (deleted bool, err error)
	// TryRetentionLock takes the retention sweep's lock if nobody holds it:
	// among the processes sharing the store (replicas of one PostgreSQL
	// database) one sweeps at a time. ok is false while another holds it.
	// release gives it back, and must be called before Close; a holder that
	// dies loses it (PostgreSQL: a session advisory lock, gone with its
	// connection).
	TryRetentionLock(ctx context.Context) (release func(), ok bool, err error)
}

// InboundNotifier tells the replicas sharing a store, at once, that input was
// accepted for a thread, so that the thread's owner takes it without waiting
// for its next poll. A notification can be lost (a listener reconnecting), so
// owners poll too.
type InboundNotifier interface {
	// ListenInbound calls fn with the thread of every message accepted from
	// now on (not duplicates), after its commit, until ctx ends, then returns
	// nil. fn runs on the notifier's goroutine and must not block.
	ListenInbound(ctx context.Context, fn func(threadID int64)) error
}

// Store is the whole contract, which every backend implements and the
// conformance suite (storage/storagetest) checks.
type Store interface {
	ThreadStore
	SessionStore
	InboundStore
	RunStore
	OutboundStore
	PushStore
	DecisionStore
	UsageStore
	RunUsageStore
	SpendStore
	HistoryStore
	OpsStore
	PendingPostStore
	LeaseStore
	RetentionStore
	InboundNotifier
	OpeningStore
	FiringStore
	// Close releases the backend. Writes that returned are durable already.
	Close() error
}
