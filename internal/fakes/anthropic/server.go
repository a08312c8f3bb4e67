// Package anthropicfake is a scriptable Anthropic Messages API server on
// 127.0.0.1 for tests, strict the way the real API is: it answers only a
// streaming POST /v1/messages that carries its key (x-api-key or a bearer token),
// anthropic-version and a JSON body the real API would accept — tool results
// paired with the tool_use blocks just before them, ids of the allowed
// alphabet, no empty text blocks, at most four cache_control breakpoints, a
// thinking budget of at least 1024 below max_tokens. Anything else gets the
// real API's 400 invalid_request_error, so a client bug fails a test the way it
// would fail in production.
//
// Replies are streamed with the real event sequence: message_start,
// content_block_start / content_block_delta (text_delta, thinking_delta,
// signature_delta, input_json_delta) / content_block_stop, a ping, message_delta
// with the stop reason and usage, message_stop. Scripts are queued with Push
// (consumed in order) or computed by Handle; with neither, the server answers
// 500 api_error naming the missing script. Every request is recorded before its
// script plays. All methods are safe for concurrent use.
package anthropicfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Server is a running fake. Create it with New.
type Server struct {
	http *httptest.Server

	mu       sync.Mutex
	handler  func(Request) Response
	queue    []Response
	requests []Request
	changed  chan struct{}
	apiKey   string
	models   []string
}

// New starts a server and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.serveMessages)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path)
	})
	s.http = httptest.NewServer(mux)
	t.Cleanup(s.http.Close)
	return s
}

// URL is the API base (without /v1), as anthropic.Config.BaseURL takes it.
func (s *Server) URL() string { return s.http.URL }

// RequireAPIKey makes requests without this x-api-key fail with 401.
func (s *Server) RequireAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// SetModels sets the ids GET /v1/models lists (default: none).
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), ids...)
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	data := make([]map[string]any, 0, len(s.models))
	for _, id := range s.models {
		data = append(data, map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"})
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "has_more": false})
}

// Push queues responses for the next requests, in order.
func (s *Server) Push(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Handle answers requests the queue does not.
func (s *Server) Handle(fn func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = fn
}

// Requests returns the valid requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitRequests waits until n requests have arrived, or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			out := append([]Request(nil), s.requests...)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	switch {
	case r.Header.Get("anthropic-version") == "":
		writeError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	case !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		writeError(w, http.StatusBadRequest, "invalid_request_error", "content-type must be application/json")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, problem := decodeRequest(body)
	if problem != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", problem)
		return
	}
	req.Header = r.Header.Clone()
	s.mu.Lock()
	req.Seq = len(s.requests) + 1
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	var resp Response
	switch {
	case len(s.queue) > 0:
		resp, s.queue = s.queue[0], s.queue[1:]
	case s.handler != nil:
		h := s.handler
		s.mu.Unlock()
		resp = h(req)
		s.mu.Lock()
	default:
		resp = HTTPError(http.StatusInternalServerError, "api_error", fmt.Sprintf("anthropicfake: no script for request %d", req.Seq))
	}
	s.mu.Unlock()
	resp.play(w, r, req)
}

// authorized checks the key, which the API takes as x-api-key or, as the Go
// SDK v2 sends it, as a bearer token.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.apiKey
	s.mu.Unlock()
	sent := r.Header.Get("x-api-key")
	if sent == "" {
		sent, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	switch {
	case sent == "" && key != "":
		writeError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return false
	case key != "" && sent != key:
		writeError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return false
	}
	return true
}

// Request is one accepted request, decoded, with its raw body.
type Request struct {
	Seq       int
	Model     string
	MaxTokens int
	// System is the system field as sent (a string or an array of blocks).
	System   json.RawMessage
	Messages []Message
	Tools    []Tool
	Thinking *ThinkingConfig
	Header   http.Header
	Body     []byte
}

// Message is one message of a request.
type Message struct {
	Role    string
	Content []Block
}

// Block is one content block of a request message.
type Block struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result: Content holds its blocks (a string content becomes one text block).
	ToolUseID string  `json:"tool_use_id,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`
	Content   []Block `json:"-"`
	// image
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source,omitempty"`
	// thinking / redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`

	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// ThinkingConfig is the request's extended-thinking setting.
type ThinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

