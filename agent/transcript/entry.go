// Package transcript is a session's durable record: an ordered list of entries
// (messages, compaction summaries, model changes, custom data) and the rule that
// turns it into the live context the model sees.
//
// Entries are append-only and ordered by Seq, a per-session number that only grows.
// Nothing is ever deleted: a compaction adds an entry that says which older entries
// the live context no longer carries; a failed reply that is retried stays in the
// record but leaves the live context.
package transcript

import (
	"encoding/json"
	"slices"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// EntryType names an entry kind.
type EntryType string

const (
	EntryMessage       EntryType = "message"
	EntryCompaction    EntryType = "compaction"
	EntryModelChange   EntryType = "model_change"
	EntryThinkingLevel EntryType = "thinking_level_change"
	EntryCustom        EntryType = "custom"
)

// Entry is one record of a session. Exactly one payload field matches Type; an
// entry of a type this version does not know keeps its original JSON in Raw and is
// carried along untouched.
type Entry struct {
	Seq       int64     `json:"seq"`
	Type      EntryType `json:"type"`
	Timestamp int64     `json:"timestamp,omitempty"` // Unix milliseconds

	Message       *llm.Message `json:"message,omitempty"`
	Compaction    *Compaction  `json:"compaction,omitempty"`
	ModelChange   *ModelChange `json:"modelChange,omitempty"`
	ThinkingLevel string       `json:"thinkingLevel,omitempty"`
	Custom        *Custom      `json:"custom,omitempty"`

	Raw json.RawMessage `json:"raw,omitempty"`
}

// Compaction records that the entries before FirstKeptSeq were summarized.
type Compaction struct {
	Summary      string `json:"summary"`
	FirstKeptSeq int64  `json:"firstKeptSeq"`
	TokensBefore int    `json:"tokensBefore"`
	// ReadFiles and ModifiedFiles accumulate across compactions.
	ReadFiles     []string `json:"readFiles,omitempty"`
	ModifiedFiles []string `json:"modifiedFiles,omitempty"`
	// Reason is "threshold", "overflow" or "manual".
	Reason string `json:"reason,omitempty"`
}

// ModelChange records a switch of model for the rest of the session.
type ModelChange struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model"`
}

// Custom is extension data kept in the record but not sent to the model.
type Custom struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data,omitempty"`
}

// MessageEntry wraps a message in an entry.
func MessageEntry(seq int64, m llm.Message) Entry {
	return Entry{Seq: seq, Type: EntryMessage, Timestamp: m.Timestamp, Message: &m}
}

// WithoutUnits returns a copy of entries with their messages' carried text
// lengths dropped (llm.Message.WithoutUnits): entries loaded from storage
// then compare equal, field by field, to the entries that were stored.
func WithoutUnits(entries []Entry) []Entry {
	out := slices.Clone(entries)
	for i := range out {
		if m := out[i].Message; m != nil {
			stripped := m.WithoutUnits()
			out[i].Message = &stripped
		}
	}
	return out
}
