package storage

// Usage sums the token usage and cost of assistant replies, as their messages
// recorded them (usage.cost is there only when the model's price was known).
type Usage struct {
	Replies                              int
	Input, Output, CacheRead, CacheWrite int64
	Cost                                 float64
}

// Plus is u and v summed.
func (u Usage) Plus(v Usage) Usage {
	return Usage{Replies: u.Replies + v.Replies, Input: u.Input + v.Input, Output: u.Output + v.Output,
		CacheRead: u.CacheRead + v.CacheRead, CacheWrite: u.CacheWrite + v.CacheWrite, Cost: u.Cost + v.Cost}
}

// CacheHitRate is the share of prompt tokens read from the provider's cache.
func (u Usage) CacheHitRate() float64 {
	prompt := u.Input + u.CacheRead + u.CacheWrite
	if prompt == 0 {
		return 0
	}
	return float64(u.CacheRead) / float64(prompt)
}

// RunUsage is what one run's model replies used and cost, and which models
// gave them, recorded with the run when it ends (FinishRun, InterruptRuns).
type RunUsage struct {
	Usage
	Models []string // in the order they first replied
}
