package storage

import "time"

// ThreadSummary is a thread as the list of sessions shows it.
type ThreadSummary struct {
	Thread
	// Running says a run is in progress; Pending counts input not yet
	// delivered (received or queued).
	Running bool
	Pending int
	// LastActivity is the latest of ActiveAt and the newest entry.
	LastActivity time.Time
	// Cost sums the priced replies of all the thread's sessions (USD).
	Cost float64
	// Request is the text of the thread's first prompt ("" before one), its
	// first RequestChars characters: what the thread is about, for a list of
	// threads (a prompt may be a pasted log, and the list holds every thread).
	Request string
}

// RequestChars is how much of a thread's first prompt ThreadSummary.Request
// holds.
const RequestChars = 1000
