package llm

import (
	"net/http"
	"regexp"
	"strings"
)

// Retryable reports whether repeating the same call may succeed: the endpoint was
// briefly unable or unwilling to answer (HTTP 429/500/502/503/504, an overloaded,
// rate-limited or failing server), or the transport failed (network, timeout, a
// stream cut short).
//
// The decision rests on the typed facts only — Kind, StatusCode and Code — never on
// the human message: a message such as "rate limited after 1500 requests" on a 400
// proves nothing, and matching "500" inside any number is the defect pi has.
//
// Never retryable: a context overflow (compaction handles it), 400/401/403/404
// (the request or the credentials are wrong and stay wrong), and exhausted quota
// ("insufficient_quota", even when the provider sends it with a 429).
func (e *Error) Retryable() bool {
	if e == nil || e.ContextOverflow {
		return false
	}
	code := normalizeCode(e.Code)
	if _, ok := permanentCodes[code]; ok {
		return false
	}
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return false
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout, StatusOverloaded:
		return true
	}
	switch e.Kind {
	case ErrorNetwork, ErrorTimeout, ErrorTruncated:
		return true
	}
	_, ok := transientCodes[code]
	return ok
}

// StatusOverloaded is the status Anthropic answers with when its API is
// overloaded (overloaded_error): transient, like a 503.
const StatusOverloaded = 529

// transientCodes are provider error codes and types that say "try again later".
// They matter where no HTTP status says so: an error object inside a stream that
// began with 200, or a gateway that answers with an unusual status.
var transientCodes = map[string]struct{}{
	"rate_limit":            {},
	"rate_limited":          {},
	"rate_limit_exceeded":   {},
	"rate_limit_error":      {}, // Anthropic
	"too_many_requests":     {},
	"overloaded":            {},
	"overloaded_error":      {}, // Anthropic
	"server_overloaded":     {},
	"service_unavailable":   {},
	"unavailable":           {}, // Gemini (gRPC status names)
	"resource_exhausted":    {}, // Gemini rate limiting
	"server_error":          {}, // OpenAI
	"internal_error":        {},
	"internal_server_error": {},
	"internal":              {}, // Gemini
	"api_error":             {}, // Anthropic's generic 500
	"timeout":               {},
	"timeout_error":         {}, // Anthropic 504
	"bad_gateway":           {},
	"gateway_timeout":       {},
}

// permanentCodes are codes that look transient by status (OpenAI sends
// insufficient_quota with a 429) but do not heal by waiting.
var permanentCodes = map[string]struct{}{
	"insufficient_quota":         {},
	"billing_hard_limit_reached": {},
	"billing_not_active":         {},
	"account_deactivated":        {},
	"invalid_api_key":            {},
}

// normalizeCode folds the spellings providers use for the same code
// ("Rate-Limit", "RATE_LIMIT", "rate limit") into one.
func normalizeCode(code string) string {
	code = strings.ToLower(strings.TrimSpace(code))
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' || r == '.' {
			return '_'
		}
		return r
	}, code)
}

// overflowPatterns are the texts providers use to say the prompt does not fit the
// model's context window. Collected from what OpenAI, Anthropic (direct and through
// proxies), Gemini, xAI, Groq, OpenRouter, Mistral, Bedrock, GitHub Copilot,
// llama.cpp, LM Studio, vLLM, MiniMax, Kimi and z.ai actually send.
var overflowPatterns = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`context[_ ]length[_ ]exceeded`,                // OpenAI code, also used as text by many proxies
	`maximum context length is \d+`,                // OpenAI, OpenRouter, vLLM
	`maximum prompt length is \d+`,                 // xAI
	`prompt is too long`,                           // Anthropic
	`input is too long`,                            // Bedrock ("input is too long for requested model")
	`exceeds the context window`,                   // OpenAI
	`context window (?:exceeded|exceeds)`,          // MiniMax and generic proxies
	`model_context_window_exceeded`,                // z.ai finish reason surfaced as an error
	`input token count.*exceeds the maximum`,       // Gemini
	`reduce the length of the messages`,            // Groq
	`exceeds the limit of \d+`,                     // GitHub Copilot ("prompt token count of X exceeds the limit of Y")
	`exceeds the available context size`,           // llama.cpp server
	`greater than the context length`,              // LM Studio
	`exceeded model token limit`,                   // Kimi
	`too large for model with \d+ maximum context`, // Mistral
	`too many tokens`,                              // generic
	`token limit exceeded`,                         // generic
	`exceeded max context length`,                  // Ollama ("prompt too long; exceeded max context length by N tokens")
	`exceeds (?:the )?(?:maximum )?context length`, // Ollama, generic
	`longer than the maximum model length`,         // vLLM ("the decoder prompt ... is longer than the maximum model length")
}, "|"))

// IsContextOverflow reports whether a provider's error says the prompt does not
// fit the model's context window: the code "context_length_exceeded", or one of
// the overflow texts real providers send. A 400 or 413 without any body also counts
// (Cerebras answers an overflow that way). A 429 never counts: "too many tokens per
// minute" is a rate limit, not an overflow.
func IsContextOverflow(status int, code, message string) bool {
	if status == http.StatusTooManyRequests {
		return false
	}
	switch normalizeCode(code) {
	case "context_length_exceeded", "model_context_window_exceeded", "context_window_exceeded":
		return true
	}
	if overflowPatterns.MatchString(message) {
		return true
	}
	if status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge {
		m := strings.TrimSpace(message)
		return m == "" || strings.Contains(strings.ToLower(m), "(no body)")
	}
	return false
}
