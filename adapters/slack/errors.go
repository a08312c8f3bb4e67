package slack

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
)

// defaultRetryAfter is the wait of a rate limit that named none.
const defaultRetryAfter = time.Second

// apiError wraps an error of a Web API call with the method's name, turning
// Slack's two shapes of rate limit into *chat.RateLimitError so the outbox
// waits and tries again. slack-go errors carry no token, nor do these.
func apiError(method string, err error) error {
	if err == nil {
		return nil
	}
	if rl := rateLimit(err); rl != nil {
		return fmt.Errorf("slack: %s: %w", method, rl)
	}
	return fmt.Errorf("slack: %s: %w", method, err)
}

// rateLimit returns the rate limit err says, or nil.
func rateLimit(err error) *chat.RateLimitError {
	if rl, ok := errors.AsType[*slackapi.RateLimitedError](err); ok {
		d := rl.RetryAfter
		if d <= 0 {
			d = defaultRetryAfter
		}
		return &chat.RateLimitError{RetryAfter: d}
	}
	if code := slackCode(err); code == "ratelimited" || code == "rate_limited" {
		return &chat.RateLimitError{RetryAfter: defaultRetryAfter}
	}
	return nil
}

// slackCode is the error code of an ok:false answer ("channel_not_found"), or "".
func slackCode(err error) string {
	if e, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok {
		return e.Err
	}
	if e, ok := errors.AsType[*slackapi.SlackErrorResponse](err); ok {
		return e.Err
	}
	return ""
}

// retryAfterClient lets slack-go see Slack's Retry-After on an ok:false
// "ratelimited" answer sent with HTTP 200: such an answer becomes a 429, which
// slack-go reports as *slack.RateLimitedError with the header's wait (the
// platform's Retry-After always wins, docs/behaviour.md §5). Without the header the
// answer is left alone and counts as a one-second limit.
type retryAfterClient struct{ c *http.Client }

func (r retryAfterClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.c.Do(req)
	if err == nil && resp.StatusCode == http.StatusOK && resp.Header.Get("Retry-After") != "" {
		resp.StatusCode = http.StatusTooManyRequests
		resp.Status = "429 Too Many Requests"
	}
	return resp, err
}
