package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// withBeforeModelCall adds an extension whose BeforeModelCall is fn.
func withBeforeModelCall(fn func(ctx context.Context) error) func(*agent.Config) {
	return func(c *agent.Config) {
		c.Extensions = append(c.Extensions, agent.Extension{Name: "budget", BeforeModelCall: fn})
	}
}

// A before-model-call hook is asked between the model calls of a run, after
// everything the run did so far is stored; its error stops the run there:
// no further request, the reply's tools ran, the run ends with halted and
// agent_end, and input queued meanwhile waits for the next run, which the
// hook lets go.
func TestBeforeModelCallStopsTheRunBetweenCalls(t *testing.T) {
	forEachProvider(t, beforeModelCallStopsTheRunBetweenCalls)
}

func beforeModelCallStopsTheRunBetweenCalls(t *testing.T, p provider) {
	var (
		mu     sync.Mutex
		refuse = true
		asked  int
		stored []int // entries stored when the hook was asked
	)
	var h *harness
	g := newGate()
	h = p.new(t, withTools(g.tool("work", false)), withBeforeModelCall(func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		asked++
		stored = append(stored, len(h.store.all()))
		if refuse {
			return errors.New("over budget")
		}
		return nil
	}))
	h.fake.Handle(func(seq int) reply {
		if seq == 1 {
			return callTools(llmfake.Call{ID: "c1", Name: "work", Args: `{}`})
		}
		return say("answer ", "two")
	})
	h.start("go", agent.PromptOptions{})
	g.waitStarted(t)
	h.start("follow me", agent.PromptOptions{Behavior: agent.BehaviorFollowUp})
	close(g.open)
	h.wait()

	if n := len(h.fake.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1: the hook stopped the second", n)
	}
	names := eventNames(h.recorded())
	if tail := strings.Join(names[len(names)-3:], " "); tail != "turn_end halted agent_end" {
		t.Fatalf("events end with %q, want turn_end halted agent_end; all: %v", tail, names)
	}
	if hs := find[agent.Halted](h.recorded()); len(hs) != 1 || hs[0].Reason != "over budget" {
		t.Fatalf("halted events = %+v, want one with the hook's error", hs)
	}
	mu.Lock()
	if asked != 1 || stored[0] != 3 {
		t.Errorf("hook asked %d times with %v entries stored, want once with 3 (prompt, reply, tool result)", asked, stored)
	}
	refuse = false
	mu.Unlock()
	if _, follow := h.sess.Queued(); len(follow) != 1 {
		t.Fatalf("follow-ups after the stop = %d, want the one queued", len(follow))
	}
	if h.sess.IsRunning() {
		t.Fatal("the session still runs after the stop")
	}

	h.prompt("next")
	reqs := h.fake.Requests()
	if len(reqs) != 2 || strings.Join(reqs[1].users, "|") != "go|next|follow me" {
		t.Fatalf("requests after the stop = %d, users of the last %v; want 2, go|next|follow me", len(reqs), reqs[len(reqs)-1].users)
	}
	if last := h.sess.Messages(); last[len(last)-1].Role != llm.RoleAssistant {
		t.Fatalf("the next run did not end with a reply: %v", eventNames(h.recorded()))
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 {
		t.Errorf("hook asked %d times in all, want once: never before a run's first call", asked)
	}
}

// A steer the run took for its next call goes back to the front of its queue
// when the hook stops that call.
func TestBeforeModelCallKeepsTheSteerItStopped(t *testing.T) {
	forEachProvider(t, beforeModelCallKeepsTheSteerItStopped)
}

func beforeModelCallKeepsTheSteerItStopped(t *testing.T, p provider) {
	g := newGate()
	h := p.new(t, withTools(g.tool("work", false)), withBeforeModelCall(func(context.Context) error { return errors.New("no") }))
	h.fake.Push(callTools(llmfake.Call{ID: "c1", Name: "work", Args: `{}`}), say("never"))
	h.start("go", agent.PromptOptions{})
	g.waitStarted(t)
	h.start("steer me", agent.PromptOptions{Behavior: agent.BehaviorSteer})
	close(g.open)
	h.wait()
	if n := len(h.fake.Requests()); n != 1 {
		t.Fatalf("requests = %d, want 1", n)
	}
	steer, _ := h.sess.Queued()
	if len(steer) != 1 || steer[0].TextContent() != "steer me" {
		t.Fatalf("steer queue after the stop = %v, want the steer", steer)
	}
	for _, ev := range find[agent.MessageStart](h.recorded()) {
		if ev.Message.TextContent() == "steer me" {
			t.Fatal("the steer was delivered to a run that made no call for it")
		}
	}
}
