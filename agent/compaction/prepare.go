package compaction

import (
	"errors"
	"fmt"
	"sort"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// Entry is a session entry; compaction works on the transcript's own type.
type Entry = transcript.Entry

// ErrNothingToCompact is returned (possibly wrapped, test with errors.Is) when a
// session has nothing that could leave the context: it is empty, everything fits in
// the kept part, or its last entry is already a compaction.
var ErrNothingToCompact = errors.New("nothing to compact")

// Preparation is everything a compaction needs, computed without calling a model.
type Preparation struct {
	// StartIndex is the first entry the compaction looked at: the previous
	// compaction's first kept entry, or 0.
	StartIndex int
	// FirstKeptIndex and FirstKeptSeq name the first entry that stays in the context.
	FirstKeptIndex int
	FirstKeptSeq   int64
	// TurnStartIndex is where the split turn began (-1 when IsSplitTurn is false).
	TurnStartIndex int
	// IsSplitTurn says the cut falls inside a turn, whose beginning is summarized
	// separately (TurnPrefixMessages).
	IsSplitTurn bool
	// TokensBefore is the live context's size before compaction (LiveContextTokens).
	TokensBefore int
	// MessagesToSummarize leave the context and go into the history summary.
	// They point into the entries given to Prepare (as pi's arrays hold the
	// same objects): nobody modifies them.
	MessagesToSummarize []*llm.Message
	// TurnPrefixMessages are the beginning of a split turn, summarized on their own.
	TurnPrefixMessages []*llm.Message
	// ReadFiles and ModifiedFiles are the files read (and not modified) and the
	// files written or edited, by the summarized messages and every earlier
	// compaction; sorted.
	ReadFiles, ModifiedFiles []string
	// PreviousSummary is the summary of the previous compaction, "" when none; the
	// new summary is an update of it.
	PreviousSummary string
}

// Prepare decides what a compaction of entries (a session's entries in Seq order)
// would summarize and keep. It is pure: entries are not modified; the returned
// messages are the entries' own (nothing mutates an ended message), so that a
// preparation costs no copy of what it summarizes.
//
// It follows pi's prepareCompaction with three corrections (see the package doc):
// the range starts at the previous compaction's first kept entry, not after the
// compaction entry, so the messages that compaction kept are summarized now instead
// of silently leaving the context; a settings entry in front of a user message does
// not make a split turn; and a cut at the start of a turn (user, bashExecution or
// custom message) is never reported as a split with an empty prefix. The previous
// summary survives a split turn with no earlier history in Summarize.
//
// It returns ErrNothingToCompact when nothing would leave the context.
func Prepare(entries []Entry, s Settings) (*Preparation, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: the session is empty", ErrNothingToCompact)
	}
	if entries[len(entries)-1].Type == transcript.EntryCompaction {
		return nil, fmt.Errorf("%w: the session was just compacted", ErrNothingToCompact)
	}
	prev := lastCompaction(entries)
	start := keptStart(entries, prev)
	end := len(entries)

	cut := findCutPoint(entries, start, end, s.KeepRecentTokens, true)
	p := &Preparation{
		StartIndex:     start,
		FirstKeptIndex: cut.FirstKeptIndex,
		FirstKeptSeq:   entries[cut.FirstKeptIndex].Seq,
		TurnStartIndex: cut.TurnStartIndex,
		IsSplitTurn:    cut.IsSplitTurn,
	}
	historyEnd := cut.FirstKeptIndex
	if cut.IsSplitTurn {
		historyEnd = cut.TurnStartIndex
	}
	p.MessagesToSummarize = messagesIn(entries, start, historyEnd)
	if cut.IsSplitTurn {
		p.TurnPrefixMessages = messagesIn(entries, cut.TurnStartIndex, cut.FirstKeptIndex)
	}
	if len(p.MessagesToSummarize) == 0 && len(p.TurnPrefixMessages) == 0 {
		return nil, fmt.Errorf("%w: everything fits in the %d tokens kept", ErrNothingToCompact, s.KeepRecentTokens)
	}

	ops := newFileOps()
	if prev >= 0 {
		c := entries[prev].Compaction
		p.PreviousSummary = c.Summary
		ops.addPrevious(c.ReadFiles, c.ModifiedFiles)
	}
	for _, m := range p.MessagesToSummarize {
		ops.addMessage(m)
	}
	for _, m := range p.TurnPrefixMessages {
		ops.addMessage(m)
	}
	p.ReadFiles, p.ModifiedFiles = ops.lists()
	p.TokensBefore = liveContextTokens(entries, prev, start)
	return p, nil
}

// LiveContextTokens estimates the size of the live context of a session (the latest
// compaction's summary, then every message from its first kept entry on) the way
// ContextTokens does, trusting only usage reported after the latest compaction: a
// reply kept from before it reported the old, larger context. Without such usage
// every message of the live context is estimated.
func LiveContextTokens(entries []Entry) int {
	prev := lastCompaction(entries)
	return liveContextTokens(entries, prev, keptStart(entries, prev))
}

func liveContextTokens(entries []Entry, prev, start int) int {
	for i := len(entries) - 1; i > prev; i-- {
		e := &entries[i]
		if isMessage(e) && hasUsage(e.Message) {
			total := e.Message.Usage.Total()
			for j := i + 1; j < len(entries); j++ {
				if isMessage(&entries[j]) {
					total += EstimateTokens(*entries[j].Message)
				}
			}
			return total
		}
	}
	total := 0
	if prev >= 0 {
		total = EstimateTokens(llm.Message{Role: llm.RoleCompactionSummary, Summary: entries[prev].Compaction.Summary})
	}
	for j := start; j < len(entries); j++ {
		if isMessage(&entries[j]) {
			total += EstimateTokens(*entries[j].Message)
		}
	}
	return total
}

// lastCompaction returns the index of the latest compaction entry, or -1.
func lastCompaction(entries []Entry) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type == transcript.EntryCompaction && entries[i].Compaction != nil {
			return i
		}
	}
	return -1
}

// keptStart returns the index of the first entry the live context holds: the first
// entry at or after the compaction's FirstKeptSeq (never past the compaction), or 0.
// Entries are in Seq order, so it is a binary search.
func keptStart(entries []Entry, prev int) int {
	if prev < 0 {
		return 0
	}
	first := entries[prev].Compaction.FirstKeptSeq
	if i := sort.Search(prev, func(i int) bool { return entries[i].Seq >= first }); i < prev {
		return i
	}
	return prev + 1
}

// messagesIn returns the messages of entries[from:to] in order; other entries
// (compactions, settings, custom data) carry nothing to summarize.
func messagesIn(entries []Entry, from, to int) []*llm.Message {
	n := 0
	for i := from; i < to; i++ {
		if isMessage(&entries[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]*llm.Message, 0, n)
	for i := from; i < to; i++ {
		if isMessage(&entries[i]) {
			out = append(out, entries[i].Message)
		}
	}
	return out
}
