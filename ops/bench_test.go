package ops

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// BenchmarkScrape is one Prometheus scrape of a bot with a few hundred
// series (every method of both platforms, ten models), with the queue depth
// read from a real SQLite file holding 10,000 pending inputs, against the
// same scrape without that read.
func BenchmarkScrape(b *testing.B) {
	m := NewMetrics(BuildInfo{Version: "bench"})
	for i := range 10 {
		model := "model-" + strconv.Itoa(i)
		m.llmRequests.WithLabelValues(model).Add(100)
		m.llmTokens.WithLabelValues(model, "input").Add(1e6)
		m.llmErrors.WithLabelValues(model, "rate_limit").Inc()
	}
	for _, method := range []string{"chat.postMessage", "chat.update", "reactions.add", "reactions.remove", "files.uploadV2", "conversations.replies", "users.info", "auth.test"} {
		m.apiRequests.WithLabelValues("slack", method, "2xx").Add(1000)
		m.apiLimited.WithLabelValues("slack", method).Inc()
	}
	for range 100 {
		m.RunFinished("done", 42*time.Second)
	}
	h := Handler(m, nil, nil)
	scrape := func(b *testing.B) {
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != 200 {
				b.Fatal(rec.Code)
			}
			_, _ = io.Copy(io.Discard, rec.Body)
		}
	}
	b.Run("without-queue-depth", scrape)

	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "threadsmith.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T", Channel: "C", Thread: "1"}, storage.ThreadInit{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		id := strconv.Itoa(i)
		if _, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: "Ev" + id, Channel: "C", MessageID: "1." + id,
			ThreadID: th.ID, AuthorID: "U", Text: "hi", Mode: storage.ModePrompt}); err != nil {
			b.Fatal(err)
		}
	}
	m.PendingInput(db.PendingInboundCounts)
	b.Run("with-queue-depth-10k-pending", scrape)
}
