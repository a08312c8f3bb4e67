package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
)

// llmWaitEnv is the program on the fake Discord with the model behind a
// proxy, restartable over the same data: the sessions' retry waits pass at
// once (counted), and the prober's waits pass when the test moves its clock.
type llmWaitEnv struct {
	*discordEnv
	cfg    config.Config
	proxy  *netfault.Proxy
	probes *clock.Manual
	up     atomic.Bool // the fake model answers (else 503)

	mu         sync.Mutex
	retryWaits int
	probeWaits []time.Duration // every wait the prober asked for
	passed     int             // how many of them passProbeTime let pass
}

func newLLMWaitEnv(t *testing.T) *llmWaitEnv {
	e := &llmWaitEnv{probes: clock.NewManual(time.Now()), discordEnv: &discordEnv{
		t:    t,
		fake: discordfake.New(t),
		llm:  llmfake.New(t),
	}}
	e.up.Store(true)
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if !e.up.Load() {
			return llmfake.HTTPError(503, "", "Service Unavailable")
		}
		if r.MaxTokens == 1 { // the prober's ask
			return llmfake.TextReply("pong")
		}
		if strings.Contains(lastUserText(r), "answer slowly") {
			return llmfake.TextReply(slowTokens...).WithChunkDelay(slowPace())
		}
		return answerPending(r)
	})
	e.proxy = netfault.New(t, netfault.HostPort(e.llm.URL()))
	e.remote = gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}})
	cfg := e2eConfig(t, e.llm, e.remote)
	cfg.LLM.BaseURL = e.proxy.URL(e.llm.URL())
	cfg.Discord.Enabled = true
	cfg.Discord.Token = e.fake.Token()
	cfg.Discord.APIURL = e.fake.URL()
	cfg.Discord.GuildIDs = []string{dGuild}
	cfg.ShutdownGrace = 2 * time.Second
	e.cfg = cfg
	var cancel context.CancelFunc
	e.ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	e.start()
	return e
}

// start runs a Main on the env's config, with the retry and probe clocks
// the test holds, and waits until it is ready.
func (e *llmWaitEnv) start() {
	e.startMain(e.cfg, func(m *Main) {
		m.Sleep = func(ctx context.Context, d time.Duration) error {
			e.mu.Lock()
			e.retryWaits++
			e.mu.Unlock()
			return ctx.Err()
		}
		m.ProbeSleep = func(ctx context.Context, d time.Duration) error {
			ch := e.probes.After(d)
			e.mu.Lock()
			e.probeWaits = append(e.probeWaits, d)
			e.mu.Unlock()
			select {
			case <-ch:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	})
}

// passProbeTime moves the prober's clock by at least total, one wait at a
// time as the prober asks for them, and returns how many waits passed; with
// settle, it returns once the prober asked the model after the last one and
// waits again (the model still down).
func (e *llmWaitEnv) passProbeTime(total time.Duration, settle bool) int {
	e.t.Helper()
	next := func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.probeWaits) > e.passed
	}
	waiting := func() {
		e.t.Helper()
		if err := waitFor(e.discordEnv, "the prober to wait", func() bool { return next() && e.probes.Waiting() > 0 }); err != nil {
			e.t.Fatal(err)
		}
	}
	n := 0
	defer func() {
		if settle {
			waiting()
		}
	}()
	for passed := time.Duration(0); passed < total; n++ {
		waiting()
		e.mu.Lock()
		d := e.probeWaits[e.passed]
		e.passed++
		e.mu.Unlock()
		e.probes.Advance(d)
		passed += d
	}
	return n
}

func (e *llmWaitEnv) counts() (retries, probes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.retryWaits, len(e.probeWaits)
}

const unreachable = "The model is unreachable"

// answerPending answers every user message since the model's last reply,
// one line each: queued messages a run takes together are each answered.
func answerPending(r llmfake.Request) llmfake.Response {
	var lines []string
	for _, m := range r.Messages {
		switch m.Role {
		case "assistant":
			lines = nil
		case "user":
			lines = append(lines, "answer to: "+m.Content)
		}
	}
	return llmfake.TextReply(strings.Join(lines, "\n"))
}

