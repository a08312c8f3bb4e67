package ops

import (
	"context"
	"errors"
	"net/http"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// InstrumentModel returns model counting every call into m: requests, the
// tokens the provider reported, and failures by class. It changes nothing
// else: the reply, the deltas and the error pass through as they are.
func InstrumentModel(model llm.Model, m *Metrics) llm.Model {
	return &countingModel{next: model, m: m}
}

type countingModel struct {
	next llm.Model
	m    *Metrics
}

func (c *countingModel) Stream(ctx context.Context, req llm.Request, fn llm.StreamFunc) (llm.Message, error) {
	name := req.Model
	c.m.llmRequests.WithLabelValues(name).Inc()
	msg, err := c.next.Stream(ctx, req, fn)
	if u := msg.Usage; u != nil {
		c.add(name, "input", u.Input)
		c.add(name, "output", u.Output)
		c.add(name, "cache_read", u.CacheRead)
		c.add(name, "cache_write", u.CacheWrite)
	}
	// A call the bot cut off itself (!stop, a shutdown, run_timeout: ctx
	// ended) did not fail: it is not the provider's error.
	if err != nil && ctx.Err() == nil {
		c.m.llmErrors.WithLabelValues(name, errorClass(err)).Inc()
	}
	return msg, err
}

func (c *countingModel) add(model, kind string, n int) {
	if n > 0 {
		c.m.llmTokens.WithLabelValues(model, kind).Add(float64(n))
	}
}

// errorClass sorts a failed model call into a few classes an operator acts
// on differently: a quota or credentials to fix, a provider having a bad
// day, a network to look at, contexts that need a bigger window.
func errorClass(err error) string {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A context error while the call's own context goes on: a
		// client-side deadline, not the provider's answer.
		return "cancelled"
	}
	var e *llm.Error
	if !errors.As(err, &e) {
		return "other"
	}
	switch {
	case e.ContextOverflow:
		return "context_overflow"
	case e.Code == "insufficient_quota":
		return "quota"
	case e.StatusCode == http.StatusTooManyRequests:
		return "rate_limit"
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		return "auth"
	case e.StatusCode == 529 || e.StatusCode == http.StatusServiceUnavailable:
		return "overloaded"
	case e.StatusCode >= 500:
		return "server"
	case e.StatusCode >= 400:
		return "bad_request"
	}
	switch e.Kind {
	case llm.ErrorNetwork, llm.ErrorTimeout, llm.ErrorTruncated, llm.ErrorMalformed, llm.ErrorProvider:
		return string(e.Kind)
	}
	return "other"
}
