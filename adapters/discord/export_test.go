package discord

import "time"

// SetReceiveRetry sets the waits between attempts of a failed Receive, so
// that tests of the failure path do not take seconds. Call it before Run.
func SetReceiveRetry(a *Adapter, waits ...time.Duration) { a.receiveRetry = waits }
