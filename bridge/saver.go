package bridge

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
)

// saveEvery is how often a running transcript's text is written to storage, so
// that after a crash the bot can mark its messages as interrupted without
// erasing what they showed.
const saveEvery = 3 * time.Second

// statusSaver records the messages of the current run's transcript in the
// outbound table, debounced: one write per message every saveEvery at most.
type statusSaver struct {
	store storage.Store
	log   *slog.Logger

	mu       sync.Mutex
	threadID int64
	runID    int64
	channel  string
	msgs     map[*outbox.Message]*savedMsg
	timer    *time.Timer
	closed   bool
}

type savedMsg struct {
	rowID int64
	text  string
	dirty bool
}

func newStatusSaver(store storage.Store, log *slog.Logger) *statusSaver {
	return &statusSaver{store: store, log: log, msgs: map[*outbox.Message]*savedMsg{}}
}

// track starts a run: m is its status message.
func (s *statusSaver) track(m *outbox.Message, threadID, runID int64, channel, text string) {
	s.mu.Lock()
	s.threadID, s.runID, s.channel = threadID, runID, channel
	s.msgs = map[*outbox.Message]*savedMsg{}
	s.mu.Unlock()
	s.update(m, text)
}

// update notes the latest text of a transcript message.
func (s *statusSaver) update(m *outbox.Message, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runID == 0 {
		return
	}
	sm := s.msgs[m]
	if sm == nil {
		sm = &savedMsg{}
		s.msgs[m] = sm
	}
	sm.text, sm.dirty = text, true
	if s.timer == nil && !s.closed {
		s.timer = time.AfterFunc(saveEvery, s.flush)
	}
}

// flush writes what changed; messages not posted yet wait for the next flush.
func (s *statusSaver) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pending := false
	for m, sm := range s.msgs {
		if !sm.dirty {
			continue
		}
		id := m.ID()
		if id == "" {
			pending = true
			continue
		}
		var err error
		if sm.rowID == 0 {
			sm.rowID, err = s.store.RecordOutbound(ctx, storage.Outbound{ThreadID: s.threadID, RunID: s.runID, Kind: storage.OutboundStatus, Channel: s.channel, MessageID: id, Text: sm.text})
		} else {
			err = s.store.UpdateOutbound(ctx, sm.rowID, sm.text)
		}
		if err != nil {
			s.log.Warn("recording a posted message", "err", err)
			continue
		}
		sm.dirty = false
	}
	if pending && !s.closed {
		s.timer = time.AfterFunc(saveEvery, s.flush)
	}
}

// close writes what it can and stops the timer for good.
func (s *statusSaver) close() {
	s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}
