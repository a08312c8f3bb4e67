package discordfake

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// bucket is a fixed-window budget: the window opens at the first request and
// lasts limit.Window; at most limit.Requests pass inside it.
type bucket struct {
	limit Limit
	hash  string
	start time.Time
	count int
}

func (b *bucket) roll(now time.Time) {
	if b.count == 0 || !now.Before(b.resetAt()) {
		b.start, b.count = now, 0
	}
}

func (b *bucket) resetAt() time.Time { return b.start.Add(b.limit.Window) }

func (b *bucket) full() bool { return b.count >= b.limit.Requests }

// rateLimitLocked checks the global and route budgets of a request. It returns
// the 429 to send and true, or a response carrying only the rate-limit
// headers for the handler's answer and false.
func (s *Server) rateLimitLocked(r *http.Request, pattern string, auth authKind, now time.Time) (response, bool) {
	rl := s.cfg.rateLimits
	if rl == nil {
		return response{}, false
	}
	route := strings.TrimPrefix(pattern, r.Method+" ")
	lim, class := routeLimit(rl, r.Method, route)
	var b *bucket
	if lim.enabled() {
		key := class + " " + majorParam(r)
		b = s.buckets[key]
		if b == nil {
			sum := sha256.Sum256([]byte(class))
			b = &bucket{limit: lim, hash: hex.EncodeToString(sum[:8])}
			s.buckets[key] = b
		}
		b.roll(now)
	}
	// Interaction endpoints are not bound by the global limit on Discord.
	global := s.global
	if auth == authNone && (strings.Contains(route, "/interactions/") || strings.Contains(route, "/webhooks/")) {
		global = nil
	}
	if global != nil {
		global.roll(now)
		if global.full() {
			s.rateLimited++
			retry := retryAfter(global.resetAt().Sub(now))
			h := http.Header{}
			h.Set("Retry-After", strconv.Itoa(int(math.Ceil(retry))))
			h.Set("X-RateLimit-Global", "true")
			h.Set("X-RateLimit-Scope", "global")
			return response{status: http.StatusTooManyRequests, header: h, body: obj{
				"message": "You are being rate limited.", "retry_after": retry, "global": true,
			}}, true
		}
	}
	if b == nil {
		if global != nil {
			global.count++
		}
		return response{}, false
	}
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit.Requests))
	h.Set("X-RateLimit-Bucket", b.hash)
	resetAfter := retryAfter(b.resetAt().Sub(now))
	h.Set("X-RateLimit-Reset", fmt.Sprintf("%.3f", float64(b.resetAt().UnixMilli())/1000))
	h.Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", resetAfter))
	if b.full() {
		s.rateLimited++
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Scope", "user")
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(resetAfter))))
		return response{status: http.StatusTooManyRequests, header: h, body: obj{
			"message": "You are being rate limited.", "retry_after": resetAfter, "global": false,
		}}, true
	}
	if global != nil {
		global.count++
	}
	b.count++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(b.limit.Requests-b.count))
	return response{header: h}, false
}

// routeLimit returns the budget of a route and the class its buckets are
// named by (routes of one class share a bucket hash, as Discord's do).
func routeLimit(rl *RateLimits, method, route string) (Limit, string) {
	route = strings.TrimPrefix(route, api)
	class := method + " " + route
	switch {
	case strings.Contains(route, "/reactions/"):
		if method == http.MethodGet {
			return rl.MessageRead, class
		}
		return rl.Reactions, "reactions"
	case route == "/channels/{channel}/messages" && method == http.MethodPost:
		return rl.MessageCreate, class
	case route == "/channels/{channel}/messages/{message}" && method == http.MethodPatch:
		return rl.MessageEdit, class
	case route == "/channels/{channel}/messages/{message}" && method == http.MethodDelete:
		return rl.MessageDelete, class
	case route == "/channels/{channel}/messages/{message}/threads":
		return rl.ThreadCreate, class
	case route == "/channels/{channel}/typing":
		return rl.Typing, class
	case strings.HasPrefix(route, "/channels/") && method == http.MethodGet:
		return rl.MessageRead, class
	case route == "/users/@me/channels":
		return rl.DM, class
	case strings.HasPrefix(route, "/guilds/"):
		return rl.Members, class
	case strings.HasPrefix(route, "/interactions/"):
		return rl.Interaction, class
	case strings.HasPrefix(route, "/webhooks/"):
		return rl.Webhook, class
	case strings.Contains(route, "/commands"):
		return rl.Commands, class
	}
	return rl.Other, class
}

// retryAfter renders d in seconds, rounded up to the millisecond so that
// waiting that long is always enough.
func retryAfter(d time.Duration) float64 {
	if d < 0 {
		d = 0
	}
	return math.Ceil(float64(d)/float64(time.Millisecond)) / 1000
}

// majorParam is the part of a route that splits a bucket, as on Discord.
func majorParam(r *http.Request) string {
	if v := r.PathValue("channel"); v != "" {
		return "channel:" + v
	}
	if v := r.PathValue("guild"); v != "" {
		return "guild:" + v
	}
	if v := r.PathValue("interaction"); v != "" {
		return "interaction:" + v + "/" + r.PathValue("token")
	}
	if v := r.PathValue("token"); v != "" {
		return "webhook:" + r.PathValue("app") + "/" + v
	}
	return ""
}
