package bridge

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// runOrderStore holds each StartRun until the session appends a user
// message that came from chat input (the append that marks the input
// delivered), for at most a second, and counts such appends made while a
// StartRun was still unrecorded.
type runOrderStore struct {
	storage.Store
	starting atomic.Int32
	appended chan struct{}
	early    atomic.Int32
}

func (s *runOrderStore) StartRun(ctx context.Context, threadID int64, sessionID string, inboundID int64) (int64, error) {
	s.starting.Add(1)
	defer s.starting.Add(-1)
	select {
	case <-s.appended:
	case <-time.After(time.Second):
	}
	return s.Store.StartRun(ctx, threadID, sessionID, inboundID)
}

func (s *runOrderStore) AppendEntries(ctx context.Context, sessionID string, es []transcript.Entry) error {
	for _, e := range es {
		if e.Type == transcript.EntryMessage && e.Message != nil && e.Message.Role == llm.RoleUser && e.Message.InputID != "" {
			if s.starting.Load() > 0 {
				s.early.Add(1)
			}
			select {
			case s.appended <- struct{}{}:
			default:
			}
		}
	}
	return s.Store.AppendEntries(ctx, sessionID, es)
}

// A run is recorded before its prompt is stored: the prompt's append marks
// the chat input delivered, and a crash between the two (the input delivered,
// no run) would leave nothing to report as interrupted after the restart —
// the person would never be told their request was cut off.
func TestRunIsRecordedBeforeItsPromptIsStored(t *testing.T) {
	t.Parallel()
	var store *runOrderStore
	r := newRig(t, func(c *Config, _ *Platform) {
		store = &runOrderStore{Store: c.Store, appended: make(chan struct{}, 1)}
		c.Store = store
	})
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("done") })
	th := testThread("71.1")
	r.say(th, alice, "first request", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "second request", false)
	r.waitRuns(th, 2)
	if n := store.early.Load(); n != 0 {
		t.Errorf("%d prompts were stored (their input delivered) before their run was recorded", n)
	}
	rec, _ := r.thread(th)
	if runs, err := r.db.ThreadRuns(r.ctx, rec.ID); err != nil || len(runs) != 2 {
		t.Errorf("runs = %+v, %v; want 2", runs, err)
	}
}
