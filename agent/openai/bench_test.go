package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
)

const benchDeltas = 1000

// benchBody is a recorded-looking OpenAI stream: n content deltas of a few
// characters each, a finish chunk, the usage chunk and [DONE].
func benchBody(n int) []byte {
	var b bytes.Buffer
	const head = `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f9f4fb6dbf","choices":[{"index":0,"delta":`
	b.WriteString(head + `{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	for i := range n {
		fmt.Fprintf(&b, head+`{"content":" word%d"},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n", i%10)
	}
	b.WriteString(head + `{},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":1000,"total_tokens":1012,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// memTransport answers every request with body, without a network.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(m.body)),
		Request:    req,
	}, nil
}

// reportPerDelta turns whole-stream figures into per-delta ones.
func reportPerDelta(b *testing.B, run func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	n := 0
	for b.Loop() {
		run()
		n++
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	deltas := float64(n * benchDeltas)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/deltas, "allocs/delta")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/deltas, "B/delta")
	b.ReportMetric(float64(elapsed.Nanoseconds())/deltas, "ns/delta")
}

// BenchmarkStreamTextDelta streams 1,000 text deltas per op through the real
// client (request building, go-openai, SSE filter, decoding, assembly, callback)
// from an in-memory body. See the two baselines below for what go-openai itself
// costs on the same body.
func BenchmarkStreamTextDelta(b *testing.B) {
	c, err := openai.New(openai.Config{
		BaseURL:    "http://bench.invalid/v1",
		HTTPClient: &http.Client{Transport: memTransport{benchBody(benchDeltas)}},
	})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Model: "gpt-4o", Messages: []llm.Message{llm.UserText("hi")}}
	ctx := context.Background()
	got := 0
	fn := func(d llm.Delta, _ *llm.Message) { got++ }
	reportPerDelta(b, func() {
		if _, err := c.Stream(ctx, req, fn); err != nil {
			b.Fatal(err)
		}
	})
	if got%benchDeltas != 0 {
		b.Fatalf("saw %d deltas, not a multiple of %d", got, benchDeltas)
	}
}

// BenchmarkBaselineGoOpenAIRecv is go-openai used as documented (Recv decodes
// into its ChatCompletionStreamResponse), with no assembly at all.
func BenchmarkBaselineGoOpenAIRecv(b *testing.B) {
	api := benchGoOpenAI()
	ctx := context.Background()
	reportPerDelta(b, func() {
		s, err := api.CreateChatCompletionStream(ctx, benchRequest())
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := s.Recv(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	})
}

// BenchmarkBaselineGoOpenAIRecvRaw is the floor go-openai forces: reading the
// SSE lines (RecvRaw) and nothing else.
func BenchmarkBaselineGoOpenAIRecvRaw(b *testing.B) {
	api := benchGoOpenAI()
	ctx := context.Background()
	reportPerDelta(b, func() {
		s, err := api.CreateChatCompletionStream(ctx, benchRequest())
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := s.RecvRaw(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	})
}

func benchGoOpenAI() *goopenai.Client {
	cfg := goopenai.DefaultConfig("")
	cfg.BaseURL = "http://bench.invalid/v1"
	cfg.HTTPClient = &http.Client{Transport: memTransport{benchBody(benchDeltas)}}
	return goopenai.NewClientWithConfig(cfg)
}

func benchRequest() goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model:         "gpt-4o",
		Messages:      []goopenai.ChatCompletionMessage{{Role: "user", Content: "hi"}},
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
}

// BenchmarkFirstDelta measures, over loopback HTTP, the time from the moment the
// server writes the first content event (headers already sent, the client
// waiting in its read) to the moment the client's StreamFunc sees it.
func BenchmarkFirstDelta(b *testing.B) {
	base := time.Now()
	var sentAt atomic.Int64
	chunk := bytes.SplitAfter(benchBody(1), []byte("\n\n"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		_, _ = w.Write(chunk[0]) // role-only chunk: no delta
		sentAt.Store(int64(time.Since(base)))
		_, _ = w.Write(chunk[1]) // first content
		_ = rc.Flush()
		for _, c := range chunk[2:] {
			_, _ = w.Write(c)
		}
	}))
	defer srv.Close()
	c, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Model: "gpt-4o", Messages: []llm.Message{llm.UserText("hi")}}
	ctx := context.Background()
	var samples []time.Duration
	for b.Loop() {
		first := true
		_, err := c.Stream(ctx, req, func(llm.Delta, *llm.Message) {
			if first {
				samples = append(samples, time.Since(base)-time.Duration(sentAt.Load()))
				first = false
			}
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(samples)), "ns-first-delta-mean")
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds()), "ns-first-delta-p50")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds()), "ns-first-delta-p99")
}
