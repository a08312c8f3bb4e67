package storage

import "time"

// ThreadKey identifies a chat thread: Slack (team, channel, thread root ts);
// Discord (guild, parent channel or thread channel, thread id). Team may be empty
// (DMs); the others may not.
type ThreadKey struct {
	Platform string
	Team     string
	Channel  string
	Thread   string
}

// ThreadState says whether a thread still takes input.
//
// An active thread nobody wrote in lately (ActiveAt older than the caller's
// window, a day for catching up) is idle: it still takes input, but
// RecentThreads leaves it out, so a reconnect spends no API call on it.
type ThreadState string

const (
	// ThreadActive: the thread hosts a live session (the default).
	ThreadActive ThreadState = "active"
	// ThreadClosed: the thread is gone from the platform (deleted, or the bot
	// lost access); it is neither resumed at start nor caught up. Input
	// accepted in it makes it active again.
	ThreadClosed ThreadState = "closed"
)

// ThreadInit is what is known of a thread's workspace when it is first seen.
// Any field may be empty and set later with SetThreadWorkspace.
type ThreadInit struct {
	Repo          string
	Branch        string
	WorkspacePath string
	// Origin is where a thread the bot opened itself came from ("schedule
	// nightly", "issue #12"); "" for a thread a person started. It is kept
	// from the thread's creation: SetThreadWorkspace ignores it.
	Origin string
}

// ThreadQuery names a repository's thread by the branch it works on, or by
// where it came from (its Origin, such as "issue #12").
type ThreadQuery struct {
	Repo, Branch, Origin string
}

// Thread is a chat thread hosting a session.
type Thread struct {
	ID  int64
	Key ThreadKey
	// SessionID is the current session ("" before the first CreateSession).
	SessionID     string
	Repo          string
	Branch        string
	WorkspacePath string
	State         ThreadState
	// Origin is ThreadInit.Origin as the thread was created with it.
	Origin string
	// LastSeenMessage is the platform id (Slack ts, Discord snowflake) of the
	// newest message seen in the thread, for catch-up after a reconnect.
	LastSeenMessage string
	// ActiveAt is when a person last wrote in the thread (input accepted), or
	// when it was created.
	ActiveAt  time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}
