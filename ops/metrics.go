// Package ops is what an operator sees of a running bot besides its logs: the
// HTTP endpoints of docs/behaviour.md §9 (GET /healthz, /readyz, /metrics; see
// Server) and the Prometheus metrics behind /metrics (Metrics).
//
// Metrics implements the small metrics interfaces that the bridge and the
// sandbox declare, wraps the LLM client (InstrumentModel) and the platforms'
// HTTP transports (Transport); every method is safe for concurrent use and
// cheap (an atomic add), so callers may count on hot paths. Counts start at
// zero with each process, as Prometheus expects; what must survive a restart
// (pending input) is read from storage when scraped.
//
// Label values are bounded: run outcomes, push results, error classes and
// compaction reasons are closed sets, and platform API methods are route
// templates with ids replaced (see Transport), so a busy bot cannot grow the
// number of series without bound.
package ops

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// namespace prefixes every metric of the bot.
const namespace = "threadsmith"

// BuildInfo identifies the running binary (threadsmith_build_info).
type BuildInfo struct {
	Version   string
	Revision  string
	GoVersion string
}

// Metrics holds the bot's Prometheus metrics in a registry of its own (never
// the global one: tests run several bots in one process).
type Metrics struct {
	reg *prometheus.Registry

	runs         *prometheus.CounterVec
	runDuration  prometheus.Histogram
	llmRequests  *prometheus.CounterVec
	llmTokens    *prometheus.CounterVec
	llmErrors    *prometheus.CounterVec
	retries      prometheus.Counter
	compactions  *prometheus.CounterVec
	apiRequests  *prometheus.CounterVec
	apiLimited   *prometheus.CounterVec
	pushes       *prometheus.CounterVec
	sandboxFails prometheus.Counter
	threadsLive  prometheus.Gauge
	evicted      prometheus.Counter
	leases       *prometheus.CounterVec
}

// NewMetrics returns the bot's metrics, with the Go runtime's and the
// process's (memory, goroutines, open files, CPU) registered beside them.
func NewMetrics(info BuildInfo) *Metrics {
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion},
	})
	build.Set(1)
	f(build)

	m := &Metrics{
		reg: reg,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "runs_total",
			Help: "Agent runs that ended, by outcome: done, error, stopped (!stop) or interrupted (a shutdown or crash cut it off)."}, []string{"outcome"}),
		runDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "run_duration_seconds",
			Help:    "How long agent runs took, from the first event to the footer.",
			Buckets: []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600}}),
		llmRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "llm_requests_total",
			Help: "Model calls made (each retry is one more), by model."}, []string{"model"}),
		llmTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "llm_tokens_total",
			Help: "Tokens the provider reported, by model and kind: input, output, cache_read, cache_write."}, []string{"model", "kind"}),
		llmErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "llm_errors_total",
			Help: "Failed model calls, by model and class: rate_limit, overloaded, server, auth, bad_request, context_overflow, quota, network, timeout, truncated, malformed, provider, cancelled (a client-side deadline), other. A call the bot cut off itself (!stop, shutdown, run_timeout) is not counted."}, []string{"model", "class"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "llm_retries_total",
			Help: "Automatic retries of failed model calls (each announced in its thread)."}),
		compactions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "compactions_total",
			Help: "Context compactions, by reason (threshold, overflow, manual) and result (ok, failed, aborted)."}, []string{"reason", "result"}),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "platform_api_requests_total",
			Help: "HTTP requests to Slack's and Discord's APIs, by platform, method (a route template) and code (status class, or error)."}, []string{"platform", "method", "code"}),
		apiLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "platform_api_rate_limited_total",
			Help: "HTTP 429 answers of Slack's and Discord's APIs, by platform and method."}, []string{"platform", "method"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "pushes_total",
			Help: "Pushes of thread branches, by result: ok, rejected, error."}, []string{"result"}),
		sandboxFails: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "sandbox_start_failures_total",
			Help: "Commands of the agent whose sandbox could not be started."}),
		threadsLive: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "threads_live",
			Help: "Threads whose session is loaded in memory now."}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "threads_evicted_total",
			Help: "Idle threads unloaded from memory (reloaded from storage on their next message)."}),
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "thread_leases_total",
			Help: "Thread leases between replicas sharing a database, by event: acquired (this replica took a thread), lost (another replica took it over), released (given up when idle or at shutdown)."}, []string{"event"}),
	}
	f(m.runs)
	f(m.runDuration)
	f(m.llmRequests)
	f(m.llmTokens)
	f(m.llmErrors)
	f(m.retries)
	f(m.compactions)
	f(m.apiRequests)
	f(m.apiLimited)
	f(m.pushes)
	f(m.sandboxFails)
	f(m.threadsLive)
	f(m.evicted)
	f(m.leases)
	// Series that exist from the start read as 0 rather than missing, so
	// that rate() and alerts work before the first event.
	for _, o := range []string{"done", "error", "stopped", "interrupted"} {
		m.runs.WithLabelValues(o)
	}
	for _, r := range []string{"ok", "rejected", "error"} {
		m.pushes.WithLabelValues(r)
	}
	for _, reason := range []string{"threshold", "overflow", "manual"} {
		for _, result := range []string{"ok", "failed", "aborted"} {
			m.compactions.WithLabelValues(reason, result)
		}
	}
	for _, e := range []string{"acquired", "lost", "released"} {
		m.leases.WithLabelValues(e)
	}
	return m
}

