package bridge

import (
	"fmt"
	"strings"
	"sync"
)

// runSlots caps the runs of all threads (max_concurrent_runs). A thread that
// finds no free slot does not block on one: it parks its input, registers
// here and goes on answering commands (!status, !stop) at once; when a slot
// frees, it is handed to the longest-waiting thread as a message on that
// thread's own inbox. Waiting is a state of the thread, not a blocked
// goroutine.
type runSlots struct {
	mu      sync.Mutex
	free    int
	size    int
	waiters []*thread // FIFO; a thread appears at most once
}

func newRunSlots(n int) *runSlots { return &runSlots{free: n, size: n} }

// tryAcquire takes a free slot, or registers t to be handed the next one.
func (s *runSlots) tryAcquire(t *thread) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free > 0 {
		s.free--
		return true
	}
	for _, w := range s.waiters {
		if w == t {
			return false
		}
	}
	s.waiters = append(s.waiters, t)
	return false
}

// release frees a slot: it goes to the first waiting thread (which owns it
// from now on, as the message msgSlotGranted), or back to the pool.
func (s *runSlots) release() {
	s.mu.Lock()
	if len(s.waiters) == 0 {
		s.free++
		s.mu.Unlock()
		return
	}
	t := s.waiters[0]
	s.waiters[0] = nil
	s.waiters = s.waiters[1:]
	s.mu.Unlock()
	if !t.post(msgSlotGranted{}) {
		s.release() // its owner ended: the next one gets it
	}
}

// cancel withdraws t's wait. A slot already handed to it arrives anyway, and
// the thread gives it back.
func (s *runSlots) cancel(t *thread) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.waiters {
		if w == t {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			return
		}
	}
}

// ahead counts the threads waiting before t (all of them if t does not wait).
func (s *runSlots) ahead(t *thread) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.waiters {
		if w == t {
			return i
		}
	}
	return len(s.waiters)
}

// quoteTexts lists texts people wrote, one short line each.
func quoteTexts(texts []string) string {
	var b strings.Builder
	for i, s := range texts {
		fmt.Fprintf(&b, "\n%d. %s", i+1, oneLine(s, 100))
	}
	return b.String()
}
