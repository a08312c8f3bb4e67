package bridge

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/outbox"
)

// notePoster is the in-process platform recording whom each post notifies.
type notePoster struct {
	*chatfake.Adapter
	mu     sync.Mutex
	notify map[string]string // message id -> chat.PostKey.Notify
}

func (n *notePoster) PostOnce(ctx context.Context, thread chat.ThreadRef, text string, key chat.PostKey) (string, error) {
	id, err := n.Post(ctx, thread, text)
	if err == nil {
		n.mu.Lock()
		n.notify[id] = key.Notify
		n.mu.Unlock()
	}
	return id, err
}

// A run without an answer text that must notify its requester ends with
// the footer posted as a new message that notifies them (an edit of the
// status message would tell no one); without anyone to notify, the footer
// ends the status message.
func TestRunWithoutAnswerNotifiesInANewMessage(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"U0ALICE", ""} {
		np := &notePoster{notify: map[string]string{}}
		r := newViewRigThrough(t, 4000, outbox.Config{}, func(c *chatfake.Adapter) chat.Adapter {
			np.Adapter = c
			return np
		})
		r.start("go")
		r.apply(r.v.endRun(footer(r.v.stats(), r.clock.Now(), 0, 0, false), who))
		msgs := r.messages()
		np.mu.Lock()
		var notified []string
		for _, m := range msgs {
			if n := np.notify[m.ID]; n != "" {
				notified = append(notified, n)
			}
		}
		np.mu.Unlock()
		if who == "" {
			if len(msgs) != 1 || len(notified) != 0 {
				t.Errorf("nobody to notify: %d messages notifying %v, want the status message alone, notifying nobody", len(msgs), notified)
			}
			continue
		}
		if len(msgs) != 2 || !slices.Equal(notified, []string{who}) || np.notify[msgs[1].ID] != who {
			t.Errorf("%d messages notifying %v (%+v), want the status message and a new footer message notifying %s", len(msgs), notified, msgs, who)
		}
	}
}
