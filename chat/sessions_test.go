package chat

import (
	"testing"
	"time"
)

func TestSessionSummaryMarkdown(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		s    SessionSummary
		want string
	}{
		{SessionSummary{State: "running", Repo: "app", Branch: "bot/x", LastActivity: now.Add(-5 * time.Second), Cost: 0.126,
			ThreadURL: "https://t/1", PageURL: "https://p/1"},
			"🟢 running · `app` · `bot/x` · just now · $0.13 · [thread](https://t/1) · [page](https://p/1)"},
		{SessionSummary{State: "queued", Repo: "app", LastActivity: now.Add(-90 * time.Minute)},
			"⏳ queued · `app` · 1h ago · $0.00"},
		{SessionSummary{State: "closed", Repo: "web", Branch: "b", LastActivity: now.Add(-50 * time.Hour), ThreadURL: "https://t/2"},
			"⚫ closed · `web` · `b` · 2d ago · $0.00 · [thread](https://t/2)"},
		{SessionSummary{State: "idle", Repo: "app", Branch: "b", LastActivity: now.Add(-3 * time.Minute)},
			"⚪ idle · `app` · `b` · 3m ago · $0.00"},
		{SessionSummary{State: "idle", Repo: "app", Origin: "schedule nightly", LastActivity: now.Add(-3 * time.Minute)},
			"⚪ idle · `app` · from schedule nightly · 3m ago · $0.00"},
	} {
		if got := tc.s.Markdown(now); got != tc.want {
			t.Errorf("Markdown = %q, want %q", got, tc.want)
		}
	}
}
