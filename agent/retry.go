package agent

import (
	"context"
	"math"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// RetrySettings configure automatic retries of transient model failures (docs/agent.md §5).
type RetrySettings struct {
	Enabled    bool
	MaxRetries int
	BaseDelay  time.Duration
	// MaxDelay caps every wait: a server's Retry-After and the doubling
	// delay alike (0 = no cap).
	MaxDelay time.Duration
}

// DefaultRetrySettings returns enabled retries: 3 attempts, 2 s base, 60 s cap.
func DefaultRetrySettings() RetrySettings {
	return RetrySettings{Enabled: true, MaxRetries: 3, BaseDelay: 2 * time.Second, MaxDelay: 60 * time.Second}
}

// delay is the wait before retry attempt n (1-based): base·2^(n-1), or the
// server's Retry-After when it sent one, either capped at MaxDelay.
func (r RetrySettings) delay(attempt int, err *llm.Error) time.Duration {
	capped := func(d time.Duration) time.Duration {
		if r.MaxDelay > 0 && d > r.MaxDelay {
			return r.MaxDelay
		}
		return d
	}
	if err != nil && err.RetryAfter > 0 {
		return capped(err.RetryAfter)
	}
	d := r.BaseDelay
	// Stop doubling at the cap: with many retries configured, 2^n would
	// otherwise overflow into a negative (immediate) or absurd wait.
	for i := 1; i < attempt && (r.MaxDelay <= 0 || d < r.MaxDelay) && d < math.MaxInt64/2; i++ {
		d *= 2
	}
	return capped(d)
}

// isRetryable reports whether a finished reply failed transiently. Context
// overflows are not retried here: compaction handles them.
func isRetryable(m llm.Message) bool {
	return m.Role == llm.RoleAssistant && m.StopReason == llm.StopReasonError &&
		m.ErrorInfo != nil && !m.ErrorInfo.ContextOverflow && m.ErrorInfo.Retryable()
}

// isOverflow reports whether a reply shows the context no longer fits: the
// provider refused it, or (for providers that silently truncate) a successful
// reply consumed more input than the window holds.
func isOverflow(m llm.Message, contextWindow int) bool {
	if m.Role != llm.RoleAssistant {
		return false
	}
	if m.StopReason == llm.StopReasonError {
		return m.ErrorInfo != nil && m.ErrorInfo.ContextOverflow
	}
	if contextWindow > 0 && m.Usage != nil && m.StopReason != llm.StopReasonAborted {
		return m.Usage.Input+m.Usage.CacheRead > contextWindow
	}
	return false
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
