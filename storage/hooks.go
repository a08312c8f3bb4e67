package storage

import "time"

// Hooks are told of facts once storage has committed them. The operator's
// metrics count runs and pushes here, where each is recorded exactly once
// whoever records it (a run's end, the runs found interrupted at start).
// They run on the caller's goroutine: they must be quick and must not call
// back into storage. A nil field is not called.
type Hooks struct {
	// RunFinished is told a run's outcome and how long it took.
	RunFinished func(outcome RunOutcome, d time.Duration)
	// PushRecorded is told the result of each push attempt.
	PushRecorded func(result PushResult)
}
