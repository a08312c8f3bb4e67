package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// defaultMaxTokens is sent when the request names no limit: the API requires one.
const defaultMaxTokens = 8192

// thinkingBudgets are the thinking budgets of the reasoning levels, pi's values.
var thinkingBudgets = map[string]int{
	llm.ReasoningMinimal: 1024,
	llm.ReasoningLow:     2048,
	llm.ReasoningMedium:  8192,
	llm.ReasoningHigh:    16384,
}

// buildParams converts an llm.Request. provider is the client's provider name:
// thinking blocks are sent back only to the provider that signed them.
func buildParams(req llm.Request, provider string) anthropic.MessageNewParams {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	p := anthropic.MessageNewParams{
		Model:    anthropic.Model(req.Model),
		Messages: convertMessages(req.Messages, provider),
	}
	if budget, ok := thinkingBudgets[req.Reasoning]; ok && thinkingAllowed(p.Messages) {
		// The budget counts against max_tokens; the reply keeps its own limit
		// on top, as pi does.
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}}
		maxTokens += budget
	}
	p.MaxTokens = int64(maxTokens)
	if req.SystemPrompt != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.SystemPrompt, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for i, t := range req.Tools {
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: inputSchema(t.Parameters)}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		if i == len(req.Tools)-1 {
			tp.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	markLastBlock(p.Messages)
	return p
}

// thinkingAllowed reports whether thinking may be enabled for this request.
// The API requires that, with thinking on, the assistant turn whose tool
// results end the conversation opens with a thinking block; a turn written by
// another provider (the model was switched in the middle of a tool loop) has
// none, so that request goes without thinking and the next turn has it again.
func thinkingAllowed(msgs []anthropic.MessageParam) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].OfUser == nil || msgs[n-2].OfAssistant == nil {
		return true
	}
	results := false
	for _, b := range msgs[n-1].OfUser.Content {
		results = results || b.OfToolResult != nil
	}
	if !results {
		return true
	}
	blocks := msgs[n-2].OfAssistant.Content
	return len(blocks) > 0 && (blocks[0].OfThinking != nil || blocks[0].OfRedactedThinking != nil)
}

// inputSchema splits a JSON schema into the SDK's fields; keys it has no field
// for travel as extra fields.
func inputSchema(raw json.RawMessage) anthropic.ToolInputSchemaParam {
	var s anthropic.ToolInputSchemaParam
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		s.Properties = map[string]any{}
		return s
	}
	for k, v := range fields {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			_ = json.Unmarshal(v, &s.Required)
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s
}

// markLastBlock puts the conversation's cache breakpoint on the last block of
// the last message: the next request, which repeats all of it, reads it back.
func markLastBlock(msgs []anthropic.MessageParam) {
	if len(msgs) == 0 {
		return
	}
	var blocks []anthropic.ContentBlockParamUnion
	switch m := msgs[len(msgs)-1]; {
	case m.OfUser != nil:
		blocks = m.OfUser.Content
	case m.OfAssistant != nil:
		blocks = m.OfAssistant.Content
	}
	if len(blocks) == 0 {
		return
	}
	if cc := blocks[len(blocks)-1].GetCacheControl(); cc != nil {
		*cc = anthropic.NewCacheControlEphemeralParam()
	}
}

func convertMessages(msgs []llm.Message, provider string) []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case llm.RoleAssistant:
			if blocks := assistantBlocks(m, provider); len(blocks) > 0 {
				out = append(out, anthropic.NewAssistantMessage(blocks...))
			}
		case llm.RoleToolResult:
			// Every result of one assistant message goes in the next user
			// message: Anthropic pairs tool_result blocks with the tool_use
			// blocks of the message just before.
			var blocks []anthropic.ContentBlockParamUnion
			for ; i < len(msgs) && msgs[i].Role == llm.RoleToolResult; i++ {
				blocks = append(blocks, toolResultBlock(msgs[i]))
			}
			i--
			out = append(out, anthropic.NewUserMessage(blocks...))
		default:
			if blocks := userBlocks(m); len(blocks) > 0 {
				out = append(out, anthropic.NewUserMessage(blocks...))
			}
		}
	}
	return out
}

func userBlocks(m llm.Message) []anthropic.ContentBlockParamUnion {
	content := llm.UserContent(m)
	var blocks []anthropic.ContentBlockParamUnion
	for _, c := range content {
		switch c.Type {
		case llm.ContentText:
			// The API rejects empty text blocks.
			if strings.TrimSpace(c.Text) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(c.Text))
			}
		case llm.ContentImage:
			blocks = append(blocks, anthropic.NewImageBlockBase64(c.MimeType, c.Data))
		}
	}
	return blocks
}

// assistantBlocks sends text, tool use and, to the provider that signed it,
// thinking. Another provider's reasoning (or a thinking block without a
// signature) cannot be verified by Anthropic and stays home, as it does for
// OpenAI.
func assistantBlocks(m llm.Message, provider string) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentThinking:
			if m.Provider != provider {
				continue
			}
			switch {
			case c.Signature != "":
				blocks = append(blocks, anthropic.NewThinkingBlock(c.Signature, c.Thinking))
			case c.Thinking == "" && c.Data != "":
				blocks = append(blocks, anthropic.NewRedactedThinkingBlock(c.Data))
			}
		case llm.ContentText:
			if strings.TrimSpace(c.Text) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(c.Text))
			}
		case llm.ContentToolCall:
			blocks = append(blocks, anthropic.NewToolUseBlock(ToolUseID(c.ID), toolInput(c), c.Name))
		}
	}
	return blocks
}

// toolInput is the call's arguments as the model wrote them. Anthropic takes
// only an object: arguments that were not one (another provider's model sent
// broken JSON, which the agent already answered with an error) go as {}.
func toolInput(c llm.Content) json.RawMessage {
	args := strings.TrimSpace(c.WireArguments())
	if !strings.HasPrefix(args, "{") || !json.Valid([]byte(args)) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

func toolResultBlock(m llm.Message) anthropic.ContentBlockParamUnion {
	r := anthropic.ToolResultBlockParam{ToolUseID: ToolUseID(m.ToolCallID)}
	if m.IsError {
		r.IsError = param.NewOpt(true)
	}
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			if c.Text != "" {
				r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: c.Text}})
			}
		case llm.ContentImage:
			img := anthropic.NewImageBlockBase64(c.MimeType, c.Data)
			r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: img.OfImage})
		}
	}
	if len(r.Content) == 0 {
		r.Content = append(r.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: "(no output)"}})
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &r}
}

// ToolUseID makes a tool-call id Anthropic accepts (^[a-zA-Z0-9_-]{1,64}$).
// Other providers' ids may hold dots, colons or be longer ("functions.read:0"
// from Kimi); the mapping is deterministic, so a call and its result stay
// paired and every request spells them the same way.
func ToolUseID(id string) string {
	if id == "" {
		return "toolu_none"
	}
	b := []byte(id)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
