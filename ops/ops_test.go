package ops

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/ops/opstest"
)

// serve runs h on a real listener on 127.0.0.1 until the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// value is the value of the series of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, want)
	return 0
}

type fakeModel struct {
	msg llm.Message
	err error
}

func (f fakeModel) Stream(context.Context, llm.Request, llm.StreamFunc) (llm.Message, error) {
	return f.msg, f.err
}

func TestMetricsAreScrapedAndParse(t *testing.T) {
	m := NewMetrics(BuildInfo{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26"})
	m.PendingInput(func(context.Context) (map[string]int, error) {
		return map[string]int{"received": 2, "queued": 1}, nil
	})
	m.RunFinished("done", 3*time.Second)
	m.RunFinished("stopped", time.Second)
	m.Pushed("ok")
	m.Pushed("rejected")
	m.Retried()
	m.Compacted("threshold", "ok")
	m.ThreadLoaded()
	m.ThreadLoaded()
	m.ThreadUnloaded(true)
	m.StartFailed()
	m.Lease("acquired")
	m.Lease("acquired")
	m.Lease("lost")

	ok := InstrumentModel(fakeModel{msg: llm.Message{Usage: &llm.Usage{Input: 100, Output: 20, CacheRead: 50}}}, m)
	limited := InstrumentModel(fakeModel{err: &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Message: "slow down"}}, m)
	for range 2 {
		if _, err := ok.Stream(context.Background(), llm.Request{Model: "gpt"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := limited.Stream(context.Background(), llm.Request{Model: "gpt"}, nil); err == nil {
		t.Fatal("the error did not pass through")
	}

	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "chat.update") {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer api.Close()
	client := &http.Client{Transport: m.Transport("slack", nil)}
	for _, method := range []string{"chat.postMessage", "chat.update"} {
		resp, err := client.Post(api.URL+"/api/"+method, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	fams := opstest.Scrape(t, serve(t, Handler(m, nil, nil)))
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"threadsmith_build_info", map[string]string{"version": "v1.2.3", "revision": "abc"}, 1},
		{"threadsmith_runs_total", map[string]string{"outcome": "done"}, 1},
		{"threadsmith_runs_total", map[string]string{"outcome": "stopped"}, 1},
		{"threadsmith_runs_total", map[string]string{"outcome": "error"}, 0},
		{"threadsmith_run_duration_seconds", nil, 2},
		{"threadsmith_input_pending", map[string]string{"state": "received"}, 2},
		{"threadsmith_input_pending", map[string]string{"state": "queued"}, 1},
		{"threadsmith_llm_requests_total", map[string]string{"model": "gpt"}, 3},
		{"threadsmith_llm_tokens_total", map[string]string{"model": "gpt", "kind": "input"}, 200},
		{"threadsmith_llm_tokens_total", map[string]string{"model": "gpt", "kind": "output"}, 40},
		{"threadsmith_llm_tokens_total", map[string]string{"model": "gpt", "kind": "cache_read"}, 100},
		{"threadsmith_llm_errors_total", map[string]string{"model": "gpt", "class": "rate_limit"}, 1},
		{"threadsmith_llm_retries_total", nil, 1},
		{"threadsmith_compactions_total", map[string]string{"reason": "threshold", "result": "ok"}, 1},
		{"threadsmith_platform_api_requests_total", map[string]string{"platform": "slack", "method": "chat.postMessage", "code": "2xx"}, 1},
		{"threadsmith_platform_api_requests_total", map[string]string{"platform": "slack", "method": "chat.update", "code": "4xx"}, 1},
		{"threadsmith_platform_api_rate_limited_total", map[string]string{"platform": "slack", "method": "chat.update"}, 1},
		{"threadsmith_pushes_total", map[string]string{"result": "ok"}, 1},
		{"threadsmith_pushes_total", map[string]string{"result": "rejected"}, 1},
		{"threadsmith_pushes_total", map[string]string{"result": "error"}, 0},
		{"threadsmith_sandbox_start_failures_total", nil, 1},
		{"threadsmith_threads_live", nil, 1},
		{"threadsmith_threads_evicted_total", nil, 1},
		{"threadsmith_thread_leases_total", map[string]string{"event": "acquired"}, 2},
		{"threadsmith_thread_leases_total", map[string]string{"event": "lost"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if fams["go_goroutines"] == nil || fams["process_open_fds"] == nil {
		t.Error("the Go runtime's and the process's metrics are missing")
	}
}

func TestAFailedQueueReadLeavesTheRestOfTheScrape(t *testing.T) {
	m := NewMetrics(BuildInfo{})
	m.PendingInput(func(context.Context) (map[string]int, error) { return nil, errors.New("database is closed") })
	m.Pushed("ok")
	fams := opstest.Scrape(t, serve(t, Handler(m, nil, nil)))
	if got := value(t, fams, "threadsmith_pushes_total", map[string]string{"result": "ok"}); got != 1 {
		t.Fatalf("pushes ok = %v, want 1", got)
	}
	if fams["threadsmith_input_pending"] != nil {
		t.Fatal("a queue depth was reported although reading it failed")
	}
}

func TestReadinessFollowsItsChecks(t *testing.T) {
	var connected atomic.Bool
	checks := []Check{
		{Name: "storage", Ready: func(context.Context) error { return nil }},
		{Name: "slack", Ready: func(context.Context) error {
			if !connected.Load() {
				return errors.New("not connected")
			}
			return nil
		}},
	}
	base := serve(t, Handler(NewMetrics(BuildInfo{}), checks, nil))
	if code, body := opstest.Get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("GET /healthz = %d %q, want 200 ok", code, body)
	}
	if code, body := opstest.Get(t, base+"/readyz"); code != http.StatusServiceUnavailable || body != "storage: ok\nslack: not connected\n" {
		t.Fatalf("GET /readyz before connecting = %d %q, want 503 naming slack", code, body)
	}
	connected.Store(true)
	if code, body := opstest.Get(t, base+"/readyz"); code != http.StatusOK || body != "storage: ok\nslack: ok\n" {
		t.Fatalf("GET /readyz once connected = %d %q, want 200", code, body)
	}
	if code, _ := opstest.Get(t, base+"/nothing"); code != http.StatusNotFound {
		t.Fatalf("GET /nothing = %d, want 404", code)
	}
}

func TestAHangingCheckFailsReadinessInTime(t *testing.T) {
	checks := []Check{{Name: "storage", Ready: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}}}
	base := serve(t, Handler(NewMetrics(BuildInfo{}), checks, nil))
	code, body := opstest.Get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "storage: context deadline exceeded") {
		t.Fatalf("GET /readyz = %d %q, want 503 after the check's deadline", code, body)
	}
}

// The Slack Events API behind the operator's endpoints on one port: POSTs
// reach it unchanged, the probes do not.
func TestPipeSharesOnePortWithAnotherServer(t *testing.T) {
	pipe := NewPipe()
	var got atomic.Value
	events := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(r.Method + " " + r.URL.Path + " " + r.Header.Get("X-Slack-Signature") + " " + string(b))
		w.WriteHeader(http.StatusAccepted)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, pipe, events, slog.New(slog.DiscardHandler)) }()
	defer func() {
		cancel()
		<-done
	}()
	base := serve(t, Handler(NewMetrics(BuildInfo{}), nil, pipe.Proxy()))

	req, _ := http.NewRequest(http.MethodPost, base+"/slack/events", strings.NewReader(`{"type":"event_callback"}`))
	req.Header.Set("X-Slack-Signature", "v0=abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /slack/events = %d, want the events server's 202", resp.StatusCode)
	}
	if g, want := got.Load(), `POST /slack/events v0=abc {"type":"event_callback"}`; g != want {
		t.Fatalf("the events server got %q, want %q", g, want)
	}
	if code, body := opstest.Get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("GET /healthz on the shared port = %d %q", code, body)
	}
}

