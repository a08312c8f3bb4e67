package agent

import (
	"encoding/json"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// Event is one of the closed set of events a Session emits, in order, to its
// extensions and listeners. Only this package defines events.
type Event interface {
	// Type is the event's wire name (agent_start, message_update, …), for logs.
	Type() string
	isEvent()
}

// AgentStart opens a run.
type AgentStart struct{}

// TurnStart opens a turn: one model call and the tool calls it makes.
type TurnStart struct{}

// MessageStart announces a message: a prompt, an injected steer or followUp, an
// assistant reply as it begins to stream, or a tool result.
type MessageStart struct{ Message llm.Message }

// MessageUpdate carries one streamed fragment of an assistant reply. Message is a
// snapshot of the reply so far; listeners may keep it.
type MessageUpdate struct {
	Message llm.Message
	Delta   llm.Delta
}

// MessageEnd completes a message. The session persists it.
type MessageEnd struct{ Message llm.Message }

// ToolExecutionStart announces a tool call about to run (or about to be refused).
type ToolExecutionStart struct {
	ToolCallID string
	ToolName   string
	Args       json.RawMessage
}

// ToolExecutionUpdate carries partial output of a running tool.
type ToolExecutionUpdate struct {
	ToolCallID string
	ToolName   string
	Partial    ToolResult
}

// ToolExecutionEnd reports a tool call's result. These arrive in the assistant's
// call order, whatever order the tools finished in.
type ToolExecutionEnd struct {
	ToolCallID string
	ToolName   string
	Args       json.RawMessage
	Result     ToolResult
	Duration   time.Duration
}

// TurnEnd closes a turn with its assistant message and tool results.
type TurnEnd struct {
	Message     llm.Message
	ToolResults []llm.Message
}

// Halted says the run stops before its next model call because a
// before-call hook refused it (Extension.BeforeModelCall): Reason is the
// hook's error. agent_end follows; queued input stays queued.
type Halted struct{ Reason string }

// AgentEnd closes a run with the messages it added.
type AgentEnd struct{ Messages []llm.Message }

// AutoRetryStart says a failed model call will be retried after Delay.
type AutoRetryStart struct {
	Attempt      int // 1-based
	MaxAttempts  int
	Delay        time.Duration
	ErrorMessage string
}

// AutoRetryEnd closes a retry sequence: Success after a good reply, or the final
// error after giving up or being cancelled ("cancelled").
type AutoRetryEnd struct {
	Success    bool
	Attempt    int
	FinalError string
}

// CompactionReason says what started a compaction.
type CompactionReason string

const (
	CompactionThreshold CompactionReason = "threshold" // context above window − reserve
	CompactionOverflow  CompactionReason = "overflow"  // the provider refused an over-long prompt
	CompactionManual    CompactionReason = "manual"    // !compact
)

// AutoCompactionStart says a compaction began, with the context's size then
// (Tokens) and the model's window.
type AutoCompactionStart struct {
	Reason        CompactionReason
	Tokens        int
	ContextWindow int
}

// AutoCompactionEnd says how a compaction ended. ErrorMessage is set when it failed
// (and then nothing changed). WillRetry is set when the run that overflowed is
// about to be retried on the compacted context.
type AutoCompactionEnd struct {
	Reason       CompactionReason
	TokensBefore int
	TokensAfter  int
	Summary      string
	ErrorMessage string
	Aborted      bool
	WillRetry    bool
}

// PersistFailed says that entries of the session could not be stored: they
// are in the live context but will be missing after a restart.
type PersistFailed struct {
	Entries      int
	ErrorMessage string
}

// QueueUpdate reports the steer and followUp queues after they changed.
type QueueUpdate struct {
	Steer    []llm.Message
	FollowUp []llm.Message
}

func (AgentStart) Type() string          { return "agent_start" }
func (TurnStart) Type() string           { return "turn_start" }
func (MessageStart) Type() string        { return "message_start" }
func (MessageUpdate) Type() string       { return "message_update" }
func (MessageEnd) Type() string          { return "message_end" }
func (ToolExecutionStart) Type() string  { return "tool_execution_start" }
func (ToolExecutionUpdate) Type() string { return "tool_execution_update" }
func (ToolExecutionEnd) Type() string    { return "tool_execution_end" }
func (TurnEnd) Type() string             { return "turn_end" }
func (AgentEnd) Type() string            { return "agent_end" }
func (Halted) Type() string              { return "halted" }
func (AutoRetryStart) Type() string      { return "auto_retry_start" }
func (AutoRetryEnd) Type() string        { return "auto_retry_end" }
func (AutoCompactionStart) Type() string { return "auto_compaction_start" }
func (AutoCompactionEnd) Type() string   { return "auto_compaction_end" }
func (QueueUpdate) Type() string         { return "queue_update" }
func (PersistFailed) Type() string       { return "persist_failed" }

func (AgentStart) isEvent()          {}
func (TurnStart) isEvent()           {}
func (MessageStart) isEvent()        {}
func (MessageUpdate) isEvent()       {}
func (MessageEnd) isEvent()          {}
func (ToolExecutionStart) isEvent()  {}
func (ToolExecutionUpdate) isEvent() {}
func (ToolExecutionEnd) isEvent()    {}
func (TurnEnd) isEvent()             {}
func (AgentEnd) isEvent()            {}
func (Halted) isEvent()              {}
func (AutoRetryStart) isEvent()      {}
func (AutoRetryEnd) isEvent()        {}
func (AutoCompactionStart) isEvent() {}
func (AutoCompactionEnd) isEvent()   {}
func (PersistFailed) isEvent()       {}
func (QueueUpdate) isEvent()         {}
