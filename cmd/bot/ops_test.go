package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/ops"
	"github.com/threadsmith/threadsmith/ops/opstest"
)

// linkedChat is the in-process platform with a connection the test controls.
type linkedChat struct {
	*chatfake.Adapter
	up atomic.Bool
}

func (c *linkedChat) Connected() bool { return c.up.Load() }

// metricValue sums the series of a family whose labels include all of want.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	sum, found := 0.0, false
next:
	for _, m := range f.Metric {
		// Every wanted label must be there with its value: a series without
		// the label is not a match.
		matched := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok {
				if v != l.GetValue() {
					continue next
				}
				matched++
			}
		}
		if matched != len(want) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

// The operator's endpoints on http.listen: alive at once, ready only once
// storage and the platform are connected, metrics counting a run.
func TestHealthReadinessAndMetrics(t *testing.T) {
	t.Parallel()
	// The env's fakes and config, with a Main of the test's own.
	e := newEnv(t)
	e.stop()
	link := &linkedChat{Adapter: e.chat}
	cfg := e.cfg
	cfg.HTTP.Listen = "127.0.0.1:0"
	m := NewMain()
	m.Config = &cfg
	m.Adapters = []chat.Adapter{link}
	m.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := m.Run(e.ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	url := "http://" + m.HTTPAddr()

	if code, body := opstest.Get(t, url+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz = %d %q, want 200 ok", code, body)
	}
	if code, body := opstest.Get(t, url+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "test: not connected") || !strings.Contains(body, "storage: ok") {
		t.Fatalf("/readyz before the platform connects = %d %q, want 503 saying so", code, body)
	}
	link.up.Store(true)
	if code, body := opstest.Get(t, url+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz once connected = %d %q, want 200", code, body)
	}

	e.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "write", Args: `{"path":"a.txt","content":"a\n"}`}),
		llmfake.TextReply("done."),
	)
	th := thread("900.1")
	e.say(th, "add a file", true)
	e.waitText(th, "done.")
	e.waitText(th, "pushed `")
	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"threadsmith_build_info", nil, 1},
		{"threadsmith_runs_total", map[string]string{"outcome": "done"}, 1},
		{"threadsmith_run_duration_seconds", nil, 1},
		{"threadsmith_pushes_total", map[string]string{"result": "ok"}, 1},
		{"threadsmith_threads_live", nil, 1},
		{"threadsmith_llm_requests_total", map[string]string{"model": "fake-model"}, 2},
		{"threadsmith_input_pending", map[string]string{"state": "queued"}, 0},
		{"threadsmith_sandbox_start_failures_total", nil, 0},
	}
	// The run's end is recorded just after its last message: scrape until
	// the metrics have it (as Prometheus would, a little later).
	var fams map[string]*dto.MetricFamily
	for ok := false; !ok; {
		fams = opstest.Scrape(t, url)
		ok = true
		for _, w := range want {
			if v, found := metricValue(fams, w.name, w.labels); !found || v != w.value {
				ok = false
			}
		}
		if !ok {
			select {
			case <-e.ctx.Done():
				for _, w := range want {
					v, found := metricValue(fams, w.name, w.labels)
					t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, found, w.value)
				}
				t.FailNow()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if v, _ := metricValue(fams, "threadsmith_llm_tokens_total", map[string]string{"model": "fake-model"}); v < 1 {
		t.Errorf("no LLM tokens counted")
	}

	// Shutting down: no longer ready, still alive until the end.
	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	<-done
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the endpoints still answer after Close")
	}
}

