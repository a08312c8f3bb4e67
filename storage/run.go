package storage

import "time"

// RunOutcome says how a run ended. The constants are the ones threadsmith
// writes; any non-empty text is stored as given.
type RunOutcome string

const (
	RunDone        RunOutcome = "done"        // the agent finished
	RunFailed      RunOutcome = "error"       // the agent gave up on an error
	RunStopped     RunOutcome = "stopped"     // !stop
	RunInterrupted RunOutcome = "interrupted" // found running at start: the process died
	// RunWaiting: the model could not be reached; the run's input waits for
	// it and is answered by the thread's next run.
	RunWaiting RunOutcome = "waiting"
)

// Run is one run of the agent on a thread's session.
type Run struct {
	ID        int64
	ThreadID  int64
	Thread    ThreadKey // where to tell people about it
	SessionID string
	InboundID int64 // the input that started it, 0 if none
	StartedAt time.Time
	EndedAt   time.Time  // zero while running
	Outcome   RunOutcome // "" while running
}
