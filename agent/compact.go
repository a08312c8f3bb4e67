package agent

import (
	"context"
	"errors"

	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// overflowGaveUp is said when a compacted context overflows again.
const overflowGaveUp = "the context is still too long after compacting once; " +
	"try !compact with a focus, !reset, or a model with a larger context window"

// ErrRunActive is returned by Compact while a run is active.
var ErrRunActive = errors.New("a run is in progress: wait for it to finish or !stop it, then try again")

// CompactionResult describes a finished compaction.
type CompactionResult struct {
	Summary      string
	TokensBefore int
	TokensAfter  int
	FirstKeptSeq int64
}

// ContextTokens estimates the size of the live context: the usage the provider
// reported for the last reply plus an estimate of what came after it.
func (s *Session) ContextTokens() int {
	return liveContextTokens(s.agent.Messages())
}

// liveContextTokens is compaction.ContextTokens, except that usage reported
// before the latest compaction summary (which measured the old, larger context)
// is not trusted: then every message is estimated.
func liveContextTokens(msgs []llm.Message) int {
	total, idx := compaction.ContextTokens(msgs)
	for i := idx + 1; i < len(msgs) && idx >= 0; i++ {
		if msgs[i].Role == llm.RoleCompactionSummary {
			return estimateAll(msgs)
		}
	}
	if idx >= 0 && len(msgs) > 0 && msgs[0].Role == llm.RoleCompactionSummary && msgs[idx].Timestamp <= msgs[0].Timestamp {
		return estimateAll(msgs)
	}
	return total
}

func estimateAll(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += compaction.EstimateTokens(m)
	}
	return n
}

// compactBeforePrompt is pipeline stage 5: the previous reply may have been cut
// off near the limit.
func (s *Session) compactBeforePrompt(ctx context.Context) {
	s.compactIfNeeded(ctx)
}

// compactAfterRun checks the threshold after a run that did not end in a retry.
func (s *Session) compactAfterRun(ctx context.Context, _ llm.Message) {
	s.compactIfNeeded(ctx)
}

func (s *Session) compactIfNeeded(ctx context.Context) {
	window := s.contextWindow()
	if !s.cfg.Compaction.Enabled || window <= 0 || ctx.Err() != nil {
		return
	}
	if compaction.ShouldCompact(s.ContextTokens(), window, s.cfg.Compaction) {
		_, _ = s.compact(ctx, CompactionThreshold, "", false)
	}
}

// recoverOverflow drops the reply that overflowed, compacts and reports whether
// to retry. A second overflow in a row stops with a clear message.
func (s *Session) recoverOverflow(ctx context.Context) bool {
	if s.overflowTried {
		s.emit(AutoCompactionStart{Reason: CompactionOverflow})
		s.emit(AutoCompactionEnd{Reason: CompactionOverflow, ErrorMessage: overflowGaveUp})
		return false
	}
	s.overflowTried = true
	s.agent.DropLastAssistant() // it stays in the record, not in the context
	_, err := s.compact(ctx, CompactionOverflow, "", true)
	return err == nil
}

// Compact summarizes older history now (!compact), with optional focus text that
// steers the summary. It fails with ErrRunActive while a run is active; input
// queued while it works is delivered afterwards.
func (s *Session) Compact(ctx context.Context, focus string) (CompactionResult, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return CompactionResult{}, ErrClosed
	}
	if s.running {
		s.mu.Unlock()
		return CompactionResult{}, ErrRunActive
	}
	if err := s.validate(); err != nil {
		s.mu.Unlock()
		return CompactionResult{}, err
	}
	runCtx := s.claimLocked()
	s.mu.Unlock()

	stop := context.AfterFunc(ctx, s.Abort)
	res, err := s.compact(runCtx, CompactionManual, focus, false)
	stop()
	_ = s.events.Wait(context.Background()) // its events are processed when it returns
	if s.settle() {
		s.wg.Done()
	} else {
		go s.drive(runCtx, s.queuedPrompt) // deliver what was queued meanwhile
	}
	return res, err
}

// compact runs one compaction on the run goroutine (or Compact's caller, which
// holds the session) and reports it with auto_compaction_start/end events.
// Failures change nothing. When there is nothing to compact it returns
// compaction.ErrNothingToCompact without events: that is an answer, not a
// failure.
func (s *Session) compact(ctx context.Context, reason CompactionReason, focus string, willRetry bool) (CompactionResult, error) {
	_ = s.events.Wait(ctx) // the record must hold every message before preparing
	before := s.ContextTokens()
	window := s.contextWindow()
	settings := s.cfg.Compaction
	if window > 0 && settings.KeepRecentTokens > window/4 {
		// A small window cannot keep the usual tail verbatim: keep a quarter.
		settings.KeepRecentTokens = window / 4
	}
	prep, err := compaction.Prepare(s.Entries(), settings)
	if errors.Is(err, compaction.ErrNothingToCompact) {
		s.log.Info("nothing to compact", "reason", reason)
		return CompactionResult{}, err
	}
	s.emit(AutoCompactionStart{Reason: reason, Tokens: before, ContextWindow: window})
	s.mu.Lock()
	s.compacting = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.compacting = false
		s.mu.Unlock()
	}()
	fail := func(err error) (CompactionResult, error) {
		s.emit(AutoCompactionEnd{Reason: reason, ErrorMessage: err.Error(), Aborted: ctx.Err() != nil})
		return CompactionResult{}, err
	}
	if err != nil {
		return fail(err)
	}
	res, err := compaction.Summarize(ctx, s.cfg.Model, s.agent.ModelName(), prep, settings, focus)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return fail(err)
	}
	if prep.TokensBefore > 0 {
		before = prep.TokensBefore
	}
	s.persistLater(transcript.Entry{Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{
		Summary:       res.Summary,
		FirstKeptSeq:  prep.FirstKeptSeq,
		TokensBefore:  before,
		ReadFiles:     prep.ReadFiles,
		ModifiedFiles: prep.ModifiedFiles,
		Reason:        string(reason),
	}})
	_ = s.events.Wait(context.Background())
	rebuilt := transcript.BuildContext(s.Entries())
	s.agent.ReplaceMessages(rebuilt.Messages)
	if willRetry {
		// A reply that overflowed without an error (usage beyond the window) is in
		// the record as a success; the retry must not start after it.
		s.agent.DropLastAssistant()
	}
	after := estimateAll(rebuilt.Messages)
	s.compactions++
	s.emit(AutoCompactionEnd{Reason: reason, TokensBefore: before, TokensAfter: after, Summary: res.Summary, WillRetry: willRetry})
	return CompactionResult{Summary: res.Summary, TokensBefore: before, TokensAfter: after, FirstKeptSeq: prep.FirstKeptSeq}, nil
}