// llmDownTest takes the model down for ten minutes of the prober's clock
// (down: how), while three messages arrive in one thread and one in another;
// between, if set, runs while it is down (a restart). Then the model is
// back: every message must be answered exactly once, in order, each thread
// told once, and the model asked a bounded number of times meanwhile.
func llmDownTest(t *testing.T, down func(e *llmWaitEnv), back func(e *llmWaitEnv), between func(e *llmWaitEnv)) {
	e := newLLMWaitEnv(t)
	a, _ := e.open("first in a")
	e.waitBot(a, "⏱")
	b, _ := e.open("first in b")
	e.waitBot(b, "⏱")
	before := len(e.llm.Requests())

	down(e)
	inA := []string{"a one while down", "a two while down", "a three while down"}
	inB := "b one while down"
	e.fake.UserMessage(a, dAlice, inA[0])
	e.waitBot(a, unreachable)
	var queued []discordfake.Message
	for _, text := range inA[1:] {
		queued = append(queued, e.fake.UserMessage(a, dAlice, text))
	}
	queued = append(queued, e.fake.UserMessage(b, dAlice, inB))
	e.waitBot(b, unreachable)
	for _, m := range queued {
		e.waitReaction(m.ChannelID, m.ID, "⏳")
	}
	retries, _ := e.counts()
	if between != nil {
		between(e)
	}
	outagePasses := e.passProbeTime(10*time.Minute, true)
	_, probesDown := e.counts()
	duringOutage := len(e.llm.Requests()) - before

	back(e)
	upAt := time.Now()
	atBack := len(e.llm.Requests())
	e.passProbeTime(1, false) // the next probe finds it back
	// The probe, then the first thread's failed message asked again.
	if _, err := e.llm.WaitRequests(e.ctx, atBack+2); err != nil {
		t.Fatal(err)
	}
	asked := time.Since(upAt)
	for _, text := range inA {
		e.waitBot(a, "answer to: "+text)
	}
	e.waitBot(b, "answer to: "+inB)
	recovered := time.Since(upAt)
	retriesAfter, _ := e.counts()
	t.Logf("thread a:\n%s\nthread b:\n%s", e.transcript(a), e.transcript(b))

	// Each message answered once, in order; each thread told once.
	for th, texts := range map[string][]string{a: inA, b: {inB}} {
		if n := e.countBot(th, unreachable); n != 1 {
			t.Errorf("thread told %d times that the model is unreachable, want once:\n%s", n, e.transcript(th))
		}
		last := -1
		for _, text := range texts {
			if n := e.countBot(th, "answer to: "+text); n != 1 {
				t.Errorf("%q answered %d times, want once:\n%s", text, n, e.transcript(th))
			}
			at := strings.Index(e.transcript(th), "answer to: "+text)
			if at < last {
				t.Errorf("%q answered out of order:\n%s", text, e.transcript(th))
			}
			last = at
		}
	}
	// While down: the first message's run and its retries, and the probes;
	// nothing per queued message.
	if retries > 3 {
		t.Errorf("%d retry waits while down, want the first run's 3 at most", retries)
	}
	if probesDown > outagePasses+2 {
		t.Errorf("%d probe waits for %d clock steps", probesDown, outagePasses)
	}
	t.Logf("FIGURE llm down 10 min (%s): 4 messages in 2 threads delayed, 0 lost, each answered once in order; "+
		"the thread told once each; %d retry waits (the first run's), %d probes over 10 min of the probe clock "+
		"(waits %v); %d requests reached the model while down; after the probe found it back, a waiting message asked again in %s, "+
		"all answered in the threads after %s (%d retry waits then)",
		t.Name(), retries, probesDown, e.probeWaits, duringOutage, asked.Round(time.Millisecond), recovered.Round(time.Millisecond), retriesAfter-retries)
}

// The model's endpoint refuses connections (the proxy down) for ten
// minutes.
func TestLLMDownThenBack(t *testing.T) {
	t.Parallel()
	llmDownTest(t, func(e *llmWaitEnv) { e.proxy.Down() }, func(e *llmWaitEnv) {
		if err := e.proxy.Up(); err != nil {
			t.Fatal(err)
		}
	}, nil)
}

// The model answers 503 for ten minutes, and the bot restarts meanwhile:
// the waiting survives the restart, and no message is answered twice or
// lost. The fake counts every request of the outage.
func TestLLMDownAcrossARestart(t *testing.T) {
	t.Parallel()
	llmDownTest(t, func(e *llmWaitEnv) { e.up.Store(false) }, func(e *llmWaitEnv) { e.up.Store(true) }, func(e *llmWaitEnv) {
		e.stop()
		e.start()
	})
}

