package agent

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// BenchmarkSessionEventQueue measures events per second through a session's
// event queue to one listener (the path every streamed delta takes).
func BenchmarkSessionEventQueue(b *testing.B) {
	s, err := New(Config{ID: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	var n int
	s.Subscribe(func(Event) { n++ })
	ev := MessageUpdate{Message: llm.Message{Role: llm.RoleAssistant}, Delta: llm.Delta{Kind: llm.DeltaText, Text: "tok"}}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		s.handle(ev)
	}
	_ = s.events.Wait(context.Background())
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	if n != b.N {
		b.Fatalf("listener saw %d of %d events", n, b.N)
	}
}
