package openai

import (
	"fmt"
	"slices"
	"strings"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// assembler builds the assistant message from stream chunks and reports each
// fragment to the StreamFunc.
//
// The partial message holds one thinking block, one text block and one block per
// tool call, in the order they first appeared, so a Delta's Index stays valid for
// the whole stream. The final message puts them in a fixed order: thinking,
// text, tool calls by index.
//
// Per fragment it does constant work: text goes into a strings.Builder and the
// block's string is the builder's current view (no copy, and earlier views stay
// valid because a builder only appends); arguments go into an append-only byte
// buffer that the partial block shares the same way.
type assembler struct {
	msg      llm.Message
	fn       llm.StreamFunc
	model    string // as the server reports it
	thinkIdx int    // block index in msg.Content, -1 until seen
	textIdx  int
	thinking strings.Builder
	text     strings.Builder
	calls    []callState
	finish   string
}

type callState struct {
	index int // the provider's tool-call index
	block int // index in msg.Content
	args  []byte
}

func newAssembler(provider, model string, timestamp int64, fn llm.StreamFunc) *assembler {
	return &assembler{
		msg: llm.Message{
			Role:      llm.RoleAssistant,
			Provider:  provider,
			Model:     model,
			Timestamp: timestamp,
		},
		fn:       fn,
		thinkIdx: -1,
		textIdx:  -1,
	}
}

func (a *assembler) add(ch *streamChunk) {
	if a.model != "" && a.msg.Model != a.model {
		a.msg.Model = a.model
	}
	if ch.Usage != nil {
		a.setUsage(ch.Usage)
	}
	c := &ch.Choices[0]
	if c.Usage != nil && ch.Usage == nil {
		a.setUsage(c.Usage)
	}
	if s := c.reasoning(); s != "" {
		a.appendText(&a.thinkIdx, &a.thinking, llm.ContentThinking, llm.DeltaThinking, s)
	}
	if c.Delta.Content != "" {
		a.appendText(&a.textIdx, &a.text, llm.ContentText, llm.DeltaText, string(c.Delta.Content))
	}
	if c.Delta.Refusal != "" {
		a.appendText(&a.textIdx, &a.text, llm.ContentText, llm.DeltaText, string(c.Delta.Refusal))
	}
	for i := range c.Delta.ToolCalls {
		a.appendToolCall(&c.Delta.ToolCalls[i])
	}
	if c.FinishReason != "" {
		a.finish = string(c.FinishReason)
	}
}

func (a *assembler) appendText(idx *int, b *strings.Builder, typ llm.ContentType, kind llm.DeltaKind, s string) {
	if *idx < 0 {
		*idx = len(a.msg.Content)
		a.msg.Content = append(a.msg.Content, llm.Content{Type: typ})
	}
	b.WriteString(s)
	block := &a.msg.Content[*idx]
	if typ == llm.ContentThinking {
		block.Thinking = b.String()
	} else {
		block.Text = b.String()
	}
	if a.fn != nil {
		a.fn(llm.Delta{Kind: kind, Index: *idx, Text: s}, &a.msg)
	}
}

func (a *assembler) appendToolCall(d *toolCallDelta) {
	st := a.callFor(d)
	block := &a.msg.Content[st.block]
	if block.ID == "" {
		block.ID = d.ID
	}
	if block.Name == "" {
		block.Name = d.Function.Name
	}
	frag := string(d.Function.Arguments)
	st.args = append(st.args, frag...)
	block.Arguments = st.args
	if a.fn != nil {
		a.fn(llm.Delta{Kind: llm.DeltaToolCall, Index: st.block, Text: frag, ToolCallID: block.ID, ToolName: block.Name}, &a.msg)
	}
}

// callFor finds the call a fragment belongs to, by index. A fragment that
// carries an id different from the one already at its index starts a new call:
// a few providers send every call with index 0 and tell them apart only by id.
func (a *assembler) callFor(d *toolCallDelta) *callState {
	for i := len(a.calls) - 1; i >= 0; i-- {
		st := &a.calls[i]
		if st.index != d.Index {
			continue
		}
		if id := a.msg.Content[st.block].ID; d.ID != "" && id != "" && d.ID != id {
			break
		}
		return st
	}
	a.calls = append(a.calls, callState{index: d.Index, block: len(a.msg.Content)})
	a.msg.Content = append(a.msg.Content, llm.Content{Type: llm.ContentToolCall})
	return &a.calls[len(a.calls)-1]
}

func (a *assembler) setUsage(u *wireUsage) {
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = u.PromptTokensDetails.CachedTokens
	}
	a.msg.Usage = &llm.Usage{
		Input:       u.PromptTokens - cached,
		Output:      u.CompletionTokens,
		CacheRead:   cached,
		TotalTokens: u.TotalTokens,
	}
}

// message returns the assembled message with its blocks in final order. It
// shares no mutable state with the assembler.
func (a *assembler) message() llm.Message {
	m := a.msg
	m.Content = make([]llm.Content, 0, len(a.msg.Content))
	if a.thinkIdx >= 0 {
		m.Content = append(m.Content, a.msg.Content[a.thinkIdx])
	}
	if a.textIdx >= 0 {
		m.Content = append(m.Content, a.msg.Content[a.textIdx])
	}
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(x, y callState) int { return x.index - y.index })
	for n, st := range calls {
		block := a.msg.Content[st.block]
		block.Arguments, block.RawArguments = llm.ToolArguments(st.args)
		if block.ID == "" {
			// The tool result must name its call; invent an id the provider
			// never saw, which is all it needs to pair them.
			block.ID = fmt.Sprintf("call_%d_%d", a.msg.Timestamp, n)
		}
		m.Content = append(m.Content, block)
	}
	return m
}

// stopReason maps the finish reason. It returns an error for finish reasons
// that mean the reply failed.
func (a *assembler) stopReason() (llm.StopReason, *llm.Error) {
	switch a.finish {
	case "length", "max_tokens":
		return llm.StopReasonLength, nil
	case "tool_calls", "function_call", "tool_use":
		return llm.StopReasonToolUse, nil
	case "content_filter":
		return llm.StopReasonError, &llm.Error{Kind: llm.ErrorProvider, Code: "content_filter",
			Message: "the provider's content filter stopped the reply"}
	case "model_context_window_exceeded":
		return llm.StopReasonError, &llm.Error{Kind: llm.ErrorProvider, Code: "model_context_window_exceeded",
			Message: "the prompt exceeds the model's context window", ContextOverflow: true}
	case "error":
		return llm.StopReasonError, &llm.Error{Kind: llm.ErrorProvider, Message: "the provider ended the reply with an error"}
	}
	// "stop" and the spellings of it other servers use ("end", "eos", …). Sloppy
	// servers say "stop" after tool calls: the calls decide.
	if len(a.calls) > 0 {
		return llm.StopReasonToolUse, nil
	}
	return llm.StopReasonStop, nil
}
