// Package llm is the conversation vocabulary shared by the agent loop, compaction,
// storage and model clients: messages and their content blocks, token usage, stop
// reasons, tool specifications, the streaming Model interface and the typed provider
// Error; and Router, the Model that serves each configured model name from its
// own provider, with prices and the built-in price table.
//
// The JSON shape of Message follows pi's session files (role, content blocks,
// toolCallId, usage{input, output, cacheRead, cacheWrite, totalTokens}, stopReason,
// timestamp in Unix milliseconds), so that stored transcripts stay readable by people
// who know pi and conversion of pi sessions is mostly a decode.
package llm

import (
	"encoding/json"
	"strings"
)

// Role says who produced a message and how it reaches the model.
type Role string

const (
	// RoleUser is a person's input (text and images).
	RoleUser Role = "user"
	// RoleAssistant is a model reply: text, thinking and tool-call blocks.
	RoleAssistant Role = "assistant"
	// RoleToolResult is the outcome of one tool call, sent back to the model.
	RoleToolResult Role = "toolResult"
	// RoleCustom is a message added by an extension hook (for example thread context).
	// It reaches the model as user content.
	RoleCustom Role = "custom"
	// RoleCompactionSummary is the summary that stands in for compacted history.
	// It reaches the model as user content.
	RoleCompactionSummary Role = "compactionSummary"
	// RoleBashExecution is a command a person ran outside the model (pi's "!cmd").
	// threadsmith never creates it; it exists so pi transcripts load and count.
	RoleBashExecution Role = "bashExecution"
)

// StopReason says why an assistant message ended.
type StopReason string

const (
	StopReasonStop    StopReason = "stop"    // the model finished its answer
	StopReasonLength  StopReason = "length"  // max output tokens reached
	StopReasonToolUse StopReason = "toolUse" // the model called tools
	StopReasonError   StopReason = "error"   // the provider or transport failed
	StopReasonAborted StopReason = "aborted" // the run was cancelled
)

// ContentType names a content block kind.
type ContentType string

const (
	ContentText     ContentType = "text"
	ContentThinking ContentType = "thinking"
	ContentImage    ContentType = "image"
	ContentToolCall ContentType = "toolCall"
)

// Content is one block of a message. Which fields are set depends on Type:
// text → Text; thinking → Thinking and, from Anthropic, Signature (or, for a
// redacted thinking block, only Data: the provider's encrypted payload); image →
// MimeType and Data (base64); toolCall → ID, Name and Arguments (a JSON object),
// plus RawArguments when the model's own text differs from Arguments' encoding.
type Content struct {
	Type      ContentType     `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	MimeType  string          `json:"mimeType,omitempty"`
	Data      string          `json:"data,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// RawArguments is the arguments exactly as the model streamed them, kept
	// only when encoding Arguments would not give them back: encoding/json
	// compacts a RawMessage and escapes <, > and &, so `{"path": "a&b"}` is
	// stored as `{"path":"a\u0026b"}`. Requests send RawArguments when set, so
	// a resumed conversation is byte for byte the one the provider cached.
	RawArguments string `json:"rawArguments,omitempty"`

	// The UTF-16 lengths of Text and Thinking when their decoder carried
	// them (TextUnits, ThinkingUnits): never encoded.
	textUnits, thinkingUnits units
}

// Text returns a text block.
func Text(s string) Content { return Content{Type: ContentText, Text: s} }

// Image returns an image block; data is base64-encoded.
func Image(mimeType, data string) Content {
	return Content{Type: ContentImage, MimeType: mimeType, Data: data}
}

// WireArguments returns a tool call's arguments as the model wrote them: the
// kept raw text, else the stored JSON.
func (c Content) WireArguments() string {
	if c.RawArguments != "" {
		return c.RawArguments
	}
	return string(c.Arguments)
}

// ToolCall returns a tool-call block.
func ToolCall(id, name string, args json.RawMessage) Content {
	return Content{Type: ContentToolCall, ID: id, Name: name, Arguments: args}
}

// Usage counts the tokens of one model call, as the provider reported them.
type Usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead"`
	CacheWrite  int `json:"cacheWrite"`
	TotalTokens int `json:"totalTokens,omitempty"`
	// Cost is what the call cost in USD, when the model's price is known.
	Cost *Cost `json:"cost,omitempty"`
}

// Total is the reported total, or the sum of the parts when the provider sent none.
func (u Usage) Total() int {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// BashExecution is the payload of a RoleBashExecution message (pi transcripts only).
type BashExecution struct {
	Command        string `json:"command"`
	Output         string `json:"output"`
	ExitCode       *int   `json:"exitCode,omitempty"`
	Cancelled      bool   `json:"cancelled,omitempty"`
	Truncated      bool   `json:"truncated,omitempty"`
	FullOutputPath string `json:"fullOutputPath,omitempty"`
}

// Message is one message of a conversation. It is a plain value: copying it is
// cheap and safe as long as nobody mutates the Content slice of a shared copy
// (the agent never does once a message has ended).
type Message struct {
	Role      Role      `json:"role"`
	Content   []Content `json:"content,omitempty"`
	Timestamp int64     `json:"timestamp,omitempty"` // Unix milliseconds

	// Assistant messages.
	Provider     string     `json:"provider,omitempty"`
	Model        string     `json:"model,omitempty"`
	Usage        *Usage     `json:"usage,omitempty"`
	StopReason   StopReason `json:"stopReason,omitempty"`
	ErrorMessage string     `json:"errorMessage,omitempty"`
	// ErrorInfo is the typed provider error behind StopReasonError, when there was one.
	ErrorInfo *Error `json:"errorInfo,omitempty"`

	// Tool results.
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`

	// Custom messages: CustomType names the producer; Display says whether a chat
	// should show it.
	CustomType string `json:"customType,omitempty"`
	Display    bool   `json:"display,omitempty"`

	// Compaction summaries: the summary is in Summary, not Content.
	Summary      string `json:"summary,omitempty"`
	TokensBefore int    `json:"tokensBefore,omitempty"`

	// Bash executions (pi transcripts).
	Bash *BashExecution `json:"bash,omitempty"`

	// InputID ties a user message to the chat input it came from (the bridge's
	// inbound id), so listeners can tell when queued input reaches the model.
	InputID string `json:"inputId,omitempty"`
}

// UserText returns a user message with one text block.
func UserText(s string) Message {
	return Message{Role: RoleUser, Content: []Content{Text(s)}}
}

// TextContent joins the message's text blocks.
func (m Message) TextContent() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == ContentText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the message's tool-call blocks in order.
func (m Message) ToolCalls() []Content {
	var calls []Content
	for _, c := range m.Content {
		if c.Type == ContentToolCall {
			calls = append(calls, c)
		}
	}
	return calls
}

// Clone returns a copy whose Content slice is not shared with m.
func (m Message) Clone() Message {
	if m.Content != nil {
		m.Content = append([]Content(nil), m.Content...)
	}
	return m
}
