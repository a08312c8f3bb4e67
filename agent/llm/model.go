package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// Request is one model call. Messages hold only user, assistant and toolResult
// messages: callers convert custom, summary and bash messages to user content first.
type Request struct {
	Model        string
	SystemPrompt string
	Messages     []Message
	Tools        []ToolSpec
	MaxTokens    int
	// Reasoning is how hard a reasoning model should think: "" (the provider's
	// default), "off", "minimal", "low", "medium" or "high" (pi's thinking
	// levels). OpenAI gets it as reasoning_effort, Anthropic as a thinking budget.
	Reasoning string
}

// Reasoning levels, as pi names its thinking levels.
const (
	ReasoningOff     = "off"
	ReasoningMinimal = "minimal"
	ReasoningLow     = "low"
	ReasoningMedium  = "medium"
	ReasoningHigh    = "high"
)

// ValidReasoning reports whether s is a reasoning level ("" included).
func ValidReasoning(s string) bool {
	switch s {
	case "", ReasoningOff, ReasoningMinimal, ReasoningLow, ReasoningMedium, ReasoningHigh:
		return true
	}
	return false
}

// DeltaKind says what a Delta adds to the partial message.
type DeltaKind uint8

const (
	DeltaText     DeltaKind = iota + 1 // Text is appended to the text block at Index
	DeltaThinking                      // Text is appended to the thinking block at Index
	DeltaToolCall                      // Text is a fragment of the arguments of the tool call at Index
)

// Delta is one streamed fragment of an assistant message.
type Delta struct {
	Kind  DeltaKind
	Index int    // index of the content block in the partial message
	Text  string // the fragment
	// ToolCallID and ToolName are set on DeltaToolCall.
	ToolCallID string
	ToolName   string
}

// StreamFunc receives each delta together with the partial message assembled so
// far. The partial belongs to the model client and is only valid during the call:
// copy it (Message.Clone) to keep it. Strings inside it are immutable and may be kept.
type StreamFunc func(d Delta, partial *Message)

// Model streams one assistant reply.
//
// Stream blocks until the reply is complete, the context is cancelled, or the call
// fails. It returns the final assistant message (StopReason stop, length or toolUse,
// with Usage when the provider reports it). On failure it returns the partial message
// received so far and a non-nil error: a *Error for provider, transport and stream
// failures, or ctx.Err() when the context ended. Implementations never retry: retries
// belong to the session, where the thread can see them.
type Model interface {
	Stream(ctx context.Context, req Request, fn StreamFunc) (Message, error)
}

// ErrorKind classifies a failed model call.
type ErrorKind string

const (
	ErrorHTTP      ErrorKind = "http"      // the endpoint answered with an HTTP error status
	ErrorProvider  ErrorKind = "provider"  // an error object inside an otherwise healthy stream
	ErrorNetwork   ErrorKind = "network"   // connection refused, reset, closed, DNS
	ErrorTimeout   ErrorKind = "timeout"   // a deadline passed while waiting for the endpoint
	ErrorTruncated ErrorKind = "truncated" // the stream ended without a finish reason
	ErrorMalformed ErrorKind = "malformed" // the response could not be decoded
)

// Error is a failed model call, with the facts retry and compaction decide on.
type Error struct {
	Kind       ErrorKind `json:"kind"`
	StatusCode int       `json:"status,omitempty"` // HTTP status, 0 when there was none
	// Code is the provider's error code or type, e.g. "rate_limit_exceeded",
	// "insufficient_quota", "context_length_exceeded", "overloaded_error".
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	// RetryAfter is the server's Retry-After / retry-after-ms, 0 when absent.
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
	// ContextOverflow is set when the provider said the prompt is too long for the window.
	ContextOverflow bool `json:"contextOverflow,omitempty"`
}

func (e *Error) Error() string {
	switch {
	case e.StatusCode != 0 && e.Code != "":
		return fmt.Sprintf("%d %s: %s", e.StatusCode, e.Code, e.Message)
	case e.StatusCode != 0:
		return fmt.Sprintf("%d: %s", e.StatusCode, e.Message)
	case e.Code != "":
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	default:
		return fmt.Sprintf("%s error: %s", e.Kind, e.Message)
	}
}
