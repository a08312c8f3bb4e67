package bridge

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// Only a model that could not be reached makes a thread wait: a refusal is
// an answer (the model is there), and waiting would never end it.
func TestModelUnreachableErr(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		down bool
	}{
		{"answered", nil, false},
		{"connection refused", &llm.Error{Kind: llm.ErrorNetwork, Message: "connection refused"}, true},
		{"timeout", &llm.Error{Kind: llm.ErrorTimeout, Message: "timeout awaiting response headers"}, true},
		{"503", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 503, Message: "Service Unavailable"}, true},
		{"429 rate limit", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "rate_limit_exceeded"}, true},
		{"stream cut", &llm.Error{Kind: llm.ErrorTruncated}, true},
		{"probe with no answer in time", fmt.Errorf("probe: %w", context.DeadlineExceeded), true},
		{"400", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 400, Code: "invalid_request_error"}, false},
		{"401", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 401, Code: "invalid_api_key"}, false},
		{"quota spent", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "insufficient_quota"}, false},
		{"context overflow", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 400, Code: "context_length_exceeded", ContextOverflow: true}, false},
		{"overflow on a 500", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 500, ContextOverflow: true}, false},
		{"another error", errors.New("boom"), true},
	} {
		if down, reason := modelUnreachableErr(c.err); down != c.down || (down && reason == "") {
			t.Errorf("%s: unreachable = %v (%q), want %v", c.name, down, reason, c.down)
		}
	}
}

// The prober's pause doubles from its first up to its cap.
func TestProbePauses(t *testing.T) {
	h := &modelHealth{min: probeMin, max: probeMax}
	var got []string
	for d := h.next(0); len(got) < 6; d = h.next(d) {
		got = append(got, d.String())
	}
	want := "[30s 1m0s 2m0s 4m0s 5m0s 5m0s]"
	if fmt.Sprint(got) != want {
		t.Errorf("pauses = %v, want %s", got, want)
	}
}
