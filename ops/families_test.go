package ops

import (
	"context"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/ops/opstest"
)

// Before any event, every family whose labels are known up front is
// scraped at 0: runs, pushes, compactions, leases, and the configured
// models' requests, tokens and errors.
func TestKnownSeriesExistBeforeTheirFirstEvent(t *testing.T) {
	t.Parallel()
	m := NewMetrics(BuildInfo{Version: "v1"})
	m.KnownModels("main-model", "other-model")
	fams := opstest.Scrape(t, serve(t, Handler(m, nil, nil)))
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"threadsmith_runs_total", map[string]string{"outcome": "interrupted"}},
		{"threadsmith_compactions_total", map[string]string{"reason": "overflow", "result": "failed"}},
		{"threadsmith_thread_leases_total", map[string]string{"event": "released"}},
		{"threadsmith_llm_requests_total", map[string]string{"model": "other-model"}},
		{"threadsmith_llm_tokens_total", map[string]string{"model": "main-model", "kind": "cache_write"}},
		{"threadsmith_llm_errors_total", map[string]string{"model": "main-model", "class": "rate_limit"}},
		{"threadsmith_llm_retries_total", nil},
		{"threadsmith_threads_live", nil},
	} {
		if _, ok := fams[c.name]; !ok {
			t.Errorf("%s is absent before its first event", c.name)
			continue
		}
		if got := value(t, fams, c.name, c.labels); got != 0 {
			t.Errorf("%s%v = %v, want 0", c.name, c.labels, got)
		}
	}
}

// A model call the bot cuts off itself (!stop, a shutdown: its context
// ends) is no error of the provider's: it is counted as a request only.
func TestACallTheBotStoppedIsNoLLMError(t *testing.T) {
	t.Parallel()
	m := NewMetrics(BuildInfo{Version: "v1"})
	m.KnownModels("gpt")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := InstrumentModel(fakeModel{err: context.Canceled, msg: llm.Message{StopReason: llm.StopReasonAborted}}, m)
	if _, err := stopped.Stream(ctx, llm.Request{Model: "gpt"}, nil); err == nil {
		t.Fatal("the error did not pass through")
	}
	fams := opstest.Scrape(t, serve(t, Handler(m, nil, nil)))
	if got := value(t, fams, "threadsmith_llm_requests_total", map[string]string{"model": "gpt"}); got != 1 {
		t.Errorf("requests = %v, want 1", got)
	}
	for _, class := range errorClasses {
		if got := value(t, fams, "threadsmith_llm_errors_total", map[string]string{"model": "gpt", "class": class}); got != 0 {
			t.Errorf("a stopped call counted %v errors of class %s, want 0", got, class)
		}
	}
}