// errorClasses are the classes of llm_errors_total (see errorClass).
var errorClasses = []string{"rate_limit", "overloaded", "server", "auth", "bad_request", "context_overflow", "quota",
	"network", "timeout", "truncated", "malformed", "provider", "cancelled", "other"}

// tokenKinds are the kinds of llm_tokens_total.
var tokenKinds = []string{"input", "output", "cache_read", "cache_write"}

// KnownModels makes the model series of the configured models exist from
// the start at 0: requests, tokens of each kind and errors of each class.
// (The platforms' API series are labelled by the methods called, which are
// not known before they are.)
func (m *Metrics) KnownModels(names ...string) {
	for _, n := range names {
		m.llmRequests.WithLabelValues(n)
		for _, k := range tokenKinds {
			m.llmTokens.WithLabelValues(n, k)
		}
		for _, c := range errorClasses {
			m.llmErrors.WithLabelValues(n, c)
		}
	}
}

// Registry is where the metrics live (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RunFinished counts a run that ended with outcome after d.
func (m *Metrics) RunFinished(outcome string, d time.Duration) {
	m.runs.WithLabelValues(outcome).Inc()
	m.runDuration.Observe(d.Seconds())
}

// Pushed counts a push of a thread's branch.
func (m *Metrics) Pushed(result string) { m.pushes.WithLabelValues(result).Inc() }

// Retried counts an automatic retry of a model call.
func (m *Metrics) Retried() { m.retries.Inc() }

// Compacted counts a compaction that ended.
func (m *Metrics) Compacted(reason, result string) {
	m.compactions.WithLabelValues(reason, result).Inc()
}

// ThreadLoaded counts a thread whose session came into memory.
func (m *Metrics) ThreadLoaded() { m.threadsLive.Inc() }

// ThreadUnloaded counts a thread that left memory; evicted says it was idle
// (rather than stopped by a shutdown).
func (m *Metrics) ThreadUnloaded(evicted bool) {
	m.threadsLive.Dec()
	if evicted {
		m.evicted.Inc()
	}
}

// Lease counts a thread lease event: acquired, lost or released.
func (m *Metrics) Lease(event string) { m.leases.WithLabelValues(event).Inc() }

// StartFailed counts a sandbox that could not be started.
func (m *Metrics) StartFailed() { m.sandboxFails.Inc() }

// PendingInput registers the queue depth: read reports the input accepted
// but not yet delivered to a model, by state ("received": waiting for its
// thread or a run slot; "queued": in a session's steer or followUp queue).
// It is called on every scrape, with a deadline, so it should be a cheap
// query; a failed read leaves the series out of that scrape.
func (m *Metrics) PendingInput(read func(ctx context.Context) (map[string]int, error)) {
	m.reg.MustRegister(&pendingCollector{read: read, desc: prometheus.NewDesc(
		prometheus.BuildFQName(namespace, "", "input_pending"),
		"Input accepted but not yet delivered to a model (the queue depth), by state: received (waiting for its thread or a run slot) or queued (in a steer or followUp queue).",
		[]string{"state"}, nil)})
}

// pendingCollector reads the queue depth from storage at scrape time: it is
// then right across restarts and needs no bookkeeping on the hot path.
type pendingCollector struct {
	read func(ctx context.Context) (map[string]int, error)
	desc *prometheus.Desc
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.read(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, state := range []string{"received", "queued"} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[state]), state)
	}
}
