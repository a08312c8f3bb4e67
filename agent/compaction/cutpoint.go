package compaction

import (
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// CutPoint says where a compaction cuts a range of entries.
type CutPoint struct {
	// FirstKeptIndex is the index of the first entry that stays in the context.
	FirstKeptIndex int
	// TurnStartIndex is the index of the entry that opened the turn the cut falls
	// into, when the cut splits a turn; -1 otherwise.
	TurnStartIndex int
	// IsSplitTurn says the cut falls inside a turn: the entries from TurnStartIndex
	// up to FirstKeptIndex are that turn's beginning (its "prefix").
	IsSplitTurn bool
}

// rawBranchSummary is pi's branch_summary entry type, kept raw (Raw set) when a pi
// session is converted.
// pi treats it as a user-side message: a valid cut point and the start of a turn.
const rawBranchSummary transcript.EntryType = "branch_summary"

// FindCutPoint finds where to cut entries[start:end] so that roughly
// keepRecentTokens of the newest messages stay, exactly as pi's findCutPoint does
// (the conformance vectors come from it):
//
//  1. Walk back from the newest message entry, adding EstimateTokens, until the sum
//     reaches keepRecentTokens; the cut is the first valid cut point at or after the
//     entry where that happened. Valid cut points are user, assistant, custom,
//     bashExecution and compactionSummary messages — never a tool result, which must
//     follow its call. If the budget is never reached, or no valid cut point follows,
//     the cut is the first valid cut point of the range (everything is kept); with no
//     valid cut point at all the result is {start, -1, false}.
//  2. Non-message entries right before the cut (model or thinking-level changes,
//     custom data, unknown entries) move into the kept part, up to a message or a
//     compaction entry.
//  3. If the first kept entry is not a user message, the turn is split: its start is
//     the nearest user or bashExecution message (or custom message) at or before the
//     first kept entry, within the range; with none, the turn is not split.
//
// Step 3 has pi's flaw that a settings entry moved in by step 2 in front of a user
// message counts as "not a user message", so a clean cut between turns is reported
// as a split of the previous turn. Prepare corrects this; FindCutPoint keeps pi's
// result so the conformance vectors hold.
//
// Where this differs from pi: pi's custom_message entries become RoleCustom message
// entries here, so they count toward the kept tokens and stop step 2, as messages do.
func FindCutPoint(entries []Entry, start, end, keepRecentTokens int) CutPoint {
	return findCutPoint(entries, start, end, keepRecentTokens, false)
}

// findCutPoint is FindCutPoint; with fixTurns it decides whether the turn is split
// from the first message of the kept part, not from a settings entry in front of it.
func findCutPoint(entries []Entry, start, end, keepRecentTokens int, fixTurns bool) CutPoint {
	first := -1
	for i := start; i < end; i++ {
		if isCutPoint(&entries[i]) {
			first = i
			break
		}
	}
	if first < 0 {
		return CutPoint{FirstKeptIndex: start, TurnStartIndex: -1}
	}

	cut := first
	acc := 0
	for i := end - 1; i >= start; i-- {
		e := &entries[i]
		if !isMessage(e) {
			continue
		}
		acc += EstimateTokens(*e.Message)
		if acc >= keepRecentTokens {
			for c := i; c < end; c++ {
				if isCutPoint(&entries[c]) {
					cut = c
					break
				}
			}
			break
		}
	}

	for cut > start {
		prev := &entries[cut-1]
		if prev.Type == transcript.EntryCompaction || prev.Type == transcript.EntryMessage {
			break
		}
		cut--
	}

	if !fixTurns {
		if isUserMessage(&entries[cut]) {
			return CutPoint{FirstKeptIndex: cut, TurnStartIndex: -1}
		}
		ts := findTurnStart(entries, cut, start)
		return CutPoint{FirstKeptIndex: cut, TurnStartIndex: ts, IsSplitTurn: ts != -1}
	}

	// The kept part really begins at its first message (or raw turn start); entries
	// in front of it only came along.
	lead := cut
	for lead < end-1 && !isMessage(&entries[lead]) && !isTurnStart(&entries[lead]) {
		lead++
	}
	if isUserMessage(&entries[lead]) {
		return CutPoint{FirstKeptIndex: cut, TurnStartIndex: -1}
	}
	ts := findTurnStart(entries, lead, start)
	if ts == -1 || ts == lead {
		return CutPoint{FirstKeptIndex: cut, TurnStartIndex: -1}
	}
	return CutPoint{FirstKeptIndex: cut, TurnStartIndex: ts, IsSplitTurn: true}
}

// findTurnStart returns the index of the nearest turn start at or before idx and at
// or after start, or -1.
func findTurnStart(entries []Entry, idx, start int) int {
	for i := idx; i >= start; i-- {
		if isTurnStart(&entries[i]) {
			return i
		}
	}
	return -1
}

func isMessage(e *Entry) bool {
	return e.Type == transcript.EntryMessage && e.Message != nil
}

func isUserMessage(e *Entry) bool {
	return isMessage(e) && e.Message.Role == llm.RoleUser
}

func isCutPoint(e *Entry) bool {
	if e.Type == rawBranchSummary {
		return true
	}
	if !isMessage(e) {
		return false
	}
	switch e.Message.Role {
	case llm.RoleUser, llm.RoleAssistant, llm.RoleCustom, llm.RoleBashExecution, llm.RoleCompactionSummary:
		return true
	}
	return false
}

// isTurnStart: messages a person (or an extension, on a person's behalf) put in
// start turns; assistant replies and tool results continue them.
func isTurnStart(e *Entry) bool {
	if e.Type == rawBranchSummary {
		return true
	}
	if !isMessage(e) {
		return false
	}
	switch e.Message.Role {
	case llm.RoleUser, llm.RoleBashExecution, llm.RoleCustom:
		return true
	}
	return false
}
