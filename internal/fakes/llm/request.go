package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Request is one decoded chat-completions request as the server received it.
// Every Request handed out is an independent copy: tests may keep and modify it.
type Request struct {
	// Seq numbers the chat-completions requests from 1 in the order they arrived.
	Seq int

	Model               string
	Messages            []Message
	Tools               []Tool
	MaxTokens           int
	MaxCompletionTokens int
	Stream              bool
	// IncludeUsage mirrors stream_options.include_usage; StreamOptions says whether
	// stream_options was sent at all.
	StreamOptions bool
	IncludeUsage  bool

	Header http.Header // the request headers (Authorization included)
	Body   []byte      // the raw JSON body
}

// Message is one message of a request. Content holds a plain string content, or
// the text parts of an array content joined with newlines; Parts holds the array
// form as sent.
type Message struct {
	Role       string
	Content    string
	Parts      []Part
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
}

// Part is one element of an array content: type "text" with Text, or type
// "image_url" with ImageURL (typically a data: URL).
type Part struct {
	Type     string
	Text     string
	ImageURL string
}

// ToolCall is a tool call inside an assistant message of the request.
type ToolCall struct {
	ID        string
	Type      string
	Name      string
	Arguments string
}

// Tool is a function tool offered to the model.
type Tool struct {
	Type        string
	Name        string
	Description string
	Parameters  json.RawMessage
}

// LastMessage returns the last message of the request, or a zero Message.
func (r Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Images returns the image URLs of the message's parts, in order.
func (m Message) Images() []string {
	var urls []string
	for _, p := range m.Parts {
		if p.Type == "image_url" {
			urls = append(urls, p.ImageURL)
		}
	}
	return urls
}

// wireRequest is the JSON shape of a chat-completions request.
type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// decodeRequest turns a raw body into a Request. It is strict about the shape
// OpenAI documents, so a client sending something else fails the test that uses it.
func decodeRequest(body []byte, header http.Header, seq int) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("decode request body: %w", err)
	}
	r := Request{
		Seq:                 seq,
		Model:               w.Model,
		MaxTokens:           w.MaxTokens,
		MaxCompletionTokens: w.MaxCompletionTokens,
		Stream:              w.Stream,
		Header:              header.Clone(),
		Body:                append([]byte(nil), body...),
	}
	if w.StreamOptions != nil {
		r.StreamOptions = true
		r.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	for i, wm := range w.Messages {
		m := Message{Role: wm.Role, ToolCallID: wm.ToolCallID, Name: wm.Name}
		if err := decodeContent(wm.Content, &m); err != nil {
			return Request{}, fmt.Errorf("message %d: %w", i, err)
		}
		for _, tc := range wm.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, ToolCall{
				ID: tc.ID, Type: tc.Type, Name: tc.Function.Name, Arguments: tc.Function.Arguments,
			})
		}
		r.Messages = append(r.Messages, m)
	}
	for _, wt := range w.Tools {
		r.Tools = append(r.Tools, Tool{
			Type:        wt.Type,
			Name:        wt.Function.Name,
			Description: wt.Function.Description,
			Parameters:  wt.Function.Parameters,
		})
	}
	return r, nil
}

// decodeContent accepts the two content forms: a string, or an array of parts.
func decodeContent(raw json.RawMessage, m *Message) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		return json.Unmarshal(raw, &m.Content)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("content is neither a string nor an array of parts: %w", err)
	}
	var texts []string
	for _, p := range parts {
		part := Part{Type: p.Type, Text: p.Text}
		if p.ImageURL != nil {
			part.ImageURL = p.ImageURL.URL
		}
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
		m.Parts = append(m.Parts, part)
	}
	m.Content = strings.Join(texts, "\n")
	return nil
}
