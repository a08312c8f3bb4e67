package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// discordHost is the host of discordgo's fixed endpoints.
const discordHost = "discord.com"

// transport redirects discordgo's requests for https://discord.com/ to
// discord.api_url, binds gateway lookups to the Open in progress (so that Run
// can abandon a hanging one) and tells rate-limit notes whether a 429 was
// global.
type transport struct {
	base       *url.URL // nil: no rewriting
	next       http.RoundTripper
	gatewayCtx func() context.Context
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.base != nil && r.URL.Host == discordHost && r.URL.Scheme == "https" {
		r = rewrite(r, t.base)
	}
	var resp *http.Response
	var err error
	if ctx := t.gatewayCtx(); ctx != nil && isGatewayLookup(r) {
		resp, err = roundTripBound(t.next, r, ctx)
	} else {
		resp, err = t.next.RoundTrip(r)
	}
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		if n, ok := r.Context().Value(rateNoteKey{}).(*rateNote); ok {
			n.global = resp.Header.Get("X-RateLimit-Global") != "" || strings.EqualFold(resp.Header.Get("X-RateLimit-Scope"), "global")
			if s, perr := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); perr == nil && s > 0 {
				n.retryAfter = time.Duration(s * float64(time.Second))
			}
		}
	}
	return resp, err
}

// rewrite returns r aimed at base instead of https://discord.com/.
func rewrite(r *http.Request, base *url.URL) *http.Request {
	r = r.Clone(r.Context())
	u := *r.URL
	u.Scheme, u.Host = base.Scheme, base.Host
	prefix := strings.TrimSuffix(base.Path, "/") + "/"
	u.Path = prefix + strings.TrimPrefix(r.URL.Path, "/")
	if r.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(base.EscapedPath(), "/") + "/" + strings.TrimPrefix(r.URL.RawPath, "/")
	}
	r.URL = &u
	r.Host = ""
	return r
}

func isGatewayLookup(r *http.Request) bool {
	return r.Method == http.MethodGet &&
		(strings.HasSuffix(r.URL.Path, "/v9/gateway") || strings.HasSuffix(r.URL.Path, "/v9/gateway/bot"))
}

// roundTripBound sends r so that it is also cancelled when bound ends, until
// its response body is closed.
func roundTripBound(next http.RoundTripper, r *http.Request, bound context.Context) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(bound, cancel)
	resp, err := next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &boundBody{ReadCloser: resp.Body, release: func() { stop(); cancel() }}
	return resp, nil
}

type boundBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *boundBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

// gatewayCtx is the context of the Open in progress, or nil.
func (a *Adapter) gatewayCtx() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.openCtx
}

// dialGateway dials the gateway's TCP connection for gorilla/websocket and
// ties it to the Open in progress: if that Open's context ends before the
// handshake, HELLO and READY are through, the connection is closed, which
// makes discordgo's Open return.
func (a *Adapter) dialGateway(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if open := a.gatewayCtx(); open != nil {
		stop := context.AfterFunc(open, func() { conn.Close() })
		a.mu.Lock()
		a.dialStops = append(a.dialStops, stop)
		a.mu.Unlock()
	}
	return conn, nil
}

// rateNote is filled by the transport when a request answered 429: whether
// the limit was global, which discordgo's RateLimitError does not say.
type rateNote struct {
	global     bool
	retryAfter time.Duration
}

type rateNoteKey struct{}

// restOptions are the request options of a call: its context (carrying a rate
// note) and, for the adapter's own bookkeeping, discordgo's retry on 429.
func restOptions(ctx context.Context, note *rateNote, retry bool) []discordgo.RequestOption {
	if note != nil {
		ctx = context.WithValue(ctx, rateNoteKey{}, note)
	}
	return []discordgo.RequestOption{discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(retry)}
}

// chatCall runs one chat-facing REST call: it refuses early with a
// *chat.RateLimitError when discordgo would sleep on bucket (the route's
// rate-limit bucket as discordgo names it), never lets discordgo retry a 429,
// and maps errors.
func (a *Adapter) chatCall(ctx context.Context, op, bucket string, call func(opts ...discordgo.RequestOption) error) error {
	if bucket != "" {
		if err := a.preflight(bucket); err != nil {
			return err
		}
	}
	note := &rateNote{}
	return restError(op, call(restOptions(ctx, note, false)...), note)
}

// ownCall runs one of the adapter's bookkeeping REST calls: discordgo waits
// out rate limits and retries.
func ownCall(ctx context.Context) []discordgo.RequestOption {
	return restOptions(ctx, nil, true)
}

// preflight returns a *chat.RateLimitError if discordgo's rate limiter would
// make a request on bucket wait (its bucket is empty until its reset, or a
// global limit is on). A bucket with a request in flight is not inspected.
func (a *Adapter) preflight(bucket string) error {
	rl := a.s.Ratelimiter
	b := rl.GetBucket(bucket)
	if !b.TryLock() {
		return nil
	}
	wait := rl.GetWaitTime(b, 1)
	b.Unlock()
	if wait > 0 {
		return &chat.RateLimitError{RetryAfter: wait}
	}
	return nil
}

// restError maps a discordgo error: 429s become *chat.RateLimitError, URLs
// (which hold interaction tokens) are dropped.
func restError(op string, err error, note *rateNote) error {
	if err == nil {
		return nil
	}
	var rle *discordgo.RateLimitError
	if errors.As(err, &rle) {
		out := &chat.RateLimitError{}
		if rle.RateLimit != nil && rle.TooManyRequests != nil {
			out.RetryAfter = rle.RetryAfter
		}
		if note != nil {
			out.Global = note.global
			if out.RetryAfter <= 0 {
				out.RetryAfter = note.retryAfter
			}
		}
		if out.RetryAfter <= 0 {
			out.RetryAfter = time.Second
		}
		return out
	}
	return fmt.Errorf("discord: %s: %w", op, unwrapURLError(err))
}

// unwrapURLError drops the URL of a *url.Error.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
