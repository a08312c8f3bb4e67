package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
)

// The Discord gateway connection goes through a TCP proxy: cut four times
// (both ends see it close), then half-open (no data either way, no close)
// until discordgo misses its heartbeat acknowledgements. A message written
// after each fault is answered once, run once; the half-open connection is
// replaced within five heartbeat intervals (discordgo's rule; the fake
// announces 1 s) and a margin. It logs the figures.
func TestDiscordGatewayCutsAndHalfOpen(t *testing.T) {
	t.Parallel()
	var proxy *netfault.Proxy
	e := newDiscordEnv(t, func(_ *config.Config, e *discordEnv) {
		proxy = netfault.New(t, netfault.HostPort(e.fake.URL()))
		e.fake.SetGatewayAddr(proxy.Addr())
	})
	fake := e.fake
	e.scripts.add("kilo", answerPrompt)
	th, _ := e.threadOf(e.code("kilo: start"))
	e.waitBot(th, "⏱")

	var texts []string
	var resumed []time.Duration
	for i := range 4 {
		resumes, readies := fake.Resumes(), fake.Readies()
		at := time.Now()
		if err := proxy.Cut(); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("typed after cut %d", i+1)
		fake.UserMessage(th, dAlice, text)
		texts = append(texts, text)
		if err := waitFor(e, "the gateway back after a cut", func() bool {
			return fake.Resumes() > resumes || fake.Readies() > readies
		}); err != nil {
			t.Fatal(err)
		}
		resumed = append(resumed, time.Since(at))
		e.waitBot(th, "answer to: "+text)
	}

	resumes, readies := fake.Resumes(), fake.Readies()
	at := time.Now()
	if err := proxy.HalfOpen(); err != nil {
		t.Fatal(err)
	}
	held := "typed while the connection is half-open"
	fake.UserMessage(th, dAlice, held)
	texts = append(texts, held)
	// discordgo closes the connection when its heartbeats go unanswered:
	// from then on new connections pass.
	if err := waitFor(e, "the half-open connection closed", func() bool { return fake.Connections() == 0 }); err != nil {
		t.Fatal(err)
	}
	closedAfter := time.Since(at)
	proxy.Heal()
	if err := waitFor(e, "the gateway back after the half-open connection", func() bool {
		return fake.Resumes() > resumes || fake.Readies() > readies
	}); err != nil {
		t.Fatal(err)
	}
	replaced := time.Since(at)
	e.waitBot(th, "answer to: "+held)
	heldAnswered := time.Since(at)

	for _, text := range texts {
		runs := 0
		for _, r := range e.requestsFor("kilo") {
			if lastUserText(r) == text {
				runs++
			}
		}
		if runs != 1 {
			t.Errorf("runs for %q: got %d, want 1", text, runs)
		}
		if n := e.countBot(th, "answer to: "+text); n != 1 {
			t.Errorf("answers to %q: got %d, want 1", text, n)
		}
	}
	if replaced > 5*time.Second+15*time.Second {
		t.Errorf("the half-open gateway connection was replaced after %s, want within 5 heartbeat intervals (5 s) and a margin", replaced)
	}
	t.Logf("FIGURE discord: 4 cuts, gateway back after %v; half-open closed by the client after %s, replaced after %s, its message answered %s after the fault; %d messages, each answered once",
		roundAll(resumed), closedAfter.Round(time.Millisecond), replaced.Round(time.Millisecond), heldAnswered.Round(time.Millisecond), len(texts))
}

// waitFor polls cond every 10 ms until it holds or e's context ends.
func waitFor(e *discordEnv, what string, cond func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-e.ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, e.ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