// Text joins the message's text blocks.
func (m Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// LastMessage returns the request's last message, or a zero Message.
func (r Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// CacheBreakpoints counts the cache_control markers of the request: on tools,
// system blocks and message blocks.
func (r Request) CacheBreakpoints() int {
	var wire struct {
		System json.RawMessage `json:"system"`
	}
	_ = json.Unmarshal(r.Body, &wire)
	var system []Block
	_ = json.Unmarshal(wire.System, &system)
	n := 0
	for _, t := range r.Tools {
		if len(t.CacheControl) > 0 {
			n++
		}
	}
	for _, b := range system {
		if len(b.CacheControl) > 0 {
			n++
		}
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if len(b.CacheControl) > 0 {
				n++
			}
			for _, c := range b.Content {
				if len(c.CacheControl) > 0 {
					n++
				}
			}
		}
	}
	return n
}

var toolIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// decodeRequest decodes and validates a body; a non-empty problem is the
// real API's wording where we know it.
func decodeRequest(body []byte) (Request, string) {
	var wire struct {
		Model     string          `json:"model"`
		MaxTokens *int            `json:"max_tokens"`
		Stream    bool            `json:"stream"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools    []Tool          `json:"tools"`
		Thinking *ThinkingConfig `json:"thinking"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return Request{}, "invalid JSON body: " + err.Error()
	}
	req := Request{Model: wire.Model, System: wire.System, Tools: wire.Tools, Thinking: wire.Thinking, Body: body}
	switch {
	case wire.Model == "":
		return req, "model: Field required"
	case wire.MaxTokens == nil:
		return req, "max_tokens: Field required"
	case *wire.MaxTokens < 1:
		return req, "max_tokens: Input should be greater than or equal to 1"
	case !wire.Stream:
		return req, "anthropicfake: only streaming requests are scripted (stream: true)"
	case len(wire.Messages) == 0:
		return req, "messages: at least one message is required"
	}
	req.MaxTokens = *wire.MaxTokens
	if t := wire.Thinking; t != nil && t.Type == "enabled" {
		if t.BudgetTokens < 1024 {
			return req, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
		}
		if t.BudgetTokens >= req.MaxTokens {
			return req, "`max_tokens` must be greater than `thinking.budget_tokens`"
		}
	}
	for i, t := range wire.Tools {
		if t.Name == "" || len(t.InputSchema) == 0 {
			return req, fmt.Sprintf("tools.%d: name and input_schema are required", i)
		}
	}
	for i, wm := range wire.Messages {
		if wm.Role != "user" && wm.Role != "assistant" {
			return req, fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && wm.Role != "user" {
			return req, "messages: first message must use the \"user\" role"
		}
		blocks, problem := decodeContent(wm.Content, fmt.Sprintf("messages.%d.content", i))
		if problem != "" {
			return req, problem
		}
		req.Messages = append(req.Messages, Message{Role: wm.Role, Content: blocks})
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" && !opensWithThinking(req.Messages) {
		return req, "messages: Expected `thinking` or `redacted_thinking`, but found another block. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceding the lastmost set of `tool_use` and `tool_result` blocks)."
	}
	if p := checkToolPairs(req.Messages); p != "" {
		return req, p
	}
	if n := req.CacheBreakpoints(); n > 4 {
		return req, fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", n)
	}
	return req, ""
}

func decodeContent(raw json.RawMessage, where string) ([]Block, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, where + ": text content blocks must be non-empty"
		}
		return []Block{{Type: "text", Text: s}}, ""
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, where + ": must be a non-empty string or array of blocks"
	}
	out := make([]Block, 0, len(items))
	for j, it := range items {
		at := fmt.Sprintf("%s.%d", where, j)
		var b Block
		if err := json.Unmarshal(it, &b); err != nil {
			return nil, at + ": " + err.Error()
		}
		switch b.Type {
		case "text":
			if b.Text == "" {
				return nil, at + ": text content blocks must be non-empty"
			}
		case "image":
			if b.Source == nil || b.Source.Type != "base64" || b.Source.Data == "" || !strings.HasPrefix(b.Source.MediaType, "image/") {
				return nil, at + ".source: a base64 image with an image/* media_type is required"
			}
		case "tool_use":
			if !toolIDPattern.MatchString(b.ID) {
				return nil, fmt.Sprintf("%s.id: String should match pattern '^[a-zA-Z0-9_-]+$'", at)
			}
			if len(b.Input) == 0 || b.Input[0] != '{' {
				return nil, at + ".input: Input should be a valid dictionary"
			}
		case "tool_result":
			var tr struct {
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(it, &tr)
			if len(tr.Content) > 0 {
				inner, p := decodeContent(tr.Content, at+".content")
				if p != "" {
					return nil, p
				}
				b.Content = inner
			}
		case "thinking":
			if b.Signature == "" {
				return nil, at + ".signature: Field required"
			}
		case "redacted_thinking":
			if b.Data == "" {
				return nil, at + ".data: Field required"
			}
		default:
			return nil, fmt.Sprintf("%s.type: unknown block type %q", at, b.Type)
		}
		out = append(out, b)
	}
	return out, ""
}

// opensWithThinking checks the rule for thinking requests: when the
// conversation ends with tool results, the assistant turn they answer starts
// with a thinking block.
func opensWithThinking(msgs []Message) bool {
	n := len(msgs)
	if n < 2 || msgs[n-2].Role != "assistant" {
		return true
	}
	results := false
	for _, b := range msgs[n-1].Content {
		results = results || b.Type == "tool_result"
	}
	if !results {
		return true
	}
	first := msgs[n-2].Content[0].Type
	return first == "thinking" || first == "redacted_thinking"
}

// checkToolPairs enforces the pairing rule: every tool_use of an assistant
// message has its tool_result in the next message, and every tool_result
// answers a tool_use of the message just before.
func checkToolPairs(msgs []Message) string {
	for i, m := range msgs {
		var prevUses map[string]bool
		if i > 0 && msgs[i-1].Role == "assistant" {
			prevUses = map[string]bool{}
			for _, b := range msgs[i-1].Content {
				if b.Type == "tool_use" {
					prevUses[b.ID] = true
				}
			}
		}
		answered := map[string]bool{}
		for _, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			if m.Role != "user" || !prevUses[b.ToolUseID] {
				return fmt.Sprintf("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, b.ToolUseID)
			}
			answered[b.ToolUseID] = true
		}
		if m.Role != "assistant" {
			continue
		}
		var missing []string
		for _, b := range m.Content {
			if b.Type != "tool_use" {
				continue
			}
			next := map[string]bool{}
			if i+1 < len(msgs) {
				for _, nb := range msgs[i+1].Content {
					if nb.Type == "tool_result" {
						next[nb.ToolUseID] = true
					}
				}
			}
			if !next[b.ID] && i+1 < len(msgs) {
				missing = append(missing, b.ID)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
	}
	return ""
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fake")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
}
