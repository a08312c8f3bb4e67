// Package compaction keeps a long session inside the model's context window: it
// decides when the context is too large, which old messages leave it, and has the
// model write the structured summary that stands in for them. It is the pure part
// of docs/agent.md §6; the session owns the triggers, the events and the storage.
//
// Contract:
//   - Every function except Summarize is pure and fast: no I/O, no model calls,
//     inputs never modified. Prepare on a 1,000-entry session takes well under a
//     millisecond (BENCHMARKS.md).
//   - Summarize is the only function that calls a model. It blocks until the summary
//     is written or ctx ends, and it changes nothing: on failure the caller keeps
//     the session as it was and may go on.
//   - Entries are the transcript's (Entry = transcript.Entry), in Seq order.
//
// The flow a session follows:
//
//	tokens := LiveContextTokens(entries)            // or ContextTokens(live messages)
//	if ShouldCompact(tokens, window, settings) {
//		p, err := Prepare(entries, settings)         // ErrNothingToCompact → nothing to do
//		r, err := Summarize(ctx, model, name, p, settings, focus)
//		append a compaction entry r.Compaction(reason) // live context: summary, then entries from r.FirstKeptSeq on
//	}
//
// # Conformance with pi
//
// EstimateTokens, ContextTokens, ShouldCompact and FindCutPoint reproduce pi's
// estimateTokens, estimateContextTokens, shouldCompact and findCutPoint (pi
// 0.58.3), including the UTF-16 character counts and the JavaScript JSON.stringify
// of tool-call arguments, so every vector in testdata/README.md holds. The token
// estimate is pi's chars/4 rule; it under-estimates CJK text (about one token per
// character) by up to 4×.
//
// # Where threadsmith beats pi, and what differs on the fixture
//
// pi has three defects in preparing a compaction. Prepare and Summarize correct
// them; FindCutPoint does not, so that its vectors stay pi's.
//
//  1. Messages kept by the previous compaction are lost at the next one. pi looks
//     only at the entries after the previous compaction entry, so the messages that
//     compaction kept verbatim (from its first kept entry up to the compaction
//     entry) are neither summarized nor kept. Prepare starts at the previous
//     compaction's first kept entry. On the fixture (defaults, previous compaction
//     at entry 627 keeping entries 550 on), pi summarizes 306 messages (entries
//     628..938) and lists 11 modified files; Prepare summarizes 383 (entries
//     550..938, the compaction entry excepted) and lists 12 — the 77 extra messages
//     edited packages/coding-agent/src/utils/config.ts, which pi forgets. The cut
//     (first kept 946, turn start 939, split), the 7 turn-prefix messages, the 2
//     read files and tokensBefore 180820 are the same.
//  2. The previous summary is dropped when a split turn has no earlier history. When
//     the cut falls inside the first turn after the previous compaction, there is
//     nothing but the turn prefix to summarize, and pi puts "No prior history." in
//     place of the history summary, losing everything the previous summary held.
//     Summarize keeps the previous summary (without its file lists, which are
//     merged and appended again) as the history part.
//  3. A settings entry in front of a user message is taken for a split turn. pi
//     moves model and thinking-level changes before the cut into the kept part and
//     then, seeing a settings entry rather than a user message, reports the previous
//     turn as split. Prepare judges the first message of the kept part. On the
//     fixture, a cut over the whole file with keepRecentTokens 86500 lands on the
//     model changes 709..713 before the user message 714: FindCutPoint reports pi's
//     (709, 705, split); Prepare's rule gives (709, -1, not split).
//
// Two smaller differences: a cut at a bashExecution or custom message (which start
// turns) is reported by Prepare as not split, where pi says split with an empty
// prefix — the summaries are the same; and when no reply since the previous
// compaction reported usage, TokensBefore estimates the kept messages too, which pi
// leaves out.
package compaction