// waitReady polls /readyz until its status is want (as a load balancer does).
func waitReady(t *testing.T, ctx context.Context, url string, want int, line string) {
	t.Helper()
	for {
		code, body := opstest.Get(t, url+"/readyz")
		if code == want && strings.Contains(body, line) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/readyz = %d %q, want %d with %q", code, body, want, line)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// With the real Slack adapter: ready while Socket Mode is connected, not
// ready during an outage, ready again once it reconnects.
func TestReadinessFollowsTheSlackConnection(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0" }))
	url := "http://" + e.m.HTTPAddr()
	waitReady(t, e.ctx, url, http.StatusOK, "slack: ok")
	end := e.slack.Outage()
	waitReady(t, e.ctx, url, http.StatusServiceUnavailable, "slack: not connected")
	if code, _ := opstest.Get(t, url+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz during the outage = %d, want 200: the process is alive", code)
	}
	end()
	waitReady(t, e.ctx, url, http.StatusOK, "slack: ok")
	fams := opstest.Scrape(t, url)
	if v, _ := metricValue(fams, "threadsmith_platform_api_requests_total", map[string]string{"platform": "slack", "method": "apps.connections.open"}); v < 2 {
		t.Errorf("apps.connections.open counted %v times, want at least 2 (connect, reconnect)", v)
	}
	if v, _ := metricValue(fams, "threadsmith_platform_api_requests_total", map[string]string{"platform": "slack", "method": "auth.test", "code": "2xx"}); v < 1 {
		t.Errorf("auth.test counted %v times, want at least 1", v)
	}
}

type pingFunc func(context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

// /readyz can be as public as the session pages: a storage that does not
// answer is said so there, and why (the database's address, user, file)
// only in the log.
func TestReadinessKeepsTheStorageErrorInTheLog(t *testing.T) {
	t.Parallel()
	detail := errors.New("failed to connect to `user=threadsmith database=prod`: db.internal:5432: dial error")
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	var draining atomic.Bool
	check := storageCheck(pingFunc(func(context.Context) error { return detail }), &draining, log)
	srv := httptest.NewServer(ops.Handler(ops.NewMetrics(ops.BuildInfo{}), []ops.Check{check}, nil))
	defer srv.Close()
	code, body := opstest.Get(t, srv.URL+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "storage: not answering") {
		t.Errorf("/readyz = %d %q, want 503 saying storage is not answering", code, body)
	}
	if strings.Contains(body, "db.internal") || strings.Contains(body, "threadsmith") {
		t.Errorf("/readyz shows the storage's error: %q", body)
	}
	if !strings.Contains(logged.String(), "db.internal") {
		t.Errorf("the log lacks the storage's error:\n%s", logged.String())
	}
	draining.Store(true)
	if _, body := opstest.Get(t, srv.URL+"/readyz"); !strings.Contains(body, "storage: shutting down") {
		t.Errorf("/readyz while draining = %q", body)
	}
}

// Slack in http mode with slack.listen equal to http.listen, as Main builds
// it from the config: one port answers a load balancer's GET probes (Slack's
// own server answered them 405) and Slack's signed POSTs, which reach the
// bot and are answered.
func TestSlackHTTPModeSharesItsPortWithTheProbes(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // Main binds it again (the one config key says where)
	cfg := e.cfg
	cfg.Slack.Mode, cfg.Slack.SigningSecret, cfg.Slack.AppToken = config.SlackHTTP, signingSecret, ""
	cfg.Slack.Listen, cfg.HTTP.Listen = addr, addr
	m := NewMain()
	m.Config = &cfg
	m.Logger = slog.New(slog.NewTextHandler(e.logOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := m.Run(e.ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	e.m = m
	t.Cleanup(func() { _ = m.Close() })
	url := "http://" + addr

	waitReady(t, e.ctx, url, http.StatusOK, "slack: ok")
	if code, body := opstest.Get(t, url+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("GET /healthz on slack.listen = %d %q, want 200 ok", code, body)
	}
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })
	e.slack.UseHTTPEvents(slackfake.HTTPEvents{URL: url + "/slack/events", SigningSecret: signingSecret})
	if v, err := e.slack.VerifyURL(e.ctx); err != nil || v.StatusCode != 200 || !strings.Contains(string(v.Body), v.Challenge) {
		t.Fatalf("url_verification on the shared port = %d %q, %v", v.StatusCode, v.Body, err)
	}
	root := e.slack.Mention(slackChan, aliceID, "over the shared port", "")
	e.waitText(slackChan, root, "answer to: over the shared port")
	fams := opstest.Scrape(t, url)
	if v, _ := metricValue(fams, "threadsmith_platform_api_requests_total", map[string]string{"platform": "slack", "method": "chat.postMessage"}); v < 1 {
		t.Errorf("chat.postMessage counted %v times, want at least 1", v)
	}
}

// The bridge's counts reach /metrics through a real run: a retried model
// call (its error by class), and a manual compaction by reason and result.
func TestMetricsCountRetriesErrorsAndCompactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) {
		c.HTTP.Listen = "127.0.0.1:0"
		c.Agent.Retry.BaseDelay = 10 * time.Millisecond
		c.Agent.Compaction.KeepRecentTokens = 1 // two short turns are enough to compact
	})
	e.llm.Push(
		llmfake.HTTPError(http.StatusServiceUnavailable, "", "overloaded"),
		llmfake.TextReply("first answer"),
		llmfake.TextReply("second answer"),
	)
	// The compaction's summaries (of the history, and of a turn it cuts).
	e.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("## Goal\nthe summary") })
	th := thread("910.1")
	e.say(th, "hello", true)
	e.waitText(th, "first answer")
	e.say(th, "again", false)
	e.waitText(th, "second answer")
	e.say(th, "!compact", false)
	e.waitText(th, "compacted")

	url := "http://" + e.m.HTTPAddr()
	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"threadsmith_llm_retries_total", nil, 1},
		{"threadsmith_llm_errors_total", map[string]string{"model": "fake-model", "class": "overloaded"}, 1},
		{"threadsmith_compactions_total", map[string]string{"reason": "manual", "result": "ok"}, 1},
		{"threadsmith_runs_total", map[string]string{"outcome": "done"}, 2},
	}
	for {
		fams := opstest.Scrape(t, url)
		var wrong []string
		for _, w := range want {
			if v, found := metricValue(fams, w.name, w.labels); !found || v != w.value {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v (present %v), want %v", w.name, w.labels, v, found, w.value))
			}
		}
		if len(wrong) == 0 {
			return
		}
		select {
		case <-e.ctx.Done():
			t.Fatalf("metrics:\n%s", strings.Join(wrong, "\n"))
		case <-time.After(50 * time.Millisecond): // scraping as Prometheus would
		}
	}
}
