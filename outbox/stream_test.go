package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
)

// streamer is a recorder that streams the messages posted with
// chat.PostKey.Stream (a chat.Streamer).
type streamer struct {
	*recorder
	mu       sync.Mutex
	streamed map[string]bool
}

func (s *streamer) PostOnce(ctx context.Context, thread chat.ThreadRef, text string, key chat.PostKey) (string, error) {
	id, err := s.recorder.Post(ctx, thread, text)
	if err == nil && key.Stream {
		s.mu.Lock()
		s.streamed[id] = true
		s.mu.Unlock()
	}
	return id, err
}

func (s *streamer) Streaming(_ chat.ThreadRef, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streamed[id]
}

// Edits of streamed messages draw from StreamPerWorkspace instead of
// EditPerWorkspace: 8 streams edited for a minute are not held to the 50
// edits a minute of the workspace, and each budget holds for its own
// messages.
func TestStreamedEditsHaveTheirOwnBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &streamer{recorder: newRecorder(), streamed: map[string]bool{}}
		lim := outbox.SlackLimits()
		o := start(t, s, outbox.Config{Limits: lim})
		var wg sync.WaitGroup
		var streamedIDs sync.Map
		for i := range 8 {
			wg.Go(func() {
				th := ref(fmt.Sprintf("C%d", i), "t")
				m := o.PostKeyed(th, "working…", outbox.Normal, chat.PostKey{Stream: true}, nil)
				if _, err := m.Wait(t.Context()); err == nil {
					streamedIDs.Store(m.ID(), true)
				}
				stream(o, m, fmt.Sprintf("s%d", i), 250*time.Millisecond, time.Minute)
			})
			wg.Go(func() {
				m := o.Post(ref(fmt.Sprintf("C%d", i), "u"), "edited", outbox.Normal, nil)
				stream(o, m, fmt.Sprintf("e%d", i), 250*time.Millisecond, time.Minute)
			})
		}
		wg.Wait()
		flush(t, o)
		var streamedEdits, plainEdits []time.Time
		for _, c := range s.accepted("edit", nil) {
			if _, ok := streamedIDs.Load(c.ID); ok {
				streamedEdits = append(streamedEdits, c.At)
			} else {
				plainEdits = append(plainEdits, c.At)
			}
		}
		t.Logf("a minute of 8 streamed and 8 edited messages: %d appends, %d edits", len(streamedEdits), len(plainEdits))
		checkWindow(t, "edits of plain messages", plainEdits, 50, time.Minute)
		checkWindow(t, "edits of streamed messages", streamedEdits, 100, time.Minute)
		if len(streamedEdits) <= 60 {
			t.Errorf("%d edits of streamed messages in a minute, want more than the 50 of the edit budget", len(streamedEdits))
		}
	})
}
