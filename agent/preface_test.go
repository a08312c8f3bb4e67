package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
)

// A before_agent_start hook's preface goes before the prompt (a header the
// prompt is read under) and its messages after it; both are kept in the
// transcript, so the next request repeats them as they were.
func TestBeforeAgentStartPrefaceGoesBeforeThePrompt(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p provider) {
		n := 0
		h := p.new(t, func(c *agent.Config) {
			c.Extensions = append(c.Extensions, agent.Extension{Name: "ctx",
				BeforeAgentStart: func(context.Context, agent.BeforeAgentStart) agent.BeforeAgentStartResult {
					n++
					return agent.BeforeAgentStartResult{
						Preface:  []llm.Message{{Content: []llm.Content{llm.Text("[header " + string(rune('0'+n)) + "]")}}},
						Messages: []llm.Message{{Content: []llm.Content{llm.Text("after")}}},
					}
				}})
		})
		h.fake.Handle(func(int) reply { return say("ok") })
		h.prompt("one")
		h.prompt("two")
		reqs := h.fake.Requests()
		if got := strings.Join(reqs[1].users, "|"); got != "[header 1]|one|after|[header 2]|two|after" {
			t.Errorf("users of the second request = %s", got)
		}
	})
}
