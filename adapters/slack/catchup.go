package slack

import (
	"context"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
)

// repliesPage is the page size of conversations.replies.
const repliesPage = 200

// catchUp fetches, after a reconnect, what was typed in active threads while the
// socket was down: Slack gives up redelivering events it could not send, but
// conversations.replies still has the messages.
//
// It runs on its own goroutine, not in the threads' queues: its Web API calls
// (rate-limited, Tier 3) must not delay any acknowledgement. The messages it
// finds are then queued on their threads like events. A message typed right
// after the reconnect can therefore reach Receive before one typed during the
// gap in the same thread; nothing is lost or doubled (Receive de-duplicates).
type catchUp struct {
	a    *Adapter
	d    *dispatcher
	wake chan struct{}
}

func newCatchUp(a *Adapter, d *dispatcher) *catchUp {
	return &catchUp{a: a, d: d, wake: make(chan struct{}, 1)}
}

// trigger asks for a catch-up; reconnects during one coalesce into one more.
func (c *catchUp) trigger() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// loop runs catch-ups when triggered until ctx ends.
func (c *catchUp) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		c.run(ctx)
	}
}

func (c *catchUp) run(ctx context.Context) {
	threads, err := c.d.h.ActiveThreads(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.a.log.Error("slack: catch-up: listing active threads failed", "err", err)
		}
		return
	}
	found := 0
	for _, tc := range threads {
		if tc.Thread.Platform != Platform {
			continue
		}
		msgs, err := c.replies(ctx, tc)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if gone(err) {
				c.close(ctx, tc.Thread, err)
				continue
			}
			c.a.log.Warn("slack: catch-up: conversations.replies failed", "thread", tc.Thread.Key(), "err", err)
			continue
		}
		for _, m := range msgs {
			in := m.inbound(c.d.id, "replies/"+m.Channel+"/"+m.TS)
			in.Thread = tc.Thread // the session's own key, whatever the team
			found++
			c.d.submit(in.Thread, func() { _ = c.d.deliverMessage(ctx, in) })
		}
	}
	c.a.log.Info("slack: catch-up done", "threads", len(threads), "messages", found)
}

// gone reports whether err says the thread is no longer there for the bot:
// its root was deleted, the channel too, or the bot was removed from it.
func gone(err error) bool {
	switch slackCode(err) {
	case "thread_not_found", "channel_not_found", "not_in_channel":
		return true
	}
	return false
}

// close tells the handler that a thread is gone, so later reconnects do not
// ask for it again.
func (c *catchUp) close(ctx context.Context, thread chat.ThreadRef, why error) {
	closer, ok := c.d.h.(chat.ThreadCloser)
	if !ok {
		return
	}
	if err := closer.CloseThread(ctx, thread); err != nil {
		c.a.log.Warn("slack: catch-up: closing a thread that is gone failed", "thread", thread.Key(), "err", err)
		return
	}
	c.a.log.Info("slack: catch-up: the thread is gone; closed it", "thread", thread.Key(), "reason", slackCode(why))
}

// replies returns the input messages of a thread after its cursor, oldest first,
// waiting out rate limits.
func (c *catchUp) replies(ctx context.Context, tc chat.ThreadCursor) ([]message, error) {
	var out []message
	params := &slackapi.GetConversationRepliesParameters{
		ChannelID: tc.Thread.Channel, Timestamp: tc.Thread.Thread, Oldest: tc.LastSeen, Limit: repliesPage,
	}
	for {
		msgs, hasMore, next, err := c.a.api.GetConversationRepliesContext(ctx, params)
		if rl := rateLimit(err); rl != nil {
			if err := sleep(ctx, rl.RetryAfter); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, apiError("conversations.replies", err)
		}
		for _, msg := range msgs {
			m := fromMsg(tc.Thread.Channel, msg.Msg)
			// The root comes first whatever the window; the window's bound is exclusive.
			if !tsAfter(m.TS, tc.LastSeen) || !m.isInput(c.d.id) {
				continue
			}
			out = append(out, m)
		}
		if !hasMore || next == "" {
			return out, nil
		}
		params.Cursor = next
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
