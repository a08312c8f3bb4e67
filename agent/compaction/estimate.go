package compaction

import (
	"github.com/threadsmith/threadsmith/agent/llm"
)

// Settings are the compaction knobs of a session (config keys agent.compaction.*).
type Settings struct {
	// Enabled turns the automatic threshold trigger on. Manual compaction works either way.
	Enabled bool
	// ReserveTokens is the head room kept free below the context window: compaction
	// triggers once the context passes window − reserve. It also sizes the summary
	// (0.8·reserve tokens; a split turn's prefix gets 0.5·reserve).
	ReserveTokens int
	// KeepRecentTokens is roughly how much of the newest conversation stays verbatim.
	KeepRecentTokens int
}

// DefaultSettings returns pi's defaults: enabled, 16384 reserved, 20000 kept.
func DefaultSettings() Settings {
	return Settings{Enabled: true, ReserveTokens: 16384, KeepRecentTokens: 20000}
}

// imageChars is what pi charges for an image in a tool result or custom message:
// 4800 characters, i.e. 1200 tokens.
const imageChars = 4800

// EstimateTokens estimates how many tokens a message occupies, exactly as pi does:
// ceil(chars/4), where chars counts UTF-16 code units (JavaScript string length) of
//
//   - user: the text blocks (images count 0);
//   - assistant: text, thinking, and for each tool call its name plus the length of
//     JSON.stringify of its arguments (see jsLen);
//   - toolResult and custom: the text blocks plus 4800 per image;
//   - bashExecution: command plus output;
//   - compactionSummary: the summary.
//
// Other roles count 0. The rule is pi's on purpose — cut points, thresholds and the
// conformance vectors depend on it — and it is a rough one: about 4 characters per
// token fits English prose and code, but CJK text runs close to one token per
// character (often more), so Chinese, Japanese or Korean conversations are
// under-estimated by up to 4×; the provider-reported usage, which dominates
// ContextTokens, is unaffected.
//
// Tool-call arguments that are not valid JSON (a reply cut mid-stream) are counted
// by their raw length; missing arguments count as "{}".
//
// A text block's length is the one its decoder carried (llm.Content.TextUnits):
// messages loaded from storage cost a few steps per block, as a JavaScript
// string's length does, instead of a pass over every byte.
func EstimateTokens(m llm.Message) int {
	chars := 0
	switch m.Role {
	case llm.RoleUser:
		for i := range m.Content {
			if m.Content[i].Type == llm.ContentText {
				chars += m.Content[i].TextUnits()
			}
		}
	case llm.RoleAssistant:
		for i := range m.Content {
			c := &m.Content[i]
			switch c.Type {
			case llm.ContentText:
				chars += c.TextUnits()
			case llm.ContentThinking:
				chars += c.ThinkingUnits()
			case llm.ContentToolCall:
				chars += llm.UTF16Len(c.Name) + argumentsLen(c.Arguments)
			}
		}
	case llm.RoleToolResult, llm.RoleCustom:
		for i := range m.Content {
			switch m.Content[i].Type {
			case llm.ContentText:
				chars += m.Content[i].TextUnits()
			case llm.ContentImage:
				chars += imageChars
			}
		}
	case llm.RoleBashExecution:
		if m.Bash != nil {
			chars = llm.UTF16Len(m.Bash.Command) + llm.UTF16Len(m.Bash.Output)
		}
	case llm.RoleCompactionSummary:
		chars = llm.UTF16Len(m.Summary)
	}
	return (chars + 3) / 4
}

// argumentsLen is the JavaScript length of JSON.stringify(arguments).
func argumentsLen(raw []byte) int {
	if len(raw) == 0 {
		return 2 // "{}": pi's tool calls always carry an object
	}
	n, err := jsLen(raw)
	if err != nil {
		return llm.UTF16LenBytes(raw)
	}
	return n
}

// ShouldCompact reports whether a context of contextTokens has passed the threshold
// window − reserve. It is false when automatic compaction is disabled.
func ShouldCompact(contextTokens, contextWindow int, s Settings) bool {
	return s.Enabled && contextTokens > contextWindow-s.ReserveTokens
}

// ContextTokens estimates the size of a context as pi does: the usage reported with
// the last successful assistant reply (its total, or the sum of its parts when the
// provider sent no total) plus EstimateTokens of every later message. Replies that
// ended with an error or were aborted carry no trustworthy usage and are passed
// over. lastUsageIndex is the index in msgs of the reply whose usage was used, or -1
// when none had usage, in which case total estimates every message.
//
// The caller decides which messages are comparable: usage reported before the latest
// compaction measured the old, larger context (see LiveContextTokens).
func ContextTokens(msgs []llm.Message) (total int, lastUsageIndex int) {
	lastUsageIndex = lastUsage(msgs, 0)
	if lastUsageIndex < 0 {
		for i := range msgs {
			total += EstimateTokens(msgs[i])
		}
		return total, -1
	}
	total = msgs[lastUsageIndex].Usage.Total()
	for i := lastUsageIndex + 1; i < len(msgs); i++ {
		total += EstimateTokens(msgs[i])
	}
	return total, lastUsageIndex
}

// lastUsage returns the index of the last message at or after from that is an
// assistant reply with trustworthy usage, or -1.
func lastUsage(msgs []llm.Message, from int) int {
	for i := len(msgs) - 1; i >= from; i-- {
		if hasUsage(&msgs[i]) {
			return i
		}
	}
	return -1
}

func hasUsage(m *llm.Message) bool {
	return m.Role == llm.RoleAssistant && m.Usage != nil &&
		m.StopReason != llm.StopReasonError && m.StopReason != llm.StopReasonAborted
}
