package compaction

import (
	"math/bits"
	"unicode/utf8"

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
func EstimateTokens(m llm.Message) int {
	chars := 0
	switch m.Role {
	case llm.RoleUser:
		for i := range m.Content {
			if m.Content[i].Type == llm.ContentText {
				chars += utf16Len(m.Content[i].Text)
			}
		}
	case llm.RoleAssistant:
		for i := range m.Content {
			c := &m.Content[i]
			switch c.Type {
			case llm.ContentText:
				chars += utf16Len(c.Text)
			case llm.ContentThinking:
				chars += utf16Len(c.Thinking)
			case llm.ContentToolCall:
				chars += utf16Len(c.Name) + argumentsLen(c.Arguments)
			}
		}
	case llm.RoleToolResult, llm.RoleCustom:
		for i := range m.Content {
			switch m.Content[i].Type {
			case llm.ContentText:
				chars += utf16Len(m.Content[i].Text)
			case llm.ContentImage:
				chars += imageChars
			}
		}
	case llm.RoleBashExecution:
		if m.Bash != nil {
			chars = utf16Len(m.Bash.Command) + utf16Len(m.Bash.Output)
		}
	case llm.RoleCompactionSummary:
		chars = utf16Len(m.Summary)
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
		return utf16Len(string(raw))
	}
	return n
}

// utf16Len is the length of s in UTF-16 code units, JavaScript's String#length.
// Bytes that are not valid UTF-8 count one unit each, as the U+FFFD a JavaScript
// decoder would put in their place (a decoder may merge a run into one; close enough).
func utf16Len(s string) int {
	adjust, nonASCII := utf8Units(s)
	if !nonASCII || utf8.ValidString(s) {
		return len(s) + adjust
	}
	n := 0
	for _, r := range s {
		n += runeUnits(r)
	}
	return n
}

// utf16LenBytes is utf16Len of b.
func utf16LenBytes(b []byte) int {
	adjust, nonASCII := utf8Units(b)
	if !nonASCII || utf8.Valid(b) {
		return len(b) + adjust
	}
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		n += runeUnits(r)
		b = b[size:]
	}
	return n
}

func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// utf8Units returns what the UTF-16 length of s differs from its byte length
// by, if s is valid UTF-8, and whether s has bytes ≥ 0x80 at all.
//
// For valid UTF-8 the difference is 4-byte leads (which become surrogate
// pairs) − continuation bytes, and both are counted eight bytes at a time;
// most text is ASCII, which skips 64 bytes a step. The words are read with
// constant offsets after one length check, so the loop has no bounds checks.
func utf8Units[T ~string | ~[]byte](s T) (adjust int, nonASCII bool) {
	const highs = 0x8080808080808080
	for len(s) >= 64 {
		w0, w1, w2, w3 := le64(s[0:8]), le64(s[8:16]), le64(s[16:24]), le64(s[24:32])
		w4, w5, w6, w7 := le64(s[32:40]), le64(s[40:48]), le64(s[48:56]), le64(s[56:64])
		if (w0|w1|w2|w3|w4|w5|w6|w7)&highs != 0 {
			nonASCII = true
			adjust += utf8Adjust(w0) + utf8Adjust(w1) + utf8Adjust(w2) + utf8Adjust(w3) +
				utf8Adjust(w4) + utf8Adjust(w5) + utf8Adjust(w6) + utf8Adjust(w7)
		}
		s = s[64:]
	}
	if !nonASCII && len(s) >= 8 {
		// ASCII so far: the rest is too when its words and its last
		// eight bytes (read again in part) are, which spares the byte
		// loop below and its branches.
		w := le64(s[len(s)-8:])
		for t := s; len(t) >= 8; t = t[8:] {
			w |= le64(t[0:8])
		}
		if w&highs == 0 {
			return 0, false
		}
	}
	for len(s) >= 8 {
		if w := le64(s[0:8]); w&highs != 0 {
			nonASCII = true
			adjust += utf8Adjust(w)
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 {
			nonASCII = true
			if c < 0xC0 {
				adjust--
			} else if c >= 0xF0 {
				adjust++
			}
		}
	}
	return adjust, nonASCII
}

// le64 reads eight bytes of s as a little-endian word (the compiler makes it
// one load).
func le64[T ~string | ~[]byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// utf8Adjust is, for eight bytes of UTF-8, the number of 4-byte leads minus
// the number of continuation bytes: what their UTF-16 length differs from
// their byte length by.
func utf8Adjust(w uint64) int {
	const highs = 0x8080808080808080
	// Shifting left by k moves bit 7−k of each byte to bit 7 (bits do not
	// cross into the next byte's bit 7).
	cont := w &^ (w << 1) & highs                       // 10xxxxxx
	lead4 := w & (w << 1) & (w << 2) & (w << 3) & highs // 1111xxxx
	return bits.OnesCount64(lead4) - bits.OnesCount64(cont)
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
