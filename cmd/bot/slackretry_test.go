package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/internal/backoff"
	"github.com/threadsmith/threadsmith/ops/opstest"
)

// Slack unreachable at start (its API drops the connection) is retried with
// a doubling backoff, as Discord's gateway is, and /readyz says not ready
// meanwhile; once Slack answers, the bot connects and is ready.
func TestSlackUnreachableAtStartIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t)
	const drops = 3
	var calls atomic.Int32
	cfg := e.cfg
	cfg.Slack.APIURL = slackAPIBefore(t, e.slack.APIURL(), func(w http.ResponseWriter) bool {
		if calls.Add(1) > drops {
			return false
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // as an unreachable or resetting network does
		}
		return true
	})
	cfg.HTTP.Listen = "127.0.0.1:0"

	m := NewMain()
	m.Config = &cfg
	m.Logger = slog.New(slog.NewTextHandler(e.logOut, nil))
	var mu sync.Mutex
	var waits []time.Duration
	var readyz []int
	m.retrySleep = func(ctx context.Context, d time.Duration) bool {
		code, _ := opstest.Get(t, "http://"+m.HTTPAddr()+"/readyz")
		mu.Lock()
		waits, readyz = append(waits, d), append(readyz, code)
		mu.Unlock()
		return ctx.Err() == nil
	}
	if err := m.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := e.slack.WaitConnections(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e.ctx, "http://"+m.HTTPAddr(), http.StatusOK, "slack: ok")

	mu.Lock()
	defer mu.Unlock()
	if len(waits) != drops {
		t.Fatalf("waited %v, want one wait per dropped call (%d)", waits, drops)
	}
	for i, d := range waits {
		// Jittered within the upper half of 1s, 2s, 4s.
		if hi := backoff.Min << i; d < hi/2 || d > hi {
			t.Errorf("wait %d = %s, want within [%s, %s]", i, d, hi/2, hi)
		}
		if readyz[i] != http.StatusServiceUnavailable {
			t.Errorf("/readyz while retrying = %d, want 503", readyz[i])
		}
	}
	select {
	case <-m.Done():
		t.Fatalf("the bot stopped: %v", m.Err())
	default:
	}
}

// slackAPIBefore returns the URL of a proxy to the Slack API at apiURL
// where answer(w) may answer a call first (reporting that it did).
func slackAPIBefore(t *testing.T, apiURL string, answer func(w http.ResponseWriter) bool) string {
	t.Helper()
	target, err := url.Parse(apiURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = target.Scheme, target.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !answer(w) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + target.Path
}

// Slack rate limiting the bot at start (429 with Retry-After) is retried no
// sooner than Slack asked, however short the backoff's own step.
func TestSlackRateLimitAtStartWaitsRetryAfter(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t)
	var limited atomic.Bool
	cfg := e.cfg
	cfg.Slack.APIURL = slackAPIBefore(t, e.slack.APIURL(), func(w http.ResponseWriter) bool {
		if limited.Swap(true) {
			return false
		}
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	})
	m := NewMain()
	m.Config = &cfg
	m.Logger = slog.New(slog.NewTextHandler(e.logOut, nil))
	var mu sync.Mutex
	var waits []time.Duration
	m.retrySleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err() == nil
	}
	if err := m.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := e.slack.WaitConnections(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 || waits[0] < 30*time.Second {
		t.Errorf("waited %v after a 429 with Retry-After: 30, want one wait of at least 30s", waits)
	}
}

// A refused token is not retried: waiting cannot fix it.
func TestSlackRefusingTheTokenIsNotRetried(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t)
	cfg := e.cfg
	cfg.Slack.BotToken = "xoxb-wrong"
	m := NewMain()
	m.Config = &cfg
	m.Logger = slog.New(slog.NewTextHandler(e.logOut, nil))
	m.retrySleep = func(context.Context, time.Duration) bool {
		t.Error("a refused token was retried")
		return false
	}
	if err := m.Run(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	select {
	case <-m.Done():
		if err := m.Err(); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
			t.Errorf("stopped with %v, want Slack's invalid_auth", err)
		}
	case <-e.ctx.Done():
		t.Fatal("the bot kept running with a refused token")
	}
}

// What waiting can fix is retried; what the operator must fix is not.
func TestTransientSlackErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("slack: auth.test: %w", &url.Error{Op: "Post", URL: "https://slack.com/api/auth.test", Err: errors.New("connection refused")}), true},
		{fmt.Errorf("slack: auth.test: %w", slackapi.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}), true},
		{fmt.Errorf("slack: auth.test: %w", &slackapi.RateLimitedError{RetryAfter: time.Second}), true},
		{fmt.Errorf("slack: auth.test: %w", slackapi.SlackErrorResponse{Err: "invalid_auth"}), false},
		{fmt.Errorf("slack: auth.test: %w", slackapi.StatusCodeError{Code: 404, Status: "404 Not Found"}), false},
		{fmt.Errorf("slack: listen: %w", &net.OpError{Op: "listen", Err: errors.New("address already in use")}), false},
		{fmt.Errorf("slack: events: %w", &net.OpError{Op: "accept", Err: net.ErrClosed}), false},
	} {
		if got := transientSlackError(c.err); got != c.want {
			t.Errorf("transientSlackError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
