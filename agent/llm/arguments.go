package llm

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ToolArguments turns the argument text a model streamed for one tool call into
// the block's Arguments and RawArguments.
//
// Empty text means no arguments ({}). Text that is not valid JSON (a model's
// mistake, or a stream cut mid-call) becomes a JSON string holding it, so the
// message can be stored, the agent loop reports "invalid arguments" to the
// model, and request builders send the raw text back unchanged. Valid JSON is
// kept as sent; raw is returned as well when storing Arguments with
// encoding/json would change its bytes (whitespace, HTML escaping), because
// every later request must repeat exactly what the model wrote for the
// provider's prompt cache to hit.
func ToolArguments(text []byte) (args json.RawMessage, raw string) {
	trimmed := bytes.TrimSpace(text)
	switch {
	case len(trimmed) == 0:
		return json.RawMessage("{}"), ""
	case !json.Valid(trimmed):
		quoted, _ := json.Marshal(string(text))
		return quoted, ""
	}
	args = json.RawMessage(bytes.Clone(trimmed))
	if !Stable(args) {
		raw = string(trimmed)
	}
	return args, raw
}

// Stable reports whether valid JSON survives a round trip through
// encoding/json unchanged: it is compact and has nothing json.Marshal escapes.
func Stable(js []byte) bool {
	var b bytes.Buffer
	b.Grow(len(js))
	if json.Compact(&b, js) != nil || b.Len() != len(js) {
		return false
	}
	// json.Marshal of a RawMessage also escapes <, >, & and U+2028/U+2029.
	return !bytes.ContainsAny(js, "<>&") && !strings.ContainsAny(string(js), "\u2028\u2029")
}
