package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// streamChunk is the part of a chat.completion.chunk the client reads. It is
// deliberately leaner than go-openai's type: every field decoded costs an
// allocation on every delta, and a stream has thousands of deltas.
type streamChunk struct {
	// Model is written into the assembler once; every chunk repeats it.
	Model onceString `json:"model"`
	// Choices is an array, not a slice: the client always asks for one choice,
	// and decoding into an array allocates nothing. Extra choices are ignored.
	Choices [1]streamChoice `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	// Error is an error object some providers send inside a 200 stream.
	Error json.RawMessage `json:"error"`
}

type streamChoice struct {
	Delta struct {
		Content lenientString `json:"content"`
		Refusal lenientString `json:"refusal"`
		// Servers disagree on the name of the reasoning field: llama.cpp and
		// DeepSeek say reasoning_content, vLLM and OpenRouter reasoning, some
		// reasoning_text. The first non-empty one is used.
		ReasoningContent lenientString   `json:"reasoning_content"`
		Reasoning        lenientString   `json:"reasoning"`
		ReasoningText    lenientString   `json:"reasoning_text"`
		ToolCalls        []toolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason lenientString `json:"finish_reason"`
	// Usage inside the choice: Moonshot puts it there instead of the chunk.
	Usage *wireUsage `json:"usage"`
}

func (c *streamChoice) reasoning() string {
	switch {
	case c.Delta.ReasoningContent != "":
		return string(c.Delta.ReasoningContent)
	case c.Delta.Reasoning != "":
		return string(c.Delta.Reasoning)
	default:
		return string(c.Delta.ReasoningText)
	}
}

type toolCallDelta struct {
	// Index is absent on a few providers; it then reads as 0 and calls are told
	// apart by id (see assembler.callFor).
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string        `json:"name"`
		Arguments argumentsText `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// lenientString decodes a JSON string and ignores any other value (null, or an
// object or array a provider put where OpenAI has a string), so one odd field
// never fails a whole stream. Plain strings without escapes — nearly every
// delta — are copied in one allocation without a second decoder pass.
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return nil
	}
	if bytes.IndexByte(b, '\\') < 0 {
		*s = lenientString(b[1 : len(b)-1])
		return nil
	}
	v, err := strconv.Unquote(string(b))
	if err != nil {
		// JSON escapes that Go's quoting rules read differently (\/ or
		// surrogate pairs): fall back to the JSON decoder.
		var js string
		if err := json.Unmarshal(b, &js); err != nil {
			return nil
		}
		v = js
	}
	*s = lenientString(v)
	return nil
}

// argumentsText is a tool call's arguments: OpenAI sends a JSON-encoded string;
// a few servers send the arguments object itself, which is kept as its JSON text.
type argumentsText string

func (a *argumentsText) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		*a = argumentsText(b)
		return nil
	}
	var s lenientString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	*a = argumentsText(s)
	return nil
}

// onceString stores a JSON string into *dst the first time only.
type onceString struct{ dst *string }

func (o onceString) UnmarshalJSON(b []byte) error {
	if o.dst == nil || *o.dst != "" {
		return nil
	}
	var s lenientString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	*o.dst = string(s)
	return nil
}
