package bridge

import (
	"sync"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// threadMetrics records what the bridge tells the metrics of threads.
type threadMetrics struct {
	noMetrics
	mu                       sync.Mutex
	loaded, evicted, stopped int
}

func (m *threadMetrics) ThreadLoaded() { m.mu.Lock(); m.loaded++; m.mu.Unlock() }

func (m *threadMetrics) ThreadUnloaded(evicted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if evicted {
		m.evicted++
	} else {
		m.stopped++
	}
}

func (m *threadMetrics) counts() (loaded, evicted, stopped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loaded, m.evicted, m.stopped
}

// threadsmith_threads_live and threads_evicted_total: an idle
// thread's eviction is counted as one, and its reload as a thread loaded
// again; the shutdown unloads what is left without calling it an eviction.
func TestThreadEvictionsAreCounted(t *testing.T) {
	t.Parallel()
	m := &threadMetrics{}
	r := newRig(t, func(c *Config, _ *Platform) {
		c.IdleEvict = 100 * time.Millisecond
		c.Metrics = m
	})
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("64.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	r.waitUntil("the idle thread is evicted", func() bool { _, e, _ := m.counts(); return e == 1 })
	r.say(th, alice, "again", false)
	r.waitRuns(th, 2)
	if l, e, s := m.counts(); l != 2 || e != 1 || s != 0 {
		t.Fatalf("loaded %d, evicted %d, stopped %d; want 2, 1, 0 (live: 1)", l, e, s)
	}
}
