package agent_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/openai"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func benchSession(b *testing.B, listener func(agent.Event)) (*agent.Session, *llmfake.Server) {
	srv := llmfake.New(b)
	client, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "sk-bench"})
	if err != nil {
		b.Fatal(err)
	}
	s, err := agent.New(agent.Config{ID: "bench", Model: client, ModelName: "fake-model", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if listener != nil {
		s.Subscribe(listener)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, srv
}

// BenchmarkStreamedDeltaAllocs streams 2,000 text deltas per run through the real
// client, the agent loop and the session queue to one listener, and reports the
// allocations per delta (the whole path, HTTP and SSE decoding included).
func BenchmarkStreamedDeltaAllocs(b *testing.B) {
	const deltas = 2000
	chunks := make([]string, deltas)
	for i := range chunks {
		chunks[i] = "tok "
	}
	var updates int
	s, srv := benchSession(b, func(ev agent.Event) {
		if _, ok := ev.(agent.MessageUpdate); ok {
			updates++
		}
	})
	srv.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply(chunks...) })
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Prompt(context.Background(), "go", agent.PromptOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(deltas), "deltas/op")
	if updates < deltas {
		b.Fatalf("saw %d updates", updates)
	}
}

// BenchmarkFirstByteToFirstUpdate measures the time from the moment the fake
// server starts answering to the first message_update a listener sees.
func BenchmarkFirstByteToFirstUpdate(b *testing.B) {
	var mu sync.Mutex
	var sent, seen time.Time
	s, srv := benchSession(b, func(ev agent.Event) {
		if _, ok := ev.(agent.MessageUpdate); ok {
			mu.Lock()
			if seen.IsZero() {
				seen = time.Now()
			}
			mu.Unlock()
		}
	})
	srv.Handle(func(llmfake.Request) llmfake.Response {
		mu.Lock()
		sent = time.Now()
		mu.Unlock()
		return llmfake.TextReply("first", strings.Repeat("x", 10))
	})
	var total time.Duration
	for b.Loop() {
		mu.Lock()
		sent, seen = time.Time{}, time.Time{}
		mu.Unlock()
		if err := s.Prompt(context.Background(), "go", agent.PromptOptions{}); err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		total += seen.Sub(sent)
		mu.Unlock()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/first-update")
}
