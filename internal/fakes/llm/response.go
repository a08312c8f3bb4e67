package llmfake

import (
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"
)

// Response is the script of one answer. A Response with Status >= 400 or a
// Body is an HTTP answer written as is (headers, status, body). Otherwise Steps
// are played: as server-sent events when the request asked to stream, or folded
// into one chat.completion JSON object when it did not.
type Response struct {
	Status int         // HTTP status; 0 means 200
	Header http.Header // extra response headers (Retry-After, retry-after-ms, …)
	Body   string      // a literal body; set for error answers
	// Model is the model name reported in chunks; empty means the request's model.
	Model string
	// ChunkDelay is waited before every step, as a slow model would.
	ChunkDelay time.Duration
	Steps      []Step
}

// WithHeader returns a copy of r that also sends the header key: value.
func (r Response) WithHeader(key, value string) Response {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	r.Header = h
	return r
}

// WithModel returns a copy of r that reports model as the model that answered.
func (r Response) WithModel(model string) Response {
	r.Model = model
	return r
}

// WithChunkDelay returns a copy of r that waits d before every step.
func (r Response) WithChunkDelay(d time.Duration) Response {
	r.ChunkDelay = d
	return r
}

// Step is one part of a scripted stream: one or more SSE events, a pause, or a
// transport action (cut, hang). Steps are built with the functions of this
// package and played in order.
type Step struct{ acts []act }

type actKind uint8

const (
	actContent actKind = iota + 1
	actReasoning
	actToolCall
	actFinish
	actUsage
	actDone
	actComment
	actRaw
	actError
	actDelay
	actCut
	actHang
	actEndless
	actAwait
)

type act struct {
	kind  actKind
	text  string // content, reasoning, arguments fragment, finish reason, comment, raw bytes
	index int    // tool call index
	id    string // tool call id
	name  string // tool call name
	usage TokenUsage
	err   apiError
	delay time.Duration
	gate  <-chan struct{}
}

// TokenUsage is the usage a stream reports in its final chunk.
type TokenUsage struct {
	Prompt     int // prompt_tokens, cached ones included as OpenAI counts them
	Completion int // completion_tokens
	Cached     int // prompt_tokens_details.cached_tokens
}

// Call is one tool call for ToolCalls and ToolCallReply.
type Call struct {
	ID, Name string
	Args     string // the complete JSON arguments; split into fragments when streamed
}

// Stream returns a streamed answer made of steps.
func Stream(steps ...Step) Response { return Response{Steps: steps} }

// TextReply is a complete streamed text answer: one chunk per argument, finish
// reason "stop", usage (10 prompt tokens, one completion token per chunk), [DONE].
func TextReply(chunks ...string) Response {
	return Stream(Content(chunks...), Finish("stop"), Usage(10, len(chunks), 0), Done())
}

// ToolCallReply is a complete streamed answer that calls tools: the calls'
// arguments split into fragments interleaved by index (see ToolCalls), finish
// reason "tool_calls", usage, [DONE].
func ToolCallReply(calls ...Call) Response {
	return Stream(ToolCalls(calls...), Finish("tool_calls"), Usage(10, 5*len(calls), 0), Done())
}

// HTTPError is an HTTP error answer with OpenAI's error JSON
// {"error":{"message","type","code"}}. An empty code is sent as null.
func HTTPError(status int, code, message string) Response {
	e := apiError{Message: message, Type: errorType(status, code)}
	if code != "" {
		e.Code = code
	}
	body, _ := json.Marshal(map[string]apiError{"error": e})
	return Response{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: string(body)}
}

// ContextOverflow is OpenAI's answer to a prompt that does not fit the window.
func ContextOverflow() Response {
	return HTTPError(http.StatusBadRequest, "context_length_exceeded",
		"This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. "+
			"Please reduce the length of the messages.")
}

