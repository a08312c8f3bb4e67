package bridge

import "github.com/threadsmith/threadsmith/agent"

// Metrics is what the bridge tells the operator's metrics (package ops).
// Runs and pushes are counted where storage records them; these are the
// facts only the bridge sees. Calls are made by threads' owners, for each
// session event among others: they must be quick.
type Metrics interface {
	// ThreadLoaded: a thread's owner started (its session comes into memory).
	ThreadLoaded()
	// ThreadUnloaded: it stopped; evicted says it was idle (not a shutdown).
	ThreadUnloaded(evicted bool)
	// Retried: a failed model call is retried.
	Retried()
	// Compacted: a compaction ended, by reason, with result ok, failed or aborted.
	Compacted(reason, result string)
	// Lease: a thread lease was acquired, lost (taken over) or released.
	Lease(event string)
}

type noMetrics struct{}

func (noMetrics) ThreadLoaded()            {}
func (noMetrics) ThreadUnloaded(bool)      {}
func (noMetrics) Retried()                 {}
func (noMetrics) Compacted(string, string) {}
func (noMetrics) Lease(string)             {}

// countEvent counts the session events the operator watches.
func countEvent(m Metrics, ev agent.Event) {
	switch e := ev.(type) {
	case agent.AutoRetryStart:
		m.Retried()
	case agent.AutoCompactionEnd:
		result := "ok"
		switch {
		case e.Aborted:
			result = "aborted"
		case e.ErrorMessage != "":
			result = "failed"
		}
		m.Compacted(string(e.Reason), result)
	}
}
