package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
)

// The model's endpoint goes through a TCP proxy that refuses connections
// for ten minutes of the sessions' retry clock (its waits pass at once and
// add up), while two messages arrive in a thread; then it is back and a
// third arrives. Retries must be bounded (at most 1 + agent.retry's
// max_retries requests per message, waits within max_delay), the thread must
// hear of each giving up, and the third message must be answered. It logs
// the figures: requests and waits per message, notices, what was answered.
func TestLLMDownThenBack(t *testing.T) {
	t.Parallel()
	var (
		proxy  *netfault.Proxy
		mu     sync.Mutex
		waited time.Duration
		waits  int
	)
	e := newDiscordEnv(t, func(c *config.Config, e *discordEnv) {
		proxy = netfault.New(t, netfault.HostPort(e.llm.URL()))
		c.LLM.BaseURL = proxy.URL(e.llm.URL())
		e.sleep = func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waited += d
			waits++
			mu.Unlock()
			return ctx.Err()
		}
	})
	fake := e.fake
	e.scripts.add("lima", answerPrompt)
	th, _ := e.threadOf(e.code("lima: start"))
	e.waitBot(th, "⏱")
	before := len(e.llm.Requests())

	proxy.Down()
	down := []string{"asked while the model is down", "asked again while it is down"}
	for i, text := range down {
		fake.UserMessage(th, dAlice, text)
		e.waitBotCount(th, "gave up", i+1)
	}
	mu.Lock()
	downWaits, downWaited := waits, waited
	mu.Unlock()
	if n := len(e.llm.Requests()); n != before {
		t.Errorf("%d requests reached the model while it was unreachable", n-before)
	}
	// Each message's run tried 1 + max_retries times: max_retries waits.
	maxRetries := 3
	if downWaits > len(down)*maxRetries {
		t.Errorf("%d retry waits for %d messages, want at most %d each", downWaits, len(down), maxRetries)
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	after := "asked once the model is back"
	fake.UserMessage(th, dAlice, after)
	e.waitBot(th, "answer to: "+after)
	// What the thread shows of the outage.
	gaveUp := e.countBot(th, "gave up")
	answeredDown := 0
	for _, text := range down {
		answeredDown += e.countBot(th, "answer to: "+text)
	}
	// The messages of the outage reach the model with the next request, as
	// earlier turns of its conversation.
	last := e.llm.Requests()[len(e.llm.Requests())-1]
	var seen int
	for _, m := range last.Messages {
		for _, text := range down {
			if m.Role == "user" && strings.Contains(m.Content, text) {
				seen++
			}
		}
	}
	t.Logf("FIGURE llm: %d messages while down: %d retry waits adding to %s of the retry clock, %d gave-up notices, %d answered on their own; "+
		"after it is back the next message is answered, its request carrying %d of them",
		len(down), downWaits, downWaited, gaveUp, answeredDown, seen)
	if gaveUp != len(down) {
		t.Errorf("%d gave-up notices for %d messages, want one each", gaveUp, len(down))
	}
}
