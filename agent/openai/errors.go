package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// classify turns whatever go-openai or the transport returned into the error
// Stream reports: ctx.Err() when the caller's context ended, else an *llm.Error
// with status, code, Retry-After and the context-overflow verdict.
func (c *Client) classify(ctx context.Context, err error, meta *responseMeta) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	e := classifyError(err)
	// An error body that could not be read still had a status.
	if e.StatusCode == 0 && meta.status >= http.StatusBadRequest {
		e.Kind, e.StatusCode = llm.ErrorHTTP, meta.status
	}
	if e.Kind == llm.ErrorHTTP {
		e.RetryAfter = retryAfter(meta.header, c.now())
	}
	return c.finish(e)
}

// finish is llm.FinishError with the client's key.
func (c *Client) finish(e *llm.Error) *llm.Error { return llm.FinishError(e, c.apiKey) }

func classifyError(err error) *llm.Error {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr):
		e := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: apiErr.HTTPStatusCode, Message: apiErr.Message}
		code, status := codeOf(apiErr.Code, apiErr.Type)
		e.Code = code
		if e.StatusCode == 0 {
			// An error event inside a stream (go-openai's own detection).
			e.Kind, e.StatusCode = llm.ErrorProvider, status
		}
		return e
	case errors.As(err, &reqErr):
		e := errorFromBody(reqErr.Body)
		e.Kind, e.StatusCode = llm.ErrorHTTP, reqErr.HTTPStatusCode
		return e
	case errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages):
		return &llm.Error{Kind: llm.ErrorMalformed, Message: "the stream sent too many empty lines"}
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		// Not the caller's context (classify checked it): a transport phase
		// timeout, or a deadline the caller built into its own HTTP client.
		return &llm.Error{Kind: llm.ErrorTimeout, Message: llm.TransportMessage(err)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &llm.Error{Kind: llm.ErrorNetwork, Message: "the connection closed in the middle of the response"}
	case llm.IsTransportError(err):
		return &llm.Error{Kind: llm.ErrorNetwork, Message: llm.TransportMessage(err)}
	default:
		// Not a transport failure: go-openai refused the request itself.
		return &llm.Error{Kind: llm.ErrorProvider, Message: err.Error()}
	}
}

// codeOf picks the error's code: OpenAI's string code, else its type. A numeric
// code (OpenRouter sends the HTTP status there) comes back as a status instead.
func codeOf(code any, typ string) (string, int) {
	status := 0
	switch v := code.(type) {
	case string:
		if v != "" {
			return v, 0
		}
	case int:
		status = v
	case float64:
		status = int(v)
	}
	if status < 400 || status > 599 {
		status = 0
	}
	return typ, status
}

// errorFromBody reads an error answer that is not OpenAI's {"error":{…}} object:
// {"error":"text"}, vLLM's {"object":"error","message":…,"type":…},
// FastAPI's {"detail":…}, Gemini's [{"error":{…}}], or plain text.
func errorFromBody(body []byte) *llm.Error {
	body = trimBOM(body)
	var obj struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    any             `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &obj) == nil {
		if len(obj.Error) > 0 && string(obj.Error) != "null" {
			return errorObject(obj.Error)
		}
		if obj.Message != "" {
			code, _ := codeOf(obj.Code, obj.Type)
			return &llm.Error{Message: obj.Message, Code: code}
		}
		if len(obj.Detail) > 0 {
			var s string
			if json.Unmarshal(obj.Detail, &s) == nil {
				return &llm.Error{Message: s}
			}
			return &llm.Error{Message: capText(string(obj.Detail))}
		}
	}
	var list []struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &list) == nil && len(list) > 0 && len(list[0].Error) > 0 {
		return errorObject(list[0].Error)
	}
	return &llm.Error{Message: capText(string(body))}
}

// errorObject reads the value of an "error" key: an object or a bare string.
func errorObject(raw json.RawMessage) *llm.Error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &llm.Error{Message: s}
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Status  string `json:"status"` // Gemini: "RESOURCE_EXHAUSTED", …
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return &llm.Error{Message: capText(string(raw))}
	}
	typ := obj.Type
	if typ == "" {
		typ = obj.Status
	}
	code, status := codeOf(obj.Code, typ)
	return &llm.Error{Message: obj.Message, Code: code, StatusCode: status}
}

// streamError turns an error object found inside a stream into a provider error.
func streamError(raw json.RawMessage) *llm.Error {
	e := errorObject(raw)
	e.Kind = llm.ErrorProvider
	return e
}

func trimBOM(b []byte) []byte {
	return []byte(strings.TrimPrefix(string(b), "\uFEFF"))
}

// capText keeps error text short enough for a chat message and a log line.
func capText(s string) string {
	s = strings.TrimSpace(s)
	const limit = 500
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// retryAfter reads the server's wait (see llm.RetryAfter).
func retryAfter(h http.Header, now time.Time) time.Duration { return llm.RetryAfter(h, now) }
