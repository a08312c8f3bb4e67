// Package openai is threadsmith's llm.Model for OpenAI-compatible
// chat-completions endpoints (OpenAI, OpenRouter, Groq, vLLM, llama.cpp, Ollama,
// LM Studio, …), built on github.com/sashabaranov/go-openai.
//
// Stream sends one streaming request (with stream_options.include_usage) and
// assembles the assistant message from its deltas: reasoning into one thinking
// block, content into one text block, tool calls from their argument fragments by
// index. It calls the StreamFunc once per fragment, synchronously, on the
// caller's goroutine. It never retries: the session does, where the thread can see
// it.
//
// Every failure other than the caller's context ending is an *llm.Error:
//   - ErrorHTTP: an error status, with the provider's code (error.code, else
//     error.type), Retry-After / retry-after-ms, and whether it is a context overflow;
//   - ErrorProvider: an error object inside a 200 stream, or a finish reason
//     that means failure (content_filter);
//   - ErrorNetwork: refused, reset, or closed in the middle of the body;
//   - ErrorTimeout: a transport timeout (dial, TLS, response headers);
//   - ErrorTruncated: the body ended cleanly but without a finish reason;
//   - ErrorMalformed: a data event that is not JSON.
//
// When the caller's context ends, Stream returns the partial message (stop
// reason aborted) and ctx.Err(). The API key never appears in an error: text a
// server echoes back is redacted.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the OpenAI-compatible base, including /v1
	// (e.g. "https://api.openai.com/v1", "http://127.0.0.1:8080/v1").
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// HTTPClient is optional. Its Transport is wrapped, never modified, and its
	// Timeout is ignored: a whole-request timeout would cut long streams, and
	// every call already has a context.
	HTTPClient *http.Client
	// Provider names the service in Message.Provider; default "openai".
	Provider string
}

// Client streams chat completions. It is safe for concurrent use; create one per
// endpoint and reuse it, so connections are pooled.
type Client struct {
	api      *goopenai.Client
	provider string
	apiKey   string // kept only to redact it
	now      func() time.Time
}

var _ llm.Model = (*Client)(nil)

// emptyMessagesLimit is how many lines without data go-openai accepts between
// two events before giving up. Providers send keep-alive comments and blank
// lines while a model thinks; the caller's context, not a line count, should end
// a stream that goes quiet.
const emptyMessagesLimit = 1 << 30

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: BaseURL is required (e.g. https://api.openai.com/v1)")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: BaseURL %q must be an http or https URL", cfg.BaseURL)
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	base := hc.Transport
	if base == nil {
		base = defaultTransport()
	}
	// go-openai appends each endpoint's path to BaseURL as a string, which
	// would put it inside a query (a proxy's ?key=): the query is taken off
	// the base and added to every request by the transport.
	query := u.Query()
	u.RawQuery = ""
	hc.Transport = &transport{base: base, query: query}
	hc.Timeout = 0

	gc := goopenai.DefaultConfig(cfg.APIKey)
	gc.BaseURL = u.String()
	gc.HTTPClient = &hc
	gc.EmptyMessagesLimit = emptyMessagesLimit

	provider := cfg.Provider
	if provider == "" {
		provider = "openai"
	}
	return &Client{
		api:      goopenai.NewClientWithConfig(gc),
		provider: provider,
		apiKey:   cfg.APIKey,
		now:      time.Now,
	}, nil
}

// Stream implements llm.Model.
func (c *Client) Stream(ctx context.Context, req llm.Request, fn llm.StreamFunc) (llm.Message, error) {
	a := newAssembler(c.provider, req.Model, c.now().UnixMilli(), fn)
	meta := new(responseMeta)
	stream, err := c.api.CreateChatCompletionStream(withMeta(ctx, meta), buildRequest(req))
	if err != nil {
		return a.failed(c.classify(ctx, err, meta))
	}
	defer stream.Close()

	// One decoder for the whole stream: it keeps its scanner and buffers
	// between events, where json.Unmarshal would allocate them per delta.
	var line lineReader
	dec := json.NewDecoder(&line)
	var ch streamChunk
	for {
		raw, err := stream.RecvRaw()
		if err == io.EOF {
			break
		}
		if err != nil {
			return a.failed(c.classify(ctx, err, meta))
		}
		if len(raw) == 0 {
			continue // "data:" with nothing: a heartbeat
		}
		line.set(raw)
		ch = streamChunk{Model: onceString{dst: &a.model}}
		if err := dec.Decode(&ch); err != nil {
			return a.failed(c.finish(&llm.Error{Kind: llm.ErrorMalformed, Message: "malformed stream event: " + err.Error()}))
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return a.failed(c.finish(streamError(ch.Error)))
		}
		a.add(&ch)
	}
	if a.finish == "" {
		return a.failed(&llm.Error{Kind: llm.ErrorTruncated, Message: "the stream ended without a finish reason"})
	}
	reason, failure := a.stopReason()
	if failure != nil {
		return a.failed(c.finish(failure))
	}
	m := a.message()
	m.StopReason = reason
	return m, nil
}

// lineReader feeds one event at a time to the stream's json.Decoder. A line
// holding an incomplete value ends in io.EOF, which the decoder reports as an
// error: such a line is malformed.
type lineReader struct{ b []byte }

func (l *lineReader) set(b []byte) { l.b = b }

func (l *lineReader) Read(p []byte) (int, error) {
	if len(l.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.b)
	l.b = l.b[n:]
	return n, nil
}

// failed returns the partial message marked as failed, and err.
func (a *assembler) failed(err error) (llm.Message, error) {
	return llm.Failed(a.message(), err)
}

// ListModels returns the model ids the endpoint offers (GET /models). Its errors
// are classified like Stream's.
func (c *Client) ListModels(ctx context.Context) ([]string, error) {
	meta := new(responseMeta)
	list, err := c.api.ListModels(withMeta(ctx, meta))
	if err != nil {
		return nil, c.classify(ctx, err, meta)
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	return ids, nil
}