func TestPlatformRoutesHaveNoIDs(t *testing.T) {
	for _, c := range []struct{ platform, method, url, want string }{
		{"slack", "POST", "https://slack.com/api/chat.postMessage", "chat.postMessage"},
		{"slack", "POST", "http://127.0.0.1:9/proxy/api/reactions.add", "reactions.add"},
		{"slack", "GET", "https://files.slack.com/files-pri/T1-F1/x.png", "files"},
		{"discord", "PATCH", "https://discord.com/api/v10/channels/1234/messages/5678", "PATCH channels/{id}/messages/{id}"},
		{"discord", "PUT", "https://discord.com/api/v9/channels/1/messages/2/reactions/%F0%9F%91%80/@me", "PUT channels/{id}/messages/{id}/reactions/{emoji}/@me"},
		{"discord", "POST", "https://discord.com/api/v10/interactions/99/aW50ZXJhY3Rpb24/callback", "POST interactions/{id}/{token}/callback"},
		{"discord", "PATCH", "https://discord.com/api/v10/webhooks/42/dG9rZW4/messages/@original", "PATCH webhooks/{id}/{token}/messages/@original"},
		{"discord", "GET", "https://cdn.discordapp.com/attachments/1/2/a.txt", "cdn"},
	} {
		req := httptest.NewRequest(c.method, c.url, nil)
		route := slackRoute
		if c.platform == "discord" {
			route = discordRoute
		}
		if got := route(req); got != c.want {
			t.Errorf("%s %s → %q, want %q", c.method, c.url, got, c.want)
		}
	}
}

func TestErrorClasses(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{context.Canceled, "cancelled"},
		{&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 400, ContextOverflow: true}, "context_overflow"},
		{&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "insufficient_quota"}, "quota"},
		{&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429}, "rate_limit"},
		{&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 401}, "auth"},
		{&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 529}, "overloaded"},
		{&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 502}, "server"},
		{&llm.Error{Kind: llm.ErrorHTTP, StatusCode: 404}, "bad_request"},
		{&llm.Error{Kind: llm.ErrorNetwork}, "network"},
		{&llm.Error{Kind: llm.ErrorTruncated}, "truncated"},
		{errors.New("boom"), "other"},
	} {
		if got := errorClass(c.err); got != c.want {
			t.Errorf("errorClass(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
