package chat

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// SessionSummary is one of a person's sessions as a list of them shows it:
// `!sessions` in a thread, Slack's Home tab.
type SessionSummary struct {
	// State is "running", "queued" (input waits), "idle" or "closed".
	State  string
	Repo   string
	Branch string
	// Origin is where a session the bot opened itself came from
	// ("schedule nightly", "issue #12"); "" for one a person started.
	Origin string
	// LastActivity is the newest input or transcript entry.
	LastActivity time.Time
	// Cost sums the session's priced replies, in USD.
	Cost float64
	// ThreadURL links the chat thread; "" when the platform gives none.
	ThreadURL string
	// PageURL links the session's page; "" when pages are off.
	PageURL string
}

// SessionLister lists a person's sessions on the handler's platform, the
// newest first: the threads where they asked the agent something. A
// Handler implements it for an adapter that shows the list in a view of its
// own (Slack's Home tab); it only reads.
type SessionLister interface {
	Sessions(ctx context.Context, userID string) ([]SessionSummary, error)
}

// Markdown is the session as one line of a list, its activity said
// relative to now.
func (s SessionSummary) Markdown(now time.Time) string {
	icon := map[string]string{"running": "🟢", "queued": "⏳", "idle": "⚪", "closed": "⚫"}[s.State]
	if icon == "" {
		icon = "⚪"
	}
	parts := []string{icon + " " + s.State, "`" + s.Repo + "`"}
	if s.Branch != "" {
		parts = append(parts, "`"+s.Branch+"`")
	}
	if s.Origin != "" {
		parts = append(parts, "from "+s.Origin)
	}
	parts = append(parts, ago(now.Sub(s.LastActivity)), fmt.Sprintf("$%.2f", s.Cost))
	if s.ThreadURL != "" {
		parts = append(parts, "[thread]("+s.ThreadURL+")")
	}
	if s.PageURL != "" {
		parts = append(parts, "[page]("+s.PageURL+")")
	}
	return strings.Join(parts, " · ")
}

// ago says how long ago d was, in its largest unit.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}
