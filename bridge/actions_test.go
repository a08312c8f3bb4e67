package bridge

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/outbox"
)

// buttonChat is the in-process platform with buttons: it records each
// message's latest buttons (by id) and edits its text as the platform would.
type buttonChat struct {
	*chatfake.Adapter
	mu   sync.Mutex
	acts map[string][]string
}

func (b *buttonChat) SetActions(ctx context.Context, th chat.ThreadRef, id, text string, actions []chat.Action) error {
	if err := b.Edit(ctx, th, id, text); err != nil {
		return err
	}
	var ids []string
	for _, a := range actions {
		ids = append(ids, a.ID+a.URL)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.acts[id] = ids
	return nil
}

func (b *buttonChat) buttons(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.acts[id]
}

// A run's status message shows Stop while it works; once it ended, the
// buttons offered after a push (Diff, the pull request) replace it, there and
// on the status of every later run once that one ends.
func TestStatusButtonsFollowTheRun(t *testing.T) {
	t.Parallel()
	r := newViewRig(t, 3500)
	bc := &buttonChat{Adapter: r.chat, acts: map[string][]string{}}
	out := outbox.New(bc, outbox.Config{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = out.Close(ctx)
	})
	r.out = out
	r.v = newView(3500, nil, r.clock.Now, nil)

	r.start("first")
	first := r.messages()[0].ID
	if got := bc.buttons(first); !slices.Equal(got, []string{"stop"}) {
		t.Fatalf("buttons while running: %v, want [stop]", got)
	}
	r.reply(textReply("done", nil))
	r.play(agent.AgentEnd{})
	r.end(100, 1000, false)
	r.messages()
	if got := bc.buttons(first); len(got) != 0 {
		t.Errorf("buttons after the run: %v, want none", got)
	}
	if strings.Contains(r.messages()[0].Text, "working") {
		t.Errorf("status still working: %q", r.messages()[0].Text)
	}

	r.apply(r.v.offer(pushedActions("https://forge.test/pull/1", true)))
	r.messages()
	if got, want := bc.buttons(first), []string{"diff", "prhttps://forge.test/pull/1"}; !slices.Equal(got, want) {
		t.Errorf("buttons after a push: %v, want %v", got, want)
	}

	r.start("second")
	msgs := r.messages()
	second := msgs[len(msgs)-1].ID
	if got := bc.buttons(second); !slices.Equal(got, []string{"stop"}) {
		t.Errorf("second run's buttons: %v, want [stop]", got)
	}
	r.reply(textReply("again", nil))
	r.play(agent.AgentEnd{})
	r.end(100, 1000, false)
	r.messages()
	if got := bc.buttons(second); len(got) != 2 || got[0] != "diff" {
		t.Errorf("second run's buttons after it: %v, want Diff and the pull request", got)
	}
}
