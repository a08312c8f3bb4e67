package bridge

// !sessions and the person's list of sessions an adapter shows on its own
// (chat.SessionLister): the threads of the platform where the person asked
// the agent something, read from storage. The list is the person's only:
// it is looked up by the author id the platform gave with their input.

import (
	"context"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/storage"
)

// sessionsShown is how many sessions the list holds.
const sessionsShown = 10

// Sessions implements chat.SessionLister for the handler's platform.
func (h *handler) Sessions(ctx context.Context, userID string) ([]chat.SessionSummary, error) {
	return h.b.sessionsOf(ctx, h.p, userID)
}

// sessionsOf lists the person's newest sessions on p, with links to each
// thread (when the platform gives them) and page (when pages are on).
func (b *Bridge) sessionsOf(ctx context.Context, p *platform, userID string) ([]chat.SessionSummary, error) {
	if userID == "" {
		return nil, nil
	}
	sums, err := b.cfg.Store.AuthorThreadSummaries(ctx, p.name, userID, sessionsShown)
	if err != nil {
		return nil, err
	}
	linker, _ := p.Adapter.(chat.Linker)
	out := make([]chat.SessionSummary, len(sums))
	for i, s := range sums {
		out[i] = chat.SessionSummary{State: sessionState(s), Repo: s.Repo, Branch: s.Branch, LastActivity: s.LastActivity, Cost: s.Cost}
		if linker != nil {
			if url, err := linker.Permalink(ctx, refOf(s.Key)); err == nil {
				out[i].ThreadURL = url
			} else {
				b.log.Warn("thread link for the sessions list", "thread", s.ID, "err", err)
			}
		}
		if b.cfg.PageLink != nil {
			out[i].PageURL = b.cfg.PageLink(s.ID)
		}
	}
	return out, nil
}

// sessionState is what the list says a thread is doing.
func sessionState(s storage.ThreadSummary) string {
	switch {
	case s.Running:
		return "running"
	case s.Pending > 0:
		return "queued"
	case s.State == storage.ThreadClosed:
		return "closed"
	}
	return "idle"
}

// sessionsCommand answers !sessions with the asker's list, read off the
// owner.
func (t *thread) sessionsCommand(c commandCall) {
	who := c.author.ID
	t.background(func() msgCommandDone {
		list, err := t.b.sessionsOf(t.b.ctx, t.p, who)
		if err != nil {
			t.log.Warn("listing sessions", "err", err)
			return msgCommandDone{say: "❌ I couldn't read your sessions just now; try again in a moment."}
		}
		return msgCommandDone{say: sessionsText(list, t.b.cfg.Now())}
	})
}

// sessionsText is the list as a message.
func sessionsText(list []chat.SessionSummary, now time.Time) string {
	if len(list) == 0 {
		return "🗂️ You have no sessions here yet: mention me with a request to start one."
	}
	var b strings.Builder
	b.WriteString("🗂️ *Your sessions* (newest first):")
	for _, s := range list {
		b.WriteString("\n• " + s.Markdown(now))
	}
	return b.String()
}
