package bridge

// The model's health: one fact for the whole bridge, not one per thread. A
// thread whose run ended because the model could not be reached
// (thread_modelwait.go) reports it down and waits; a thread with input for
// that model while it is known down waits too, without calling it. One
// prober runs while threads wait: it asks the model with a growing pause
// (probeMin doubling to probeMax) and, once it answers, hands every waiting
// thread msgModelBack. A mutex and no owner's state, as the run slots.

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/internal/backoff"
)

// The prober's pause between two asks of the model, and how long one ask may
// take before it counts as unanswered.
const (
	probeMin     = 30 * time.Second
	probeMax     = 5 * time.Minute
	probeTimeout = 30 * time.Second
)

type modelHealth struct {
	// probe asks the model named once; its error says whether it answered
	// (modelUnreachableErr).
	probe    func(ctx context.Context, model string) error
	sleep    func(ctx context.Context, d time.Duration) error
	min, max time.Duration
	log      *slog.Logger
	ctx      context.Context // the bridge's: the prober ends with it
	wg       *sync.WaitGroup // the bridge's background goroutines

	mu      sync.Mutex
	model   string    // the model to ask: the one a run last found down (the default one at first)
	down    bool      // a run found the model unreachable, and no probe has reached it since
	reason  string    // why, in a few words for the threads
	waiters []*thread // the threads to tell when the model is back, in the order they came
	probing bool      // the prober runs
}

// knownDown reports whether model (the one a thread's session uses; "" for
// a thread whose session is not open) is known unreachable, and why: a model
// other than the one found down is not.
func (h *modelHealth) knownDown(model string) (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if model != "" && model != h.model {
		return false, ""
	}
	return h.down, h.reason
}

// wait adds t to the threads told when the model is back, and starts the
// prober unless it runs. reason, when set, is news that model (the one t's
// session uses; "" for the one probed so far) is down; now asks the model
// at once (a start that found threads waiting does not know whether it is
// still down) rather than after probeMin.
func (h *modelHealth) wait(t *thread, model, reason string, now bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reason != "" {
		h.down, h.reason = true, reason
		if model != "" {
			h.model = model
		}
	}
	if !slices.Contains(h.waiters, t) {
		h.waiters = append(h.waiters, t)
	}
	if h.probing || h.ctx.Err() != nil {
		return
	}
	h.probing = true
	first := h.min
	if now {
		first = 0
	}
	h.wg.Add(1)
	go h.run(first)
}

// suspect takes the model for down (why: reason) until a probe says
// otherwise; the probe comes with the first thread that waits.
func (h *modelHealth) suspect(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down, h.reason = true, reason
}

// leave takes t off the threads waiting (its wait was dropped).
func (h *modelHealth) leave(t *thread) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiters = slices.DeleteFunc(h.waiters, func(w *thread) bool { return w == t })
}

// run is the prober: it asks the model after pause d, then after a pause
// doubling up to max, until the model answers or the bridge stops.
func (h *modelHealth) run(d time.Duration) {
	defer h.wg.Done()
	for {
		if d > 0 {
			if err := h.sleep(h.ctx, d); err != nil || h.ctx.Err() != nil {
				h.stopProbing()
				return
			}
		}
		h.mu.Lock()
		model := h.model
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(h.ctx, probeTimeout)
		err := h.probe(ctx, model)
		cancel()
		if h.ctx.Err() != nil {
			h.stopProbing()
			return
		}
		h.mu.Lock()
		if down, reason := modelUnreachableErr(err); down {
			if h.down {
				h.reason = reason
			}
			h.mu.Unlock()
			d = h.next(d)
			h.log.Info("the model is still unreachable", "err", err, "next_probe_in", d)
			continue
		}
		waiters := h.waiters
		h.waiters, h.down, h.reason, h.probing = nil, false, "", false
		h.mu.Unlock()
		h.log.Info("the model answers again", "threads_waiting", len(waiters))
		for _, t := range waiters {
			t.post(msgModelBack{})
		}
		return
	}
}

func (h *modelHealth) stopProbing() {
	h.mu.Lock()
	h.probing = false
	h.mu.Unlock()
}

// next is the pause after pause d.
func (h *modelHealth) next(d time.Duration) time.Duration {
	return min(max(2*d, h.min), h.max)
}

// modelUnreachableErr reports whether err, from a model call, says the model
// could not be reached (a connection refused or cut, a timeout, a 5xx, a
// 429 that is not a spent quota), with a few words of why. An answer, even a
// refusal (400, 401, a context overflow), says it is reachable.
func modelUnreachableErr(err error) (bool, string) {
	if err == nil {
		return false, ""
	}
	var le *llm.Error
	if errors.As(err, &le) {
		if le.ContextOverflow || !le.Retryable() {
			return false, ""
		}
		return true, shortReason(le.Error())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true, "no answer in time"
	}
	return true, shortReason(err.Error())
}

// probeModel is the default probe: the smallest request the model answers.
func probeModel(m llm.Model) func(ctx context.Context, name string) error {
	return func(ctx context.Context, name string) error {
		if m == nil {
			return nil
		}
		_, err := m.Stream(ctx, llm.Request{
			Model:     name,
			Messages:  []llm.Message{{Role: llm.RoleUser, Content: []llm.Content{llm.Text("ping")}}},
			MaxTokens: 1,
		}, func(llm.Delta, *llm.Message) {})
		return err
	}
}

// sleepCtx waits d or until ctx ends (then its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if !backoff.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}
