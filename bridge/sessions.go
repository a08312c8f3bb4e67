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
	"github.com/threadsmith/threadsmith/outbox"
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
		out[i] = chat.SessionSummary{State: sessionState(s), Repo: s.Repo, Branch: s.Branch, Origin: s.Origin, LastActivity: s.LastActivity, Cost: s.Cost}
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

// sessionsCommand answers !sessions with the asker's list, read and sent
// off the owner.
func (t *thread) sessionsCommand(c commandCall) {
	in := c.in
	t.background(func() msgCommandDone {
		return msgCommandDone{say: t.b.answerSessions(t.b.ctx, t.p, in)}
	})
}

// answerSessions sends in's author their list of sessions. The list is
// theirs alone: its page links open sessions of other channels and DMs, so
// it goes only where they alone see it (chat.Whisperer); a platform without
// private notes (the console, one person's) gets it as the thread's answer.
// It returns what the thread must say ("" when the note went out).
func (b *Bridge) answerSessions(ctx context.Context, p *platform, in chat.Inbound) string {
	list, err := b.sessionsOf(ctx, p, in.Author.ID)
	if err != nil {
		b.log.Warn("listing sessions", "user", in.Author.ID, "err", err)
		return "❌ I couldn't read your sessions just now; try again in a moment."
	}
	text := sessionsText(list, b.cfg.Now())
	w, ok := p.Adapter.(chat.Whisperer)
	if !ok {
		return text
	}
	if err := w.Whisper(ctx, in, text); err != nil {
		b.log.Warn("sending the sessions list", "user", in.Author.ID, "err", err)
		return "❌ I couldn't send you your sessions privately just now; try again in a moment."
	}
	return ""
}

// sessionless says text is a command answered without a session
// (command.sessionless).
func sessionless(text string) bool {
	c := classify(text)
	return c.command && lookupCommand(c.name).sessionless != nil
}

// answerUnknownThread answers a sessionless command in a thread the bridge
// has no record of (a channel thread that is no session, a DM): there is no
// thread to store it in and nothing to order it with, so the handler
// answers it once (a redelivery is remembered) from an allowed author.
func (h *handler) answerUnknownThread(ctx context.Context, in chat.Inbound) (chat.Receipt, error) {
	b, p := h.b, h.p
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	if !h.allowed(in) || closing {
		return h.admit(ctx, in, false, "") // refused there (privately), or left to redeliver
	}
	first, err := b.cfg.Store.MarkEventProcessed(ctx, p.name, "command/"+in.Thread.Channel+"/"+refusalID(in))
	if err != nil {
		return 0, err
	}
	if !first {
		return chat.Duplicate, nil
	}
	if text := lookupCommand(classify(in.Text).name).sessionless(b, ctx, p, in); text != "" {
		p.Outbox.Post(in.Thread, text, outbox.High, nil)
	}
	return chat.Accepted, nil
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
