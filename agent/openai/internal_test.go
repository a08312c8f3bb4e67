package openai

import (
	"encoding/json"
	"github.com/threadsmith/threadsmith/agent/llm"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"30"}}, 30 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"milliseconds win", http.Header{"Retry-After": {"30"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"bad milliseconds fall back", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"soon"}}, 3 * time.Second},
		{"http date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"negative", http.Header{"Retry-After": {"-5"}}, 0},
		{"garbage", http.Header{"Retry-After": {"later please"}}, 0},
		{"absurd", http.Header{"Retry-After": {"1e30"}}, llm.MaxRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, now); got != tt.want {
				t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

// A held stream costs its run no more than a small read buffer: a hundred
// live threads hold a hundred of them.
func TestSSEFilterBufferIsSmall(t *testing.T) {
	if got := newSSEFilter(io.NopCloser(strings.NewReader(""))).br.Size(); got > 4<<10 {
		t.Errorf("the SSE filter reads through a %d-byte buffer, want at most 4 KiB", got)
	}
}

func TestSSEFilter(t *testing.T) {
	long := "data: {\"x\":\"" + strings.Repeat("a", 40<<10) + "\"}\n"
	longComment := ": " + strings.Repeat("z", 40<<10) + "\n"
	in := ": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: {\"a\":1}\n\n  \r\n" + longComment + long + "\n" +
		"data: {\"error\":{\"code\":1}}\n\ndata:{\"error\":2}\n{\"error\":{}}\ndata: [DONE]" // no final newline
	want := "data: {\"a\":1}\n" + long + "data: { \"error\":{\"code\":1}}\ndata:{ \"error\":2}\n{\"error\":{}}\ndata: [DONE]\n" // the missing last newline is added
	for name, r := range map[string]io.Reader{
		"whole":        strings.NewReader(in),
		"byte by byte": iotest.OneByteReader(strings.NewReader(in)),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := io.ReadAll(newSSEFilter(io.NopCloser(r)))
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if string(got) != want {
				t.Errorf("filtered body differs:\n got %.120q… (%d bytes)\nwant %.120q… (%d bytes)", got, len(got), want, len(want))
			}
		})
	}
}

func TestLenientString(t *testing.T) {
	tests := map[string]string{
		`"plain"`:                 "plain",
		`"tab\tand \"quotes\""`:   "tab\tand \"quotes\"",
		`"slash \/ escaped"`:      "slash / escaped",
		`"emoji \ud83d\ude00"`:    "emoji 😀",
		`"accent \u00e9"`:         "accent é",
		`null`:                    "",
		`{"type":"text"}`:         "",
		`["a"]`:                   "",
		`"line\nbreak \\ slash "`: "line\nbreak \\ slash ",
	}
	for in, want := range tests {
		var s lenientString
		if err := json.Unmarshal([]byte(in), &s); err != nil || string(s) != want {
			t.Errorf("decode %s = %q, %v; want %q", in, s, err, want)
		}
	}
}

func TestErrorFromBody(t *testing.T) {
	tests := []struct {
		body, message, code string
		status              int
	}{
		{`{"error":"model overloaded"}`, "model overloaded", "", 0},
		{`{"object":"error","message":"bad","type":"BadRequestError","code":400}`, "bad", "BadRequestError", 0},
		{`{"detail":"Not Found"}`, "Not Found", "", 0},
		{`[{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}]`, "Resource exhausted", "RESOURCE_EXHAUSTED", 429},
		{"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>", "", 0},
		{"", "", "", 0},
	}
	for _, tt := range tests {
		e := errorFromBody([]byte(tt.body))
		if e.Message != tt.message || e.Code != tt.code || e.StatusCode != tt.status {
			t.Errorf("errorFromBody(%s) = %+v, want message %q code %q status %d", tt.body, e, tt.message, tt.code, tt.status)
		}
	}
	if got := errorFromBody([]byte(strings.Repeat("x", 5000))).Message; len(got) > 600 {
		t.Errorf("a 5000-byte body became a %d-byte message, want it capped", len(got))
	}
}
