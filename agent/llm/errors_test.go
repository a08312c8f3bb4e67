package llm

import "testing"

func TestErrorRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want bool
	}{
		{"nil", nil, false},
		{"429", &Error{Kind: ErrorHTTP, StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow down"}, true},
		{"429 without code", &Error{Kind: ErrorHTTP, StatusCode: 429}, true},
		{"500", &Error{Kind: ErrorHTTP, StatusCode: 500, Message: "boom"}, true},
		{"502", &Error{Kind: ErrorHTTP, StatusCode: 502}, true},
		{"503", &Error{Kind: ErrorHTTP, StatusCode: 503}, true},
		{"504", &Error{Kind: ErrorHTTP, StatusCode: 504}, true},
		{"529 overloaded by code", &Error{Kind: ErrorHTTP, StatusCode: 529, Code: "overloaded_error"}, true},
		{"400", &Error{Kind: ErrorHTTP, StatusCode: 400, Code: "invalid_request_error", Message: "bad"}, false},
		{"401", &Error{Kind: ErrorHTTP, StatusCode: 401, Code: "invalid_api_key"}, false},
		{"403", &Error{Kind: ErrorHTTP, StatusCode: 403}, false},
		{"404", &Error{Kind: ErrorHTTP, StatusCode: 404, Code: "model_not_found"}, false},
		{"400 with a transient-looking code", &Error{Kind: ErrorHTTP, StatusCode: 400, Code: "server_error"}, false},
		{
			"400 whose message mentions a rate limit and a number",
			&Error{Kind: ErrorHTTP, StatusCode: 400, Code: "invalid_request_error", Message: "rate limited after 1500 requests"},
			false,
		},
		{
			"422 whose message contains 500 and overloaded",
			&Error{Kind: ErrorHTTP, StatusCode: 422, Message: "field max_tokens=500 overloaded"},
			false,
		},
		{"insufficient_quota on 429", &Error{Kind: ErrorHTTP, StatusCode: 429, Code: "insufficient_quota", Message: "You exceeded your current quota"}, false},
		{"insufficient_quota mid-stream", &Error{Kind: ErrorProvider, Code: "insufficient_quota"}, false},
		{"overflow", &Error{Kind: ErrorHTTP, StatusCode: 400, Code: "context_length_exceeded", ContextOverflow: true}, false},
		{"overflow even on 500", &Error{Kind: ErrorHTTP, StatusCode: 500, ContextOverflow: true}, false},
		{"network", &Error{Kind: ErrorNetwork, Message: "connection refused"}, true},
		{"timeout", &Error{Kind: ErrorTimeout, Message: "timeout awaiting response headers"}, true},
		{"truncated", &Error{Kind: ErrorTruncated}, true},
		{"malformed", &Error{Kind: ErrorMalformed, Message: "invalid character"}, false},
		{"provider server_error", &Error{Kind: ErrorProvider, Code: "server_error"}, true},
		{"provider overloaded_error", &Error{Kind: ErrorProvider, Code: "overloaded_error"}, true},
		{"provider Rate-Limit spelled oddly", &Error{Kind: ErrorProvider, Code: "Rate-Limit-Exceeded"}, true},
		{"provider service unavailable", &Error{Kind: ErrorProvider, Code: "service_unavailable"}, true},
		{"provider internal_error", &Error{Kind: ErrorProvider, Code: "internal_error"}, true},
		{"provider too_many_requests", &Error{Kind: ErrorProvider, Code: "too_many_requests"}, true},
		{"provider content_filter", &Error{Kind: ErrorProvider, Code: "content_filter"}, false},
		{"provider message only", &Error{Kind: ErrorProvider, Message: "server is overloaded, status 503"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Retryable(); got != tt.want {
				t.Errorf("Retryable(%+v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestIsContextOverflow(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		code    string
		message string
		want    bool
	}{
		{"openai code", 400, "context_length_exceeded", "anything", true},
		{"openai text", 400, "", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", true},
		{"openai responses", 400, "", "Your input exceeds the context window of this model. Please adjust your input and try again.", true},
		{"anthropic", 400, "invalid_request_error", "prompt is too long: 213462 tokens > 200000 maximum", true},
		{"bedrock", 400, "", "Input is too long for requested model.", true},
		{"gemini", 400, "INVALID_ARGUMENT", "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).", true},
		{"xai", 400, "", "This model's maximum prompt length is 131072 but the request contains 537812 tokens.", true},
		{"groq", 400, "", "Please reduce the length of the messages or completion.", true},
		{"openrouter", 400, "", "This endpoint's maximum context length is 200000 tokens. However, you requested about 250000 tokens", true},
		{"copilot", 400, "", "prompt token count of 140000 exceeds the limit of 128000", true},
		{"llama.cpp", 400, "exceed_context_size_error", "the request exceeds the available context size, try increasing it", true},
		{"lm studio", 400, "", "Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. tokens to keep from the initial prompt is greater than the context length", true},
		{"minimax", 400, "", "invalid params, context window exceeds limit", true},
		{"kimi", 400, "", "Your request exceeded model token limit: 262144 (requested: 300000)", true},
		{"mistral", 400, "", "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length", true},
		{"vllm", 400, "BadRequestError", "The decoder prompt (length 9000) is longer than the maximum model length of 8192.", true},
		{"ollama", 500, "", "prompt too long; exceeded max context length by 12 tokens", true},
		{"generic window", 400, "", "context window exceeded", true},
		{"generic tokens", 400, "", "Too many tokens in request", true},
		{"z.ai", 0, "", "model_context_window_exceeded", true},
		{"cerebras no body", 400, "", "", true},
		{"cerebras 413 no body", 413, "", "413 status code (no body)", true},
		{"429 too many tokens is a rate limit", 429, "rate_limit_exceeded", "Too many tokens per minute", false},
		{"rate limit", 429, "rate_limit_exceeded", "Rate limit reached for requests", false},
		{"plain 400", 400, "invalid_request_error", "messages: field required", false},
		{"server error", 500, "server_error", "The server had an error", false},
		{"empty 500", 500, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsContextOverflow(tt.status, tt.code, tt.message); got != tt.want {
				t.Errorf("IsContextOverflow(%d, %q, %q) = %v, want %v", tt.status, tt.code, tt.message, got, tt.want)
			}
		})
	}
}
