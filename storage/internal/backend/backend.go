// Package backend is what storage's backends (storage/sqlite,
// storage/postgres) share so that they keep the contract the same way: the
// stored form of entries and its decoder, session snapshots, the checks of
// arguments the contract refuses, the inbound state machine, the SQL both
// run verbatim, and errors in the form storage's contract gives them.
//
// A snapshot's form (snapshot.go) is written by hand, not JSON, because it
// is what a resume waits on: on a 100 KB session that never compacted, a
// SQLite resume from the snapshot takes 0.07-0.12 ms against 0.36-0.50 ms
// from the entries' rows and JSON, and decoding the snapshot alone 32-40 us
// (BENCHMARKS.md, "Resume from a snapshot").
package backend

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// CheckThreadKey refuses a thread key without platform, channel or thread
// (EnsureThread, AcceptInboundInThread).
func CheckThreadKey(k storage.ThreadKey) error {
	if k.Platform == "" || k.Channel == "" || k.Thread == "" {
		return errors.New("thread key needs platform, channel and thread")
	}
	return nil
}

// CheckInbound refuses input that cannot be stored (AcceptInbound).
func CheckInbound(in storage.Inbound) error {
	switch {
	case in.Platform == "" || in.Channel == "":
		return errors.New("platform and channel are required")
	case in.Mode != storage.ModePrompt && in.Mode != storage.ModeSteer && in.Mode != storage.ModeFollowUp && in.Mode != storage.ModeCommand:
		return fmt.Errorf("unknown mode %q", in.Mode)
	case len(in.Attachments) > 0 && !json.Valid(in.Attachments):
		return errors.New("attachments are not valid JSON")
	}
	return nil
}

// CheckLease refuses AcquireLease's and RenewLease's arguments when the
// owner is empty or the ttl not positive.
func CheckLease(owner string, ttl time.Duration) error {
	if owner == "" {
		return errors.New("lease owner is required")
	}
	if ttl <= 0 {
		return fmt.Errorf("lease ttl must be positive (got %s)", ttl)
	}
	return nil
}

// CheckDecision refuses a decision of an unknown kind or without a user
// (RecordDecision).
func CheckDecision(d storage.Decision) error {
	if !storage.ValidDecisionKind(d.Kind) {
		return fmt.Errorf("unknown kind %q", d.Kind)
	}
	if d.UserID == "" {
		return errors.New("no user")
	}
	return nil
}

// CheckOpening refuses an opening without platform or key (BeginOpening).
func CheckOpening(platform, key string) error {
	if platform == "" || key == "" {
		return errors.New("platform and key are required")
	}
	return nil
}

// CheckFiring refuses ClaimFiring's arguments without schedule or owner or
// with a ttl not positive.
func CheckFiring(schedule, owner string, ttl time.Duration) error {
	if schedule == "" || owner == "" || ttl <= 0 {
		return errors.New("schedule, owner and a positive ttl are required")
	}
	return nil
}

// allowedFrom lists, per target state, the states an inbound message may leave
// for it. A queued message may be re-queued (moved to the other queue).
var allowedFrom = map[storage.InboundState][2]storage.InboundState{
	storage.InboundQueued:    {storage.InboundReceived, storage.InboundQueued},
	storage.InboundDelivered: {storage.InboundReceived, storage.InboundQueued},
	storage.InboundDropped:   {storage.InboundReceived, storage.InboundQueued},
}

// InboundFrom returns the states an inbound message may leave for state
// (MarkInbound), or storage.ErrInvalidTransition for a state nothing moves to.
func InboundFrom(state storage.InboundState) ([2]storage.InboundState, error) {
	from, ok := allowedFrom[state]
	if !ok {
		return from, fmt.Errorf("%w: to %q", storage.ErrInvalidTransition, state)
	}
	return from, nil
}

// NewSessionID returns a random public session id: 26 base32 characters
// (130 random bits), safe in logs, file names and URLs.
func NewSessionID() string { return rand.Text() }

// UnownedThreadsQuery is UnownedThreads' SQL, the same on both backends;
// now is the SQL of the time leases are judged by, in Unix ms (SQLite: a
// parameter; PostgreSQL: the server's clock).
func UnownedThreadsQuery(now string) string {
	return `SELECT w.thread_id FROM (
		SELECT thread_id FROM inbound WHERE state IN ('received', 'queued')
		UNION SELECT thread_id FROM runs WHERE ended_at IS NULL
		UNION SELECT thread_id FROM pending_posts WHERE done_at IS NULL
	) w LEFT JOIN thread_leases l ON l.thread_id = w.thread_id
	WHERE l.thread_id IS NULL OR l.expires_at <= ` + now + `
	ORDER BY w.thread_id`
}

