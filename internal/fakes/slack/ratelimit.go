package slackfake

import (
	"net/url"
	"time"
)

// Rate is a token bucket: one call per Every, up to Burst calls at once. The zero
// Rate sets no limit.
type Rate struct {
	Every time.Duration
	Burst int
}

// RateLimitStyle is how a rate-limited call is answered.
type RateLimitStyle int

const (
	// RateLimitHTTP429 answers HTTP 429 with Retry-After, which slack-go turns into
	// *slack.RateLimitedError.
	RateLimitHTTP429 RateLimitStyle = iota
	// RateLimitOKFalse answers HTTP 200 {"ok":false,"error":"ratelimited"} (with
	// Retry-After), which slack-go returns as a slack.SlackErrorResponse.
	RateLimitOKFalse
)

// Slack's Web API tiers: each method allows about so many calls a minute per
// workspace, with bursts of a minute's worth (Tier 1 tolerates a few).
var (
	Tier1 = Rate{Every: time.Minute, Burst: 3}
	Tier2 = Rate{Every: time.Minute / 20, Burst: 20}
	Tier3 = Rate{Every: time.Minute / 50, Burst: 50}
	Tier4 = Rate{Every: time.Minute / 100, Burst: 100}
	// NonMarketplaceReplies is conversations.replies (and .history) for apps
	// created since May 2025 outside the Slack Marketplace: one call a
	// minute.
	NonMarketplaceReplies = Rate{Every: time.Minute, Burst: 1}
)

// RateLimits models Slack's limits on every method the bot calls. Each limit
// is a token bucket refilled continuously from the server's clock (WithClock).
type RateLimits struct {
	// PostMessagePerChannel limits chat.postMessage in each channel (Slack's
	// "special" tier: about one per second per channel, with short bursts).
	PostMessagePerChannel Rate
	// UpdatePerWorkspace limits chat.update across the workspace (Tier 3, 50+ a
	// minute).
	UpdatePerWorkspace Rate
	// UpdatePerMessage limits chat.update of one message (about one a second).
	UpdatePerMessage Rate
	// Methods limits every other method per workspace, by name (its tier).
	// A method not listed is not limited.
	Methods map[string]Rate
	Style   RateLimitStyle
	// Grace lets a call through that arrives up to Grace before its token would be
	// available, so a client pacing itself exactly at the limit is not punished for
	// network jitter.
	Grace time.Duration
}

// SlackRateLimits returns Slack's documented limits: chat.postMessage 1/s per channel
// with bursts of 5, chat.update 50/min per workspace (bursts of 50) and 1/s per
// message, every other method the tier Slack's method reference gives it
// (assistant.threads.setStatus, whose limit is "special" and unpublished, as
// Tier 3; chat.startStream, whose tier the reference read did not give, as
// chat.stopStream's Tier 2; chat.appendStream, also not given, as Tier 4),
// answered with HTTP 429, with 50 ms of grace.
func SlackRateLimits() RateLimits {
	return RateLimits{
		PostMessagePerChannel: Rate{Every: time.Second, Burst: 5},
		UpdatePerWorkspace:    Rate{Every: time.Minute / 50, Burst: 50},
		UpdatePerMessage:      Rate{Every: time.Second, Burst: 1},
		Methods: map[string]Rate{
			"apps.connections.open":        Tier1,
			"auth.test":                    Tier4,
			"chat.postEphemeral":           Tier4,
			"chat.delete":                  Tier3,
			"chat.getPermalink":            Tier4,
			"reactions.add":                Tier3,
			"reactions.remove":             Tier2,
			"conversations.replies":        Tier3,
			"conversations.history":        Tier3,
			"conversations.info":           Tier3,
			"users.info":                   Tier4,
			"files.getUploadURLExternal":   Tier4,
			"files.completeUploadExternal": Tier4,
			"files.info":                   Tier4,
			"assistant.threads.setStatus":  Tier3,
			"agents.sessions.setStatus":    Tier3,
			"chat.startStream":             Tier2,
			"chat.appendStream":            Tier4,
			"chat.stopStream":              Tier2,
			"views.publish":                Tier4,
		},
		Grace: 50 * time.Millisecond,
	}
}

type bucket struct {
	tokens float64
	last   time.Time
}

// level refills b up to now and returns its tokens.
func (b *bucket) level(r Rate, now time.Time) float64 {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(float64(r.Burst), b.tokens+float64(el)/float64(r.Every))
		b.last = now
	}
	return b.tokens
}

// checkRateLimitLocked takes a token from every bucket the call is subject to, or
// none of them and returns how long until it could pass.
func (s *Server) checkRateLimitLocked(method string, p url.Values, now time.Time) time.Duration {
	l := s.cfg.rateLimits
	if l == nil {
		return 0
	}
	type limit struct {
		key  string
		rate Rate
	}
	var limits []limit
	switch method {
	case "chat.postMessage":
		limits = []limit{{"post/" + p.Get("channel"), l.PostMessagePerChannel}}
	case "chat.update":
		limits = []limit{
			{"update", l.UpdatePerWorkspace},
			{"update/" + p.Get("channel") + "/" + p.Get("ts"), l.UpdatePerMessage},
		}
	default:
		limits = []limit{{"method/" + method, l.Methods[method]}}
	}
	var wait time.Duration
	var take []*bucket
	for _, lim := range limits {
		if lim.rate.Every <= 0 || lim.rate.Burst <= 0 {
			continue
		}
		b, ok := s.buckets[lim.key]
		if !ok {
			b = &bucket{tokens: float64(lim.rate.Burst), last: now}
			s.buckets[lim.key] = b
		}
		need := 1 - float64(l.Grace)/float64(lim.rate.Every)
		if have := b.level(lim.rate, now); have < need {
			wait = max(wait, time.Duration((1-have)*float64(lim.rate.Every)))
			continue
		}
		take = append(take, b)
	}
	if wait > 0 {
		return wait
	}
	for _, b := range take {
		b.tokens--
	}
	return 0
}
