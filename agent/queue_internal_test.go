package agent

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
)

func TestSerialQueueRunsInOrderAndSurvivesPanics(t *testing.T) {
	var q serialQueue
	q.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	var mu sync.Mutex
	var got []int
	for i := range 100 {
		q.add(nil, func(Event) {
			if i == 50 {
				panic("handler bug")
			}
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
		})
	}
	if err := q.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 99 {
		t.Fatalf("ran %d items, want 99", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("out of order at %d: %v", i, got[i-1:i+1])
		}
	}
	// The worker goroutine exits when idle; the zero value keeps working.
	q.add(nil, func(Event) { mu.Lock(); got = append(got, 1000); mu.Unlock() })
	_ = q.wait(context.Background())
	if got[len(got)-1] != 1000 {
		t.Fatal("queue did not restart after going idle")
	}
}

// BenchmarkSessionEventQueue measures events per second through a session's
// serial event queue to one listener (the path every streamed delta takes).
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
	_ = s.events.wait(context.Background())
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
	if n != b.N {
		b.Fatalf("listener saw %d of %d events", n, b.N)
	}
}