// ExpiredWhere is the condition of storage.RetentionStore on thread t, the
// same on both backends (SQLite's driver binds $N to the N-th argument, as
// PostgreSQL does): $1 is the cutoff in Unix ms, and now the SQL of the time
// leases are judged by (as UnownedThreadsQuery's).
func ExpiredWhere(now string) string {
	return ` t.active_at < $1 AND t.updated_at < $1
	AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = t.id
		AND (r.ended_at IS NULL OR r.ended_at >= $1 OR r.started_at >= $1))
	AND NOT EXISTS (SELECT 1 FROM inbound i WHERE i.thread_id = t.id AND i.state IN ('received', 'queued'))
	AND NOT EXISTS (SELECT 1 FROM pending_posts p WHERE p.thread_id = t.id AND p.done_at IS NULL)
	AND NOT EXISTS (SELECT 1 FROM thread_leases l WHERE l.thread_id = t.id AND l.expires_at > ` + now + `) `
}

// FindThreadWhere is the condition FindActiveThread reads q's thread with,
// on the partial indexes of active threads by (repo, branch) and (repo,
// origin), and its two arguments; ok is false when q names neither a branch
// nor an origin.
func FindThreadWhere(q storage.ThreadQuery) (where string, args []any, ok bool) {
	col, val := "t.branch", q.Branch
	if q.Branch == "" {
		col, val = "t.origin", q.Origin
	}
	return ` t.state = 'active' AND t.repo = $1 AND ` + col + ` = $2 `, []any{q.Repo, val}, val != ""
}

// DeleteThreadStatements delete a thread's records (DeleteThread), children
// first so that foreign keys hold; $1 is the thread id, the same on both
// backends.
var DeleteThreadStatements = []string{
	`DELETE FROM run_usage WHERE run_id IN (SELECT id FROM runs WHERE thread_id = $1)`,
	`DELETE FROM outbound WHERE thread_id = $1`,
	`DELETE FROM pending_posts WHERE thread_id = $1`,
	`DELETE FROM pushes WHERE thread_id = $1`,
	`DELETE FROM decisions WHERE thread_id = $1`,
	`DELETE FROM runs WHERE thread_id = $1`,
	`UPDATE threads SET session_id = NULL WHERE id = $1`,
	`DELETE FROM entries WHERE session_id IN (SELECT id FROM sessions WHERE thread_id = $1)`,
	`DELETE FROM session_snapshots WHERE session_id IN (SELECT id FROM sessions WHERE thread_id = $1)`,
	`DELETE FROM sessions WHERE thread_id = $1`,
	`DELETE FROM inbound WHERE thread_id = $1`,
	`DELETE FROM thread_leases WHERE thread_id = $1`,
	// The opening that opened it: asked for again, it opens a new thread.
	`DELETE FROM openings WHERE (platform, team, channel, thread) IN (SELECT platform, team, channel, thread FROM threads WHERE id = $1)`,
	`DELETE FROM threads WHERE id = $1`,
}

// AddReply adds one reply's usage to u, and its model the first time it
// replies: how a run's usage is summed when it ends.
func AddReply(u *storage.RunUsage, model string, input, output, cacheRead, cacheWrite int64, cost float64) {
	u.Replies++
	u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Cost = u.Input+input, u.Output+output, u.CacheRead+cacheRead, u.CacheWrite+cacheWrite, u.Cost+cost
	if model != "" && !slices.Contains(u.Models, model) {
		u.Models = append(u.Models, model)
	}
}

// OpError wraps err, already in the backend's terms (see Sentinel), as the
// error of operation op ("append entries", …): "storage: op: err".
func OpError(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("storage: %s: %w", op, err)
}

// Sentinel returns err, which then also matches sentinel (storage.ErrFull,
// storage.ErrReadOnly) with errors.Is; its text stays err's, the driver's,
// which already says the same.
func Sentinel(sentinel, err error) error { return sentinelError{sentinel, err} }

type sentinelError struct{ sentinel, err error }

func (e sentinelError) Error() string   { return e.err.Error() }
func (e sentinelError) Unwrap() []error { return []error{e.sentinel, e.err} }
