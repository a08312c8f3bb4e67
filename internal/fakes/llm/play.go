package llmfake

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// fakeCreated is the "created" stamp of every answer, fixed so bodies are stable.
const fakeCreated = 1700000000

// player plays one Response to one request.
type player struct {
	s     *Server
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	req   Request
	model string
	id    string
	first bool // the next choice chunk is the first, and carries the role
}

func (s *Server) play(w http.ResponseWriter, r *http.Request, req Request, resp Response) {
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if resp.Status >= 400 || resp.Body != "" {
		status := resp.Status
		if status == 0 {
			status = http.StatusOK
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, resp.Body)
		return
	}
	p := &player{
		s:     s,
		w:     w,
		rc:    http.NewResponseController(w),
		ctx:   r.Context(),
		req:   req,
		model: resp.Model,
		id:    "chatcmpl-fake-" + strconv.Itoa(req.Seq),
		first: true,
	}
	if p.model == "" {
		p.model = req.Model
	}
	if req.Stream {
		p.stream(resp)
	} else {
		p.fold(resp)
	}
}

// pause waits d. It reports false when the client went away (recorded as a
// disconnect) or the server is closing.
func (p *player) pause(d time.Duration) bool {
	if d <= 0 {
		return p.alive()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return until(p, t.C)
}

// until waits for c to deliver or close (a nil c: never). It reports false
// when the client went away first (recorded as a disconnect) or the server
// is closing.
func until[T any](p *player, c <-chan T) bool {
	select {
	case <-c:
		return true
	case <-p.ctx.Done():
		p.gone()
		return false
	case <-p.s.done:
		return false
	}
}

// hang waits until the client or the server goes away.
func (p *player) hang() { until[struct{}](p, nil) }

func (p *player) alive() bool {
	if p.ctx.Err() != nil {
		p.gone()
		return false
	}
	return true
}

// gone records a disconnect unless the server itself is closing.
func (p *player) gone() {
	select {
	case <-p.s.done:
	default:
		p.s.sawDisconnect()
	}
}

// write sends b and flushes; false when the client is gone.
func (p *player) write(b []byte) bool {
	if _, err := p.w.Write(b); err != nil {
		p.gone()
		return false
	}
	if err := p.rc.Flush(); err != nil {
		p.gone()
		return false
	}
	return true
}

func (p *player) stream(resp Response) {
	h := p.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	// Headers leave with the first flush, so a leading Delay delays them too.
	p.w.WriteHeader(status)
	for _, st := range resp.Steps {
		for _, a := range st.acts {
			if !p.pause(resp.ChunkDelay) || !p.streamAct(a) {
				return
			}
		}
	}
}

// streamAct plays one action; false ends the script.
func (p *player) streamAct(a act) bool {
	switch a.kind {
	case actContent:
		return p.event(p.choiceChunk(chunkDelta{Content: &a.text}, nil))
	case actReasoning:
		return p.event(p.choiceChunk(chunkDelta{ReasoningContent: &a.text}, nil))
	case actToolCall:
		tc := chunkToolCall{Index: a.index, ID: a.id}
		if a.id != "" {
			tc.Type = "function"
		}
		tc.Function.Name, tc.Function.Arguments = a.name, a.text
		return p.event(p.choiceChunk(chunkDelta{ToolCalls: []chunkToolCall{tc}}, nil))
	case actFinish:
		return p.event(p.choiceChunk(chunkDelta{}, &a.text))
	case actUsage:
		if !p.req.IncludeUsage {
			return true
		}
		c := p.chunk()
		c.Choices = []chunkChoice{}
		c.Usage = usageJSON(a.usage)
		return p.event(c)
	case actDone:
		return p.write([]byte("data: [DONE]\n\n"))
	case actComment:
		return p.write([]byte(": " + a.text + "\n\n"))
	case actRaw:
		return p.write([]byte(a.text))
	case actError:
		b, _ := json.Marshal(errorBody(a.err))
		p.write(append(append([]byte("data: "), b...), "\n\n"...))
		return false
	case actDelay:
		return p.pause(a.delay)
	case actCut:
		_ = p.rc.Flush()
		// The server closes the connection without the final chunk.
		panic(http.ErrAbortHandler)
	case actHang:
		_ = p.rc.Flush()
		p.hang()
		return false
	case actAwait:
		_ = p.rc.Flush()
		return until(p, a.gate)
	case actEndless:
		for p.event(p.choiceChunk(chunkDelta{Content: &a.text}, nil)) && p.pause(a.delay) {
		}
		return false
	}
	return true
}

func (p *player) event(c chunk) bool {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // our own types always marshal
	}
	return p.write(append(append([]byte("data: "), b...), "\n\n"...))
}

func (p *player) chunk() chunk {
	c := chunk{ID: p.id, Object: "chat.completion.chunk", Created: fakeCreated, Model: p.model}
	if p.req.IncludeUsage {
		c.Usage = json.RawMessage("null")
	}
	return c
}

func (p *player) choiceChunk(d chunkDelta, finish *string) chunk {
	if p.first && finish == nil {
		d.Role = "assistant"
		p.first = false
	}
	c := p.chunk()
	c.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
	return c
}

// fold answers a non-streaming request with the whole script as one
// chat.completion object.
func (p *player) fold(resp Response) {
	var (
		content, reasoning string
		hasContent         bool
		finish             *string
		usage              json.RawMessage
		calls              []chunkToolCall
	)
	for _, st := range resp.Steps {
		for _, a := range st.acts {
			if !p.pause(resp.ChunkDelay) {
				return
			}
			switch a.kind {
			case actContent, actEndless:
				content += a.text
				hasContent = true
			case actReasoning:
				reasoning += a.text
			case actToolCall:
				i := 0
				for i < len(calls) && calls[i].Index != a.index {
					i++
				}
				if i == len(calls) {
					calls = append(calls, chunkToolCall{Index: a.index, Type: "function"})
				}
				if a.id != "" {
					calls[i].ID = a.id
				}
				calls[i].Function.Name += a.name
				calls[i].Function.Arguments += a.text
			case actFinish:
				f := a.text
				finish = &f
			case actUsage:
				usage = usageJSON(a.usage)
			case actRaw:
				p.w.Header().Set("Content-Type", "application/json")
				p.write([]byte(a.text))
				return
			case actError:
				writeJSON(p.w, http.StatusInternalServerError, errorBody(a.err))
				return
			case actDelay:
				if !p.pause(a.delay) {
					return
				}
			case actCut:
				panic(http.ErrAbortHandler)
			case actHang:
				p.hang()
				return
			}
		}
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if hasContent {
		msg["content"] = content
	}
	if reasoning != "" {
		msg["reasoning_content"] = reasoning
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id":      p.id,
		"object":  "chat.completion",
		"created": fakeCreated,
		"model":   p.model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
	}
	if usage != nil {
		out["usage"] = usage
	}
	writeJSON(p.w, http.StatusOK, out)
}

// Wire shapes of streamed chunks.
type chunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func usageJSON(u TokenUsage) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"prompt_tokens":         u.Prompt,
		"completion_tokens":     u.Completion,
		"total_tokens":          u.Prompt + u.Completion,
		"prompt_tokens_details": map[string]int{"cached_tokens": u.Cached},
	})
	return b
}
