package main

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"time"

	slackapi "github.com/slack-go/slack"

	slackadapter "github.com/threadsmith/threadsmith/adapters/slack"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/backoff"
)

// retryingSlack is the Slack adapter whose Run starts again, with backoff
// (never sooner than a rate limit's Retry-After), after a failure that
// waiting can fix: Slack unreachable (at start, say),
// answering 5xx or rate limiting. A refused token, a missing scope or a
// listener that cannot bind stop the bot at once. Meanwhile Connected is
// false, so /readyz says the bot is not ready. Every other method is the
// adapter's own.
type retryingSlack struct {
	*slackadapter.Adapter
	log *slog.Logger
	// sleep waits d or until ctx ends, reporting whether d passed (tests
	// inject a clock here).
	sleep func(ctx context.Context, d time.Duration) bool
}

// Run runs the adapter until ctx ends or it fails for good.
func (r retryingSlack) Run(ctx context.Context, h chat.Handler) error {
	var b backoff.Backoff
	for {
		start := time.Now()
		err := r.Adapter.Run(ctx, h)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if !transientSlackError(err) {
			return err
		}
		if time.Since(start) > backoff.Max {
			b.Reset() // it ran a while: a new outage
		}
		wait := max(b.Next(), slackRetryAfter(err))
		r.log.Warn("slack: cannot reach Slack; retrying", "err", err, "in", wait)
		if !r.sleep(ctx, wait) {
			return nil
		}
	}
}

// slackRetryAfter is how long Slack asked the bot to wait when err is its
// rate limit (0 otherwise): a retry sooner would only be limited again.
func slackRetryAfter(err error) time.Duration {
	var limited *slackapi.RateLimitedError
	var rl *chat.RateLimitError
	switch {
	case errors.As(err, &limited):
		return limited.RetryAfter
	case errors.As(err, &rl):
		return rl.RetryAfter
	}
	return 0
}

// transientSlackError says whether err is one that waiting can fix: a
// request to Slack's API that did not get through (DNS, refused, reset,
// timed out: the client's *url.Error), a 5xx from Slack, or its rate
// limit. The bot's own listener failing (slack.listen in use, or closed)
// is not: a retry would fail the same way.
func transientSlackError(err error) bool {
	var urlErr *url.Error
	var status slackapi.StatusCodeError
	var limited *slackapi.RateLimitedError
	var rl *chat.RateLimitError
	switch {
	case errors.As(err, &urlErr):
		return true
	case errors.As(err, &status):
		return status.Code >= 500
	case errors.As(err, &limited), errors.As(err, &rl):
		return true
	}
	return false
}
