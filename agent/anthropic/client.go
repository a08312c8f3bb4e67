// Package anthropic is threadsmith's llm.Model for Anthropic's Messages API,
// built on the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// Stream sends one streaming request and assembles the assistant message from
// its events: text, thinking (with its signature, so it can be sent back) and
// tool-use blocks in the order the model opened them, tool arguments from their
// input_json_delta fragments, kept as the model wrote them. It calls the
// StreamFunc once per fragment, synchronously, on the caller's goroutine.
//
// Requests carry three cache_control breakpoints, where pi puts them: the last
// tool, the system prompt, and the last block of the last message. Tools,
// system prompt and history are a prefix that only grows, so every request reads
// the previous one from Anthropic's prompt cache and writes only its new tail.
//
// The SDK's own retries are off: the session retries, where the thread can see
// it. Every failure other than the caller's context ending is an *llm.Error: an
// error status (with Anthropic's error type as Code, Retry-After, and context
// overflow for "prompt is too long"), an error event inside the stream
// (overloaded_error mid-reply is retryable), a transport failure, or a stream
// that ended before message_stop.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// Config configures a Client.
type Config struct {
	// BaseURL is the API base without /v1 (default DefaultBaseURL).
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// HTTPClient is optional; its Timeout is ignored (every call has a context,
	// and a whole-request timeout would cut long streams).
	HTTPClient *http.Client
	// Provider names the service in Message.Provider; default "anthropic".
	Provider string
}

// Client streams Messages API replies. It is safe for concurrent use; create
// one per endpoint and key, and reuse it.
type Client struct {
	api      anthropic.Client
	provider string
	apiKey   string // kept only to redact it
	now      func() time.Time
}

var _ llm.Model = (*Client)(nil)

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: BaseURL %q must be an http or https URL", base)
	}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.Timeout = 0
	provider := cfg.Provider
	if provider == "" {
		provider = "anthropic"
	}
	return &Client{
		api: anthropic.NewClient(
			// Nothing from the bot's environment (ANTHROPIC_API_KEY, profiles):
			// the config says which key each model uses.
			option.WithoutEnvironmentDefaults(),
			option.WithBaseURL(base),
			option.WithAPIKey(cfg.APIKey),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0),
		),
		provider: provider,
		apiKey:   cfg.APIKey,
		now:      time.Now,
	}, nil
}

// Stream implements llm.Model.
func (c *Client) Stream(ctx context.Context, req llm.Request, fn llm.StreamFunc) (llm.Message, error) {
	a := newAssembler(c.provider, req.Model, c.now().UnixMilli(), fn)
	stream := c.api.Messages.NewStreaming(ctx, buildParams(req, c.provider))
	defer stream.Close()
	for stream.Next() {
		if err := a.add(stream.Current()); err != nil {
			return a.failed(c.finish(err))
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return a.failed(ctx.Err())
		}
		return a.failed(c.classify(err))
	}
	if ctx.Err() != nil {
		return a.failed(ctx.Err())
	}
	if !a.stopped {
		return a.failed(&llm.Error{Kind: llm.ErrorTruncated, Message: "the stream ended before message_stop"})
	}
	reason, failure := a.stopReason()
	if failure != nil {
		return a.failed(c.finish(failure))
	}
	m := a.message()
	m.StopReason = reason
	return m, nil
}

// classify turns an SDK or transport error into an *llm.Error.
func (c *Client) classify(err error) *llm.Error {
	var apiErr *anthropic.Error
	var netErr net.Error
	var e *llm.Error
	switch {
	case errors.As(err, &apiErr):
		e = &llm.Error{Kind: llm.ErrorHTTP, StatusCode: apiErr.StatusCode, Code: string(apiErr.Type()), Message: apiErr.Message}
		if apiErr.Response != nil {
			e.RetryAfter = llm.RetryAfter(apiErr.Response.Header, c.now())
		}
		if e.StatusCode == http.StatusOK {
			// An error event inside a stream that began with 200.
			e.Kind, e.StatusCode, e.RetryAfter = llm.ErrorProvider, 0, 0
		}
		if e.Message == "" && e.Code == "" {
			e.Message = strings.TrimSpace(apiErr.RawJSON())
		}
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		e = &llm.Error{Kind: llm.ErrorTimeout, Message: llm.TransportMessage(err)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		e = &llm.Error{Kind: llm.ErrorNetwork, Message: "the connection closed in the middle of the response"}
	case llm.IsTransportError(err):
		e = &llm.Error{Kind: llm.ErrorNetwork, Message: llm.TransportMessage(err)}
	case strings.Contains(err.Error(), "received error while streaming"):
		// An error event the SDK could not decode.
		e = &llm.Error{Kind: llm.ErrorProvider, Message: err.Error()}
	default:
		e = &llm.Error{Kind: llm.ErrorMalformed, Message: err.Error()}
	}
	return c.finish(e)
}

// finish is llm.FinishError with Anthropic's other overflow: request_too_large
// (413) for a body past its size limit ("prompt is too long: N tokens > M
// maximum", a 400, is llm.IsContextOverflow's).
func (c *Client) finish(e *llm.Error) *llm.Error {
	e = llm.FinishError(e, c.apiKey)
	e.ContextOverflow = e.ContextOverflow || e.Code == "request_too_large"
	return e
}

// ListModels returns the model ids the key may use (GET /v1/models, every
// page). Its errors are classified like Stream's.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	pager := c.api.Models.ListAutoPaging(ctx, anthropic.ModelListParams{Limit: param.NewOpt(int64(1000))})
	var ids []string
	for pager.Next() {
		ids = append(ids, pager.Current().ID)
	}
	if err := pager.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.classify(err)
	}
	return ids, nil
}
