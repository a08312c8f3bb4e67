package anthropic

import (
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// assembler builds the assistant message from stream events. Blocks keep the
// order the model opened them in (thinking, text and tool use may alternate),
// so a Delta's Index is the block's index in the final message too.
type assembler struct {
	msg     llm.Message
	fn      llm.StreamFunc
	blocks  map[int64]*block // by the stream's content-block index
	usage   llm.Usage
	haveUse bool
	reason  string
	stopped bool
}

type block struct {
	at   int // index in msg.Content
	text strings.Builder
	args []byte
}

func newAssembler(provider, model string, timestamp int64, fn llm.StreamFunc) *assembler {
	return &assembler{
		msg:    llm.Message{Role: llm.RoleAssistant, Provider: provider, Model: model, Timestamp: timestamp},
		fn:     fn,
		blocks: map[int64]*block{},
	}
}

func (a *assembler) add(ev anthropic.MessageStreamEventUnion) *llm.Error {
	switch ev.Type {
	case "message_start":
		if ev.Message.Model != "" {
			a.msg.Model = string(ev.Message.Model)
		}
		u := ev.Message.Usage
		a.usage = llm.Usage{Input: int(u.InputTokens), Output: int(u.OutputTokens),
			CacheRead: int(u.CacheReadInputTokens), CacheWrite: int(u.CacheCreationInputTokens)}
		a.haveUse = true
	case "content_block_start":
		cb := ev.ContentBlock
		c := llm.Content{}
		switch cb.Type {
		case "text":
			c = llm.Content{Type: llm.ContentText, Text: cb.Text}
		case "thinking":
			c = llm.Content{Type: llm.ContentThinking, Thinking: cb.Thinking, Signature: cb.Signature}
		case "redacted_thinking":
			c = llm.Content{Type: llm.ContentThinking, Data: cb.Data}
		case "tool_use":
			c = llm.Content{Type: llm.ContentToolCall, ID: cb.ID, Name: cb.Name}
		default:
			return nil // server tools and future block types: not ours to replay
		}
		a.blocks[ev.Index] = &block{at: len(a.msg.Content)}
		a.msg.Content = append(a.msg.Content, c)
		if c.Text != "" {
			a.blocks[ev.Index].text.WriteString(c.Text)
		}
	case "content_block_delta":
		b, ok := a.blocks[ev.Index]
		if !ok {
			if ev.Delta.Type == "citations_delta" {
				return nil
			}
			return &llm.Error{Kind: llm.ErrorMalformed, Message: "a delta for a content block that was never started"}
		}
		c := &a.msg.Content[b.at]
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			b.text.WriteString(d.Text)
			c.Text = b.text.String()
			a.emit(llm.Delta{Kind: llm.DeltaText, Index: b.at, Text: d.Text})
		case "thinking_delta":
			b.text.WriteString(d.Thinking)
			c.Thinking = b.text.String()
			a.emit(llm.Delta{Kind: llm.DeltaThinking, Index: b.at, Text: d.Thinking})
		case "signature_delta":
			c.Signature += d.Signature
		case "input_json_delta":
			b.args = append(b.args, d.PartialJSON...)
			c.Arguments = b.args
			a.emit(llm.Delta{Kind: llm.DeltaToolCall, Index: b.at, Text: d.PartialJSON, ToolCallID: c.ID, ToolName: c.Name})
		}
	case "content_block_stop":
		if b, ok := a.blocks[ev.Index]; ok && a.msg.Content[b.at].Type == llm.ContentToolCall {
			c := &a.msg.Content[b.at]
			c.Arguments, c.RawArguments = llm.ToolArguments(b.args)
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.reason = string(ev.Delta.StopReason)
		}
		// message_delta's usage is cumulative; output tokens are only final here.
		u := ev.Usage
		a.usage.Output = int(u.OutputTokens)
		if u.InputTokens > 0 {
			a.usage.Input = int(u.InputTokens)
		}
		if u.CacheReadInputTokens > 0 {
			a.usage.CacheRead = int(u.CacheReadInputTokens)
		}
		if u.CacheCreationInputTokens > 0 {
			a.usage.CacheWrite = int(u.CacheCreationInputTokens)
		}
		a.haveUse = true
	case "message_stop":
		a.stopped = true
	}
	return nil
}

func (a *assembler) emit(d llm.Delta) {
	if a.fn != nil {
		a.fn(d, &a.msg)
	}
}

// message returns the assembled message; it shares nothing mutable with the
// assembler. Tool calls cut before their content_block_stop get their
// arguments settled here.
func (a *assembler) message() llm.Message {
	m := a.msg
	m.Content = make([]llm.Content, len(a.msg.Content))
	copy(m.Content, a.msg.Content)
	for _, b := range a.blocks {
		c := &m.Content[b.at]
		if c.Type == llm.ContentToolCall && c.RawArguments == "" {
			c.Arguments, c.RawArguments = llm.ToolArguments(b.args)
		}
	}
	if a.haveUse {
		u := a.usage
		m.Usage = &u
	}
	return m
}

func (a *assembler) failed(err error) (llm.Message, error) {
	return llm.Failed(a.message(), err)
}

// stopReason maps Anthropic's stop_reason.
func (a *assembler) stopReason() (llm.StopReason, *llm.Error) {
	switch a.reason {
	case "max_tokens":
		return llm.StopReasonLength, nil
	case "tool_use":
		return llm.StopReasonToolUse, nil
	case "refusal":
		return llm.StopReasonError, &llm.Error{Kind: llm.ErrorProvider, Code: "refusal",
			Message: "the model declined to continue (refusal)"}
	case "model_context_window_exceeded":
		return llm.StopReasonError, &llm.Error{Kind: llm.ErrorProvider, Code: "model_context_window_exceeded",
			Message: "the reply reached the model's context window", ContextOverflow: true}
	}
	// end_turn, stop_sequence, pause_turn: the calls decide, as for OpenAI.
	for _, c := range a.msg.Content {
		if c.Type == llm.ContentToolCall {
			return llm.StopReasonToolUse, nil
		}
	}
	return llm.StopReasonStop, nil
}
