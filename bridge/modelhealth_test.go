package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// Only a model that could not be reached makes a thread wait: a refusal is
// an answer (the model is there), and waiting would never end it.
func TestModelUnreachableErr(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		down bool
	}{
		{"answered", nil, false},
		{"connection refused", &llm.Error{Kind: llm.ErrorNetwork, Message: "connection refused"}, true},
		{"timeout", &llm.Error{Kind: llm.ErrorTimeout, Message: "timeout awaiting response headers"}, true},
		{"503", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 503, Message: "Service Unavailable"}, true},
		{"429 rate limit", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "rate_limit_exceeded"}, true},
		{"stream cut", &llm.Error{Kind: llm.ErrorTruncated}, true},
		{"probe with no answer in time", fmt.Errorf("probe: %w", context.DeadlineExceeded), true},
		{"400", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 400, Code: "invalid_request_error"}, false},
		{"401", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 401, Code: "invalid_api_key"}, false},
		{"quota spent", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "insufficient_quota"}, false},
		{"context overflow", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 400, Code: "context_length_exceeded", ContextOverflow: true}, false},
		{"overflow on a 500", &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 500, ContextOverflow: true}, false},
		{"another error", errors.New("boom"), true},
	} {
		if down, reason := modelUnreachableErr(c.err); down != c.down || (down && reason == "") {
			t.Errorf("%s: unreachable = %v (%q), want %v", c.name, down, reason, c.down)
		}
	}
}

// The prober's pause doubles from its first up to its cap.
func TestProbePauses(t *testing.T) {
	h := &modelHealth{min: probeMin, max: probeMax}
	var got []string
	for d := h.next(0); len(got) < 6; d = h.next(d) {
		got = append(got, d.String())
	}
	want := "[30s 1m0s 2m0s 4m0s 5m0s 5m0s]"
	if fmt.Sprint(got) != want {
		t.Errorf("pauses = %v, want %s", got, want)
	}
}

// A thread waiting for the model that another replica takes (its lease
// lapsed) is taken up there: with the next message, the new owner asks the
// model at once, answers the waiting message first, then the new one, each
// once.
func TestReplicaTakesUpAThreadWaitingForTheModel(t *testing.T) {
	t.Parallel()
	a := newRig(t, leased("replica-a"))
	var up atomic.Bool
	a.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if !up.Load() {
			return llmfake.HTTPError(503, "", "Service Unavailable")
		}
		users := userTexts(req)
		lines := strings.Split(users[len(users)-1], "\n") // after the author line
		return llmfake.TextReply("ANSWER to " + lines[len(lines)-1])
	})
	th := testThread("509.1")
	a.say(th, alice, "WAITING-REQUEST", true)
	a.waitText(th, "The model is unreachable")
	rec, err := a.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := a.db.WaitingRuns(a.ctx); err != nil || len(runs) != 1 || runs[0].ThreadID != rec.ID {
		t.Fatalf("WaitingRuns = %+v, %v; want the thread's run", runs, err)
	}
	l := a.owner(th).lease.Load()
	if l == nil {
		t.Fatal("the owner has no lease")
	}
	b := newRig(t, replicaOf(a, "replica-b"))
	up.Store(true)
	a.lapse(*l, "replica-b")
	a.waitUntil("the old owner lets the thread go", func() bool { return !a.live(th) })

	b.say(th, bob, "NEXT-REQUEST", false)
	b.waitText(th, "ANSWER to NEXT-REQUEST")
	tr := b.chat.Transcript(th)
	waiting, next := strings.Index(tr, "ANSWER to WAITING-REQUEST"), strings.Index(tr, "ANSWER to NEXT-REQUEST")
	if waiting < 0 || waiting > next || strings.Count(tr, "ANSWER to WAITING-REQUEST") != 1 {
		t.Errorf("the waiting message is not answered once, before the next one:\n%s", tr)
	}
	if got := userMessages(a, rec.SessionID, "WAITING-REQUEST"); got != 1 {
		t.Errorf("the waiting message is %d times in the session, want once", got)
	}
	if strings.Contains(tr, "The model is unreachable") || strings.Contains(tr, "interrupted") {
		t.Errorf("the new owner told the thread again:\n%s", tr)
	}
}

