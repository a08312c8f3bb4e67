package agent

import (
	"context"
	"encoding/json"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// Tool is something the model can call.
//
// Execute runs one call. A mistake of the model (bad path, no match, command
// failed) is a ToolResult with IsError set and a message the model can act on; a
// non-nil error means broken infrastructure and is reported to the model as an
// error result too, and logged. Execute must return promptly once ctx is done.
// update, which may be nil-safe-called from any goroutine of the tool, streams
// partial output to listeners; calls to it after Execute returns are ignored.
type Tool interface {
	Spec() llm.ToolSpec
	Execute(ctx context.Context, call ToolCall, update func(ToolResult)) (ToolResult, error)
}

// ReadOnlyTool is implemented by tools that change nothing, so consecutive calls
// to them may run in parallel.
type ReadOnlyTool interface {
	ReadOnly() bool
}

// ToolCall is one call of a tool by the model. Args has passed the tool's schema.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolResult is what a tool call produced.
type ToolResult struct {
	Content []llm.Content   `json:"content"`
	IsError bool            `json:"isError,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

// ErrorResult is a tool result with one text block, marked as an error.
func ErrorResult(msg string) ToolResult {
	return ToolResult{Content: []llm.Content{llm.Text(msg)}, IsError: true}
}

// TextResult is a tool result with one text block.
func TextResult(text string) ToolResult {
	return ToolResult{Content: []llm.Content{llm.Text(text)}}
}

// Store persists a session's entries. AppendEntries is called from the session's
// serial event queue, one call per event, in Seq order; it must be durable when it
// returns. A failing store is logged and reported, and never stops the session.
type Store interface {
	// AppendEntries stores entries, all or none. Appending entries the
	// store holds already, identical at their sequence numbers, succeeds
	// without storing them again: a session repeats an append whose answer
	// it did not get (the store may have committed it).
	AppendEntries(ctx context.Context, sessionID string, entries []transcript.Entry) error
}

// Snapshotter is a Store that keeps a session's live entries in one value,
// for a resume that reads that value instead of every entry
// (storage.Store.SnapshotSession). The session asks for a snapshot each time
// a run ends, behind the run's appends.
type Snapshotter interface {
	SnapshotSession(ctx context.Context, sessionID string) error
}

// SeqSource is a Store that knows a session's next free sequence number. The
// store is the authority on sequence numbers: when an append is refused
// because its numbers are taken (a second writer on the session), the session
// moves its entries to NextSeq and appends them again instead of losing them.
type SeqSource interface {
	NextSeq(ctx context.Context, sessionID string) (int64, error)
}
