package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A run whose model calls all fail (the endpoint down, retries spent) leaves
// its prompt unanswered; once the model is back, Continue answers that prompt
// from the conversation as it is: the request carries the prompt once, no
// failed reply, and the answer ends the context. A second Continue finds
// nothing to answer and calls nothing.
func TestContinueAnswersThePromptAFailedRunLeft(t *testing.T) {
	forEachProvider(t, continueAnswersThePromptAFailedRunLeft)
}

func continueAnswersThePromptAFailedRunLeft(t *testing.T, p provider) {
	h := p.new(t)
	var up atomic.Bool
	h.fake.Handle(func(int) reply {
		if !up.Load() {
			return unavailable()
		}
		return say("the answer")
	})
	h.prompt("what is up")
	failed := len(h.fake.Requests())
	if failed != 4 {
		t.Fatalf("%d requests while down, want 1 + 3 retries", failed)
	}
	msgs := h.sess.Messages()
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleAssistant || last.StopReason != llm.StopReasonError {
		t.Fatalf("context ends with %s, want the failed reply", describe(last))
	}

	up.Store(true)
	out, err := h.sess.Continue(context.Background())
	if err != nil || out != agent.Started {
		t.Fatalf("Continue = %v, %v; want Started", out, err)
	}
	h.wait()
	reqs := h.fake.Requests()
	if len(reqs) != failed+1 {
		t.Fatalf("%d requests after Continue, want one more", len(reqs)-failed)
	}
	if got := reqs[len(reqs)-1].users; !slices.Equal(got, []string{"what is up"}) {
		t.Errorf("Continue's request has user texts %q, want the prompt once", got)
	}
	msgs = h.sess.Messages()
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleAssistant || last.TextContent() != "the answer" {
		t.Fatalf("context ends with %s, want the answer", describe(last))
	}
	for _, m := range msgs {
		if m.StopReason == llm.StopReasonError {
			t.Errorf("the failed reply is still in the context: %s", describe(m))
		}
	}

	if _, err := h.sess.Continue(context.Background()); !errors.Is(err, agent.ErrNothingToAnswer) {
		t.Errorf("second Continue = %v, want ErrNothingToAnswer", err)
	}
	if n := len(h.fake.Requests()); n != failed+1 {
		t.Errorf("the second Continue made %d requests", n-failed-1)
	}
}

// Continue while a run is going is refused, and changes nothing.
func TestContinueWhileRunningIsBusy(t *testing.T) {
	h := newHarness(t)
	gate := make(chan struct{})
	h.llm.Push(llmfake.Stream(llmfake.Await(gate), llmfake.Content("done"), llmfake.Finish("stop")))
	h.start("hold on", agent.PromptOptions{})
	if _, err := h.sess.Continue(context.Background()); !errors.Is(err, agent.ErrBusy) {
		t.Errorf("Continue during a run = %v, want ErrBusy", err)
	}
	close(gate)
	h.wait()
	if n := len(h.llm.Requests()); n != 1 {
		t.Errorf("%d requests, want the run's one", n)
	}
}

// A follow-up given while a failing run waits between retries is not sent
// to a model that does not answer once the retries are spent: it stays
// queued, and the run Continue starts answers the prompt first, then it.
func TestFollowUpWaitsWhenRetriesAreSpent(t *testing.T) {
	forEachProvider(t, followUpWaitsWhenRetriesAreSpent)
}

func followUpWaitsWhenRetriesAreSpent(t *testing.T, p provider) {
	h := p.new(t)
	var up atomic.Bool
	h.fake.Handle(func(seq int) reply {
		if !up.Load() {
			return unavailable()
		}
		return say("answer " + fmt.Sprint(seq))
	})
	var once sync.Once
	h.mu.Lock()
	h.sleep = func(ctx context.Context, _ time.Duration) error {
		once.Do(func() {
			if out, err := h.sess.Start(ctx, "and this too", agent.PromptOptions{Behavior: agent.BehaviorFollowUp}); out != agent.Queued || err != nil {
				t.Errorf("follow-up during the retry wait = %v, %v; want Queued", out, err)
			}
		})
		return ctx.Err()
	}
	h.mu.Unlock()
	h.prompt("what is up")
	if n := len(h.fake.Requests()); n != 4 {
		t.Fatalf("%d requests, want 1 + 3 retries and none for the follow-up", n)
	}
	if _, follow := h.sess.Queued(); len(follow) != 1 {
		t.Fatalf("%d queued follow-ups after the give-up, want the one", len(follow))
	}

	up.Store(true)
	if out, err := h.sess.Continue(context.Background()); err != nil || out != agent.Started {
		t.Fatalf("Continue = %v, %v", out, err)
	}
	h.wait()
	reqs := h.fake.Requests()[4:]
	if len(reqs) != 2 {
		t.Fatalf("%d requests after Continue, want the prompt's and the follow-up's", len(reqs))
	}
	if got := reqs[0].users; !slices.Equal(got, []string{"what is up"}) {
		t.Errorf("first request's user texts %q, want the prompt alone", got)
	}
	if got := reqs[1].users; !slices.Equal(got, []string{"what is up", "and this too"}) {
		t.Errorf("second request's user texts %q, want the prompt then the follow-up", got)
	}
}