// While a thread waits for the model, !status says so and !stop drops the
// wait: the message queued behind is dropped (its ⏳ taken back) and never
// reaches the model, the failed one is not answered by itself when the model
// is back (it stays in the conversation, which the next message continues),
// a restart would not take the wait up again, and the next message is
// answered.
func TestLLMDownStopDropsTheWait(t *testing.T) {
	t.Parallel()
	e := newLLMWaitEnv(t)
	a, _ := e.open("first in a")
	e.waitBot(a, "⏱")

	e.proxy.Down()
	e.fake.UserMessage(a, dAlice, "a one while down")
	e.waitBot(a, unreachable)
	queued := e.fake.UserMessage(a, dAlice, "a two while down")
	e.waitReaction(a, queued.ID, "⏳")
	e.fake.UserMessage(a, dAlice, "!status")
	e.waitBot(a, "waiting for the model to answer again")
	e.fake.UserMessage(a, dAlice, "!stop")
	e.waitBot(a, "no longer wait for the model")
	if err := waitFor(e.discordEnv, "the ⏳ taken back", func() bool { return !e.botReacted(a, queued.ID, "⏳") }); err != nil {
		t.Fatal(err)
	}
	if runs, err := e.m.DB.WaitingRuns(e.ctx); err != nil || len(runs) != 0 {
		t.Errorf("WaitingRuns after !stop = %+v, %v; want none", runs, err)
	}

	if err := e.proxy.Up(); err != nil {
		t.Fatal(err)
	}
	atBack := len(e.llm.Requests())
	e.passProbeTime(1, false)
	if _, err := e.llm.WaitRequests(e.ctx, atBack+1); err != nil { // the probe
		t.Fatal(err)
	}
	e.fake.UserMessage(a, dAlice, "a three once back")
	e.waitBot(a, "answer to: a three once back")
	// The failed message is answered only as part of the next one's
	// conversation, not on its own.
	for _, m := range e.fake.Messages(a) {
		if m.AuthorBot && strings.Contains(m.Content, "answer to: a one while down") && !strings.Contains(m.Content, "answer to: a three once back") {
			t.Errorf("the stopped wait was answered on its own:\n%s", e.transcript(a))
		}
	}
	for _, r := range e.llm.Requests() {
		if strings.Contains(string(r.Body), "a two while down") {
			t.Errorf("the dropped message reached the model:\n%s", r.Body)
		}
	}
}

// slowTokens is a reply of 60 tokens.
var slowTokens = func() []string {
	var ts []string
	for i := range 60 {
		ts = append(ts, fmt.Sprintf("tok%02d ", i))
	}
	return ts
}()

// slowPace is the pause before each token of a slow reply: 250 ms, or
// THREADSMITH_SLOW_TOKEN (1s for the model at 1 token/s, a minute long).
func slowPace() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("THREADSMITH_SLOW_TOKEN")); err == nil && d > 0 {
		return d
	}
	return 250 * time.Millisecond
}

// A model that answers slowly but steadily (60 tokens, one per slowPace) is
// never cut by the bot's own timeouts: the run ends with the whole answer,
// no retry fires, the thread shows the answer growing while it streams, and
// a steer sent meanwhile reaches the model at its next step.
func TestLLMSlowStreamIsNotCut(t *testing.T) {
	t.Parallel()
	e := newLLMWaitEnv(t)
	a, _ := e.open("first in a")
	e.waitBot(a, "⏱")
	before := len(e.llm.Requests())
	retriesBefore, _ := e.counts()

	start := time.Now()
	e.fake.UserMessage(a, dAlice, "answer slowly please")
	// Progress: the thread shows the answer growing before it is done.
	partial := e.waitBot(a, "tok10")
	shownAt := time.Since(start)
	if strings.Contains(partial.Content, "tok59") {
		t.Errorf("the first sight of the answer is the whole of it:\n%s", partial.Content)
	}
	e.fake.UserMessage(a, dAlice, "!steer and mention the steer")
	e.waitBot(a, "tok59")
	e.waitBot(a, "answer to: and mention the steer")
	e.waitBot(a, "⏱")
	took := time.Since(start)

	reqs := e.llm.Requests()[before:]
	retries, _ := e.counts()
	if retries != retriesBefore || e.countBot(a, "retrying") != 0 {
		t.Errorf("%d retries of the slow answer, want none:\n%s", retries-retriesBefore, e.transcript(a))
	}
	if len(reqs) != 2 {
		t.Errorf("%d model requests, want the slow answer's and the steer's", len(reqs))
	}
	if e.countBot(a, "tok00 tok01") == 0 || e.countBot(a, unreachable) != 0 || e.countBot(a, "stopped") != 0 {
		t.Errorf("the slow answer is not in the thread whole:\n%s", e.transcript(a))
	}
	t.Logf("FIGURE slow model: %d tokens at one per %s: the answer seen growing after %s, whole and answered after %s; "+
		"a steer sent mid-stream answered in the next request; %d retries; %d requests",
		len(slowTokens), slowPace(), shownAt.Round(time.Millisecond), took.Round(time.Millisecond), retries-retriesBefore, len(reqs))
}