// errorType picks the error type OpenAI sends alongside a code.
func errorType(status int, code string) string {
	switch {
	case code == "insufficient_quota":
		return "insufficient_quota"
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// Content streams each argument as one delta.content chunk.
func Content(chunks ...string) Step {
	var s Step
	for _, c := range chunks {
		s.acts = append(s.acts, act{kind: actContent, text: c})
	}
	return s
}

// Reasoning streams each argument as one delta.reasoning_content chunk.
func Reasoning(chunks ...string) Step {
	var s Step
	for _, c := range chunks {
		s.acts = append(s.acts, act{kind: actReasoning, text: c})
	}
	return s
}

// ToolCallFragment streams one delta.tool_calls element. The first fragment of a
// call carries its id and name; later ones only the index and an arguments piece.
func ToolCallFragment(index int, id, name, args string) Step {
	return Step{acts: []act{{kind: actToolCall, index: index, id: id, name: name, text: args}}}
}

// ToolCalls streams calls the way OpenAI does, and in the order that tests an
// assembler hardest: each call's first fragment carries id and name with empty
// arguments, then the arguments follow in three pieces per call, interleaved
// across calls by index (call 0 piece 1, call 1 piece 1, call 0 piece 2, …).
// Call i gets index i.
func ToolCalls(calls ...Call) Step {
	var s Step
	pieces := make([][]string, len(calls))
	for i, c := range calls {
		s.acts = append(s.acts, act{kind: actToolCall, index: i, id: c.ID, name: c.Name})
		pieces[i] = splitUTF8(c.Args, 3)
	}
	for round := 0; ; round++ {
		more := false
		for i := range calls {
			if round < len(pieces[i]) {
				s.acts = append(s.acts, act{kind: actToolCall, index: i, text: pieces[i][round]})
				more = true
			}
		}
		if !more {
			return s
		}
	}
}

// splitUTF8 cuts s into at most n non-empty pieces without splitting a rune.
func splitUTF8(s string, n int) []string {
	var out []string
	for len(s) > 0 && n > 0 {
		size := (len(s) + n - 1) / n
		for size < len(s) && !utf8.RuneStart(s[size]) {
			size++
		}
		out = append(out, s[:size])
		s = s[size:]
		n--
	}
	return out
}

// Finish sends a chunk with an empty delta and the finish reason ("stop",
// "length", "tool_calls", …). A stream without Finish is a truncated stream.
func Finish(reason string) Step { return Step{acts: []act{{kind: actFinish, text: reason}}} }

// Usage sends the usage chunk (empty choices). Like OpenAI, the server sends it
// only when the request asked for stream_options.include_usage.
func Usage(prompt, completion, cached int) Step {
	return Step{acts: []act{{kind: actUsage, usage: TokenUsage{Prompt: prompt, Completion: completion, Cached: cached}}}}
}

// Done sends "data: [DONE]".
func Done() Step { return Step{acts: []act{{kind: actDone}}} }

// Comment sends an SSE comment line (": text"), as proxies do to keep a
// connection alive.
func Comment(text string) Step { return Step{acts: []act{{kind: actComment, text: text}}} }

// KeepAlive sends a ": keep-alive" comment followed by an empty line.
func KeepAlive() Step { return Comment("keep-alive") }

// Raw writes s to the body verbatim: malformed events, odd framing.
func Raw(s string) Step { return Step{acts: []act{{kind: actRaw, text: s}}} }

// StreamError sends an error object inside the stream
// (data: {"error":{"message","type","code"}}) and ends the body, as providers do
// when they fail after the 200 went out. An empty code is sent as null.
func StreamError(code, typ, message string) Step {
	e := apiError{Message: message, Type: typ}
	if code != "" {
		e.Code = code
	}
	return Step{acts: []act{{kind: actError, err: e}}}
}

// Delay pauses for d, or less if the client goes away meanwhile (which counts
// as a disconnect).
func Delay(d time.Duration) Step { return Step{acts: []act{{kind: actDelay, delay: d}}} }

// Await flushes what was written and holds the stream until gate is closed
// (or the client goes away), so that a test can look at what the client
// shows mid-stream before letting it go on.
func Await(gate <-chan struct{}) Step { return Step{acts: []act{{kind: actAwait, gate: gate}}} }

// Cut flushes what was written and drops the connection without ending the
// chunked body: the client sees an unexpected EOF mid-body.
func Cut() Step { return Step{acts: []act{{kind: actCut}}} }

// Hang flushes the headers and what was written so far, then waits for the
// client to disconnect and records it (see Server.WaitDisconnects).
func Hang() Step { return Step{acts: []act{{kind: actHang}}} }

// Endless streams text as a content chunk every interval until the client
// disconnects, and records the disconnect.
func Endless(text string, every time.Duration) Step {
	return Step{acts: []act{{kind: actEndless, text: text, delay: every}}}
}

// apiError is OpenAI's error object.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}