// The prober asks the model the failed run used: a thread on another model
// than the default is not resumed, failed and told again on every probe
// because the default model answers.
func TestProbeAsksTheModelTheThreadUses(t *testing.T) {
	t.Parallel()
	step := make(chan struct{})
	r := newRig(t, func(c *Config, _ *Platform) {
		c.ProbeSleep = func(ctx context.Context, _ time.Duration) error {
			select {
			case <-step:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	var probes, calls atomic.Int32
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if req.MaxTokens == 1 {
			probes.Add(1)
		} else {
			calls.Add(1)
		}
		if req.Model == otherModel {
			return llmfake.HTTPError(503, "", "Service Unavailable")
		}
		return llmfake.TextReply("fine")
	})
	th := testThread("510.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "!model "+otherModel, false)
	r.waitText(th, "This thread now uses `"+otherModel+"`")
	r.say(th, alice, "on the other model", false)
	r.waitText(th, "The model is unreachable")
	failed := calls.Load()
	for i := range 3 {
		select {
		case step <- struct{}{}:
		case <-r.ctx.Done():
			t.Fatal("the prober never waited")
		}
		r.waitUntil("the probe", func() bool { return probes.Load() == int32(i+1) })
	}
	if n := calls.Load(); n != failed {
		t.Errorf("%d model calls after 3 probes of a model still down, want none", n-failed)
	}
	if n := strings.Count(r.chat.Transcript(th), "The model is unreachable"); n != 1 {
		t.Errorf("told %d times, want once:\n%s", n, r.chat.Transcript(th))
	}
}

// A message that joins a run while it waits between retries of a model that
// is down waits with it: no model call of its own, one notice in all; once
// the model is back, the run's message is answered, then it.
func TestMessageDuringFailingRetriesWaitsWithTheRun(t *testing.T) {
	t.Parallel()
	step := make(chan struct{})
	inRetry, release := make(chan struct{}, 8), make(chan struct{})
	r := newRig(t, func(c *Config, _ *Platform) {
		c.Sleep = func(ctx context.Context, _ time.Duration) error {
			inRetry <- struct{}{}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		c.ProbeSleep = func(ctx context.Context, _ time.Duration) error {
			select {
			case <-step:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
	var up atomic.Bool
	var calls atomic.Int32
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if req.MaxTokens != 1 {
			calls.Add(1)
		}
		if !up.Load() {
			return llmfake.HTTPError(503, "", "Service Unavailable")
		}
		users := userTexts(req)
		lines := strings.Split(users[len(users)-1], "\n")
		return llmfake.TextReply("ANSWER to " + lines[len(lines)-1])
	})
	th := testThread("511.1")
	r.say(th, alice, "FIRST-REQUEST", true)
	recv(r, "the first retry wait", inRetry)
	r.say(th, alice, "SECOND-REQUEST", false)
	r.waitUntil("the second message queued in the session", func() bool {
		var n int
		o := r.owner(th)
		r.onOwner(o, func() {
			_, follow := o.sess.Queued()
			n = len(follow)
		})
		return n == 1
	})
	close(release)
	r.waitText(th, "The model is unreachable")
	if n := calls.Load(); n != 3 {
		t.Errorf("%d model calls while down, want the first run's 1 + 2 retries", n)
	}

	up.Store(true)
	step <- struct{}{}
	r.waitText(th, "ANSWER to SECOND-REQUEST")
	tr := r.chat.Transcript(th)
	first, second := strings.Index(tr, "ANSWER to FIRST-REQUEST"), strings.Index(tr, "ANSWER to SECOND-REQUEST")
	if first < 0 || first > second || strings.Count(tr, "ANSWER to") != 2 {
		t.Errorf("want the first message answered, then the second, once each:\n%s", tr)
	}
	if n := strings.Count(tr, "gave up"); n != 1 || strings.Count(tr, "The model is unreachable") != 1 {
		t.Errorf("%d gave-up notices, want one and one wait notice:\n%s", n, tr)
	}
}

// A thread whose model is not the one found down is not held while the other
// waits: its message is answered at once, and it is not told of an outage.
func TestOtherModelIsNotHeldWhileOneIsDown(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) {
		c.ProbeSleep = func(ctx context.Context, _ time.Duration) error {
			<-ctx.Done() // the model found down stays down
			return ctx.Err()
		}
	})
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if req.Model == otherModel {
			return llmfake.HTTPError(503, "", "Service Unavailable")
		}
		users := userTexts(req)
		return llmfake.TextReply("ANSWER to " + users[len(users)-1])
	})
	a, b := testThread("512.1"), testThread("512.2")
	r.say(a, alice, "hello a", true)
	r.waitRuns(a, 1)
	r.say(b, alice, "hello b", true)
	r.waitRuns(b, 1)
	r.say(a, alice, "!model "+otherModel, false)
	r.waitText(a, "This thread now uses `"+otherModel+"`")
	r.say(a, alice, "on the other model", false)
	r.waitText(a, "The model is unreachable")
	r.say(b, alice, "B-AGAIN", false)
	r.waitText(b, "ANSWER to B-AGAIN")
	if tr := r.chat.Transcript(b); strings.Contains(tr, "The model is unreachable") {
		t.Errorf("a thread on a model that answers was told of an outage:\n%s", tr)
	}
}
