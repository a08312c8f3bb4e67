package anthropicfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// Response is a scripted answer: an HTTP error, or a stream of content blocks
// that may end in an error event or be cut.
type Response struct {
	status  int // 0: a 200 stream
	errType string
	errMsg  string
	header  http.Header

	blocks     []ReplyBlock
	stopReason string
	usage      Usage
	streamErr  *[2]string // an error event after the blocks: type, message
	cut        bool       // end the body after the blocks, without message_delta / message_stop
	model      string
}

// ReplyBlock is one content block of a streamed reply.
type ReplyBlock struct {
	kind      string // text, thinking, redacted_thinking, tool_use
	text      string
	signature string
	id, name  string
}

// Usage is what message_start and message_delta report.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int
}

// Text is a text block, streamed in a few text_delta pieces.
func Text(s string) ReplyBlock { return ReplyBlock{kind: "text", text: s} }

// Thinking is a thinking block with its signature (thinking_delta pieces,
// then one signature_delta).
func Thinking(text, signature string) ReplyBlock {
	return ReplyBlock{kind: "thinking", text: text, signature: signature}
}

// RedactedThinking is a redacted_thinking block carrying data.
func RedactedThinking(data string) ReplyBlock {
	return ReplyBlock{kind: "redacted_thinking", text: data}
}

// ToolUse is a tool_use block whose input (JSON text, sent as written) streams
// in input_json_delta pieces.
func ToolUse(id, name, input string) ReplyBlock {
	return ReplyBlock{kind: "tool_use", id: id, name: name, text: input}
}

// Reply streams blocks; the stop reason is tool_use when a block is one,
// else end_turn.
func Reply(blocks ...ReplyBlock) Response {
	r := Response{blocks: blocks, stopReason: "end_turn", usage: Usage{Input: 10, Output: 5}}
	for _, b := range blocks {
		if b.kind == "tool_use" {
			r.stopReason = "tool_use"
		}
	}
	return r
}

// WithUsage sets the usage the stream reports.
func (r Response) WithUsage(u Usage) Response { r.usage = u; return r }

// WithStop sets the stop reason (max_tokens, refusal, …).
func (r Response) WithStop(reason string) Response { r.stopReason = reason; return r }

// WithModel sets the model message_start names (default: the request's).
func (r Response) WithModel(m string) Response { r.model = m; return r }

// WithHeader adds a response header (retry-after, …).
func (r Response) WithHeader(k, v string) Response {
	h := http.Header{}
	for key, vs := range r.header {
		h[key] = append([]string(nil), vs...)
	}
	h.Add(k, v)
	r.header = h
	return r
}

// ThenError ends the stream after its blocks with an error event, as the
// real API does when it is overloaded mid-reply.
func (r Response) ThenError(typ, msg string) Response { r.streamErr = &[2]string{typ, msg}; return r }

// ThenCut ends the body after the blocks without message_stop.
func (r Response) ThenCut() Response { r.cut = true; return r }

// HTTPError answers with status and Anthropic's error JSON.
func HTTPError(status int, typ, msg string) Response {
	return Response{status: status, errType: typ, errMsg: msg}
}

// Overloaded is the 529 overloaded_error Anthropic sends under load.
func Overloaded() Response { return HTTPError(529, "overloaded_error", "Overloaded") }

// RateLimited is a 429 rate_limit_error with retry-after seconds.
func RateLimited(retryAfter int) Response {
	return HTTPError(http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit").
		WithHeader("retry-after", fmt.Sprint(retryAfter))
}

// PromptTooLong is the 400 Anthropic sends for a prompt past the window.
func PromptTooLong() Response {
	return HTTPError(http.StatusBadRequest, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
}

func (r Response) play(w http.ResponseWriter, req *http.Request, q Request) {
	for k, vs := range r.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if r.status != 0 {
		writeError(w, r.status, r.errType, r.errMsg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(event string, data any) bool {
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return req.Context().Err() == nil
	}
	model := r.model
	if model == "" {
		model = q.Model
	}
	u := r.usage
	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", q.Seq), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": u.Input, "output_tokens": 1,
			"cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheWrite},
	}}) {
		return
	}
	for i, b := range r.blocks {
		var start map[string]any
		switch b.kind {
		case "text":
			start = map[string]any{"type": "text", "text": ""}
		case "thinking":
			start = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
		case "redacted_thinking":
			start = map[string]any{"type": "redacted_thinking", "data": b.text}
		case "tool_use":
			start = map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}
		}
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start}) {
			return
		}
		if i == 0 && !send("ping", map[string]string{"type": "ping"}) {
			return
		}
		var deltas []map[string]any
		switch b.kind {
		case "text":
			for _, p := range pieces(b.text, 3) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
			}
		case "thinking":
			for _, p := range pieces(b.text, 3) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": p})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": b.signature})
		case "tool_use":
			for _, p := range pieces(b.text, 3) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		}
		for _, d := range deltas {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}) {
				return
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if r.streamErr != nil {
		send("error", map[string]any{"type": "error", "error": map[string]string{"type": r.streamErr[0], "message": r.streamErr[1]}})
		return
	}
	if r.cut {
		return
	}
	if !send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": r.stopReason, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": u.Output, "input_tokens": u.Input,
			"cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheWrite}}) {
		return
	}
	send("message_stop", map[string]string{"type": "message_stop"})
}

// pieces cuts s into at most n non-empty pieces without splitting a rune
// (the empty string gives one empty piece).
func pieces(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	size := max((len(s)+n-1)/n, 1)
	var out []string
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
