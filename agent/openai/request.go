package openai

import (
	"encoding/json"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// buildRequest converts an llm.Request into a streaming chat-completions request.
func buildRequest(req llm.Request) goopenai.ChatCompletionRequest {
	cr := goopenai.ChatCompletionRequest{
		Model:         req.Model,
		Messages:      convertMessages(req.SystemPrompt, req.Messages),
		Stream:        true,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	if req.MaxTokens > 0 {
		// max_tokens is what nearly every OpenAI-compatible server accepts
		// (vLLM, llama.cpp, Ollama, Groq, OpenRouter, DeepSeek, LM Studio; older
		// versions know no other name). Only OpenAI's reasoning models refuse it,
		// and go-openai rejects it for them before sending: those get
		// max_completion_tokens.
		if usesMaxCompletionTokens(req.Model) {
			cr.MaxCompletionTokens = req.MaxTokens
		} else {
			cr.MaxTokens = req.MaxTokens //nolint:staticcheck // deprecated upstream, but the name OpenAI-compatible servers accept (see above)
		}
	}
	if effort := reasoningEffort(req.Reasoning); effort != "" {
		cr.ReasoningEffort = effort
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(strings.TrimSpace(string(params))) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		cr.Tools = append(cr.Tools, goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	return cr
}

// reasoningEffort maps a reasoning level to OpenAI's reasoning_effort. "" and
// "off" send nothing: most OpenAI-compatible servers reject the field, and
// OpenAI's reasoning models cannot switch reasoning off.
func reasoningEffort(level string) string {
	switch level {
	case llm.ReasoningMinimal, llm.ReasoningLow, llm.ReasoningMedium, llm.ReasoningHigh:
		return level
	}
	return ""
}

// usesMaxCompletionTokens mirrors the model families go-openai's request
// validator refuses max_tokens for.
func usesMaxCompletionTokens(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

func convertMessages(system string, msgs []llm.Message) []goopenai.ChatCompletionMessage {
	out := make([]goopenai.ChatCompletionMessage, 0, len(msgs)+1)
	if system != "" {
		out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: system})
	}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case llm.RoleAssistant:
			if am, ok := assistantMessage(m); ok {
				out = append(out, am)
			}
		case llm.RoleToolResult:
			// OpenAI's tool messages carry text only: the images of a run of
			// tool results follow them in one user message.
			var images []goopenai.ChatMessagePart
			for ; i < len(msgs) && msgs[i].Role == llm.RoleToolResult; i++ {
				tm, imgs := toolMessage(msgs[i])
				out = append(out, tm)
				images = append(images, imgs...)
			}
			i--
			if len(images) > 0 {
				parts := append([]goopenai.ChatMessagePart{{
					Type: goopenai.ChatMessagePartTypeText, Text: "Attached image(s) from tool result:",
				}}, images...)
				out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, MultiContent: parts})
			}
		default:
			// user; custom, summary and bash messages should arrive converted
			// (see llm.Request), and are sent as user content if they do not.
			out = append(out, userMessage(m))
		}
	}
	return out
}

func userMessage(m llm.Message) goopenai.ChatCompletionMessage {
	content := llm.UserContent(m)
	msg := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser}
	if len(content) == 1 && content[0].Type == llm.ContentText {
		msg.Content = content[0].Text
		return msg
	}
	for _, c := range content {
		switch c.Type {
		case llm.ContentText:
			msg.MultiContent = append(msg.MultiContent, goopenai.ChatMessagePart{
				Type: goopenai.ChatMessagePartTypeText, Text: c.Text,
			})
		case llm.ContentImage:
			msg.MultiContent = append(msg.MultiContent, imagePart(c))
		}
	}
	return msg
}

func imagePart(c llm.Content) goopenai.ChatMessagePart {
	return goopenai.ChatMessagePart{
		Type:     goopenai.ChatMessagePartTypeImageURL,
		ImageURL: &goopenai.ChatMessageImageURL{URL: "data:" + c.MimeType + ";base64," + c.Data},
	}
}

// assistantMessage sends text and tool calls; thinking stays home. An assistant
// message with neither (an aborted or failed reply) is skipped: providers reject
// empty assistant messages.
func assistantMessage(m llm.Message) (goopenai.ChatCompletionMessage, bool) {
	msg := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant}
	var text strings.Builder
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			text.WriteString(c.Text)
		case llm.ContentToolCall:
			msg.ToolCalls = append(msg.ToolCalls, goopenai.ToolCall{
				ID:   c.ID,
				Type: goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{
					Name:      c.Name,
					Arguments: argumentsForWire(c),
				},
			})
		}
	}
	msg.Content = text.String()
	return msg, msg.Content != "" || len(msg.ToolCalls) > 0
}

// argumentsForWire sends back what the model wrote: the kept raw text when
// storage would have changed it, and arguments stored as a JSON string
// (because the model sent invalid JSON, see llm.ToolArguments) as that text.
func argumentsForWire(c llm.Content) string {
	args := c.WireArguments()
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return "{}"
	}
	if trimmed[0] == '"' {
		var raw string
		if json.Unmarshal([]byte(trimmed), &raw) == nil {
			return raw
		}
	}
	return trimmed
}

func toolMessage(m llm.Message) (goopenai.ChatCompletionMessage, []goopenai.ChatMessagePart) {
	var texts []string
	var images []goopenai.ChatMessagePart
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			texts = append(texts, c.Text)
		case llm.ContentImage:
			images = append(images, imagePart(c))
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" {
		// Providers reject empty tool messages.
		text = "(no output)"
		if len(images) > 0 {
			text = "(see attached image)"
		}
	}
	return goopenai.ChatCompletionMessage{
		Role:       goopenai.ChatMessageRoleTool,
		Content:    text,
		ToolCallID: m.ToolCallID,
	}, images
}
