package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/tools"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The model is offered every built-in tool of the registry, and its system
// prompt lists them as the registry's PromptGuide does: a tool added,
// renamed or described anew in agent/tools fails here until the prompt
// says the same.
func TestModelIsToldTheRegistrysTools(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	e.llm.Push(llmfake.TextReply("hello"))
	root := e.slack.Mention(slackChan, aliceID, "say hello", "")
	e.waitText(slackChan, root, "hello")
	reqs := e.llm.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	r := reqs[0]
	if len(r.Messages) == 0 || r.Messages[0].Role != "system" {
		t.Fatalf("the first message is not the system prompt: %+v", r.Messages)
	}
	if system := r.Messages[0].Content; !strings.Contains(system, "\n\n"+tools.PromptGuide()+"\n\n") {
		t.Errorf("the system prompt does not carry the registry's tool list:\n%s\n\nwant, as a paragraph of its own:\n%s", system, tools.PromptGuide())
	}
	var offered []string
	for _, tl := range r.Tools {
		offered = append(offered, tl.Name)
	}
	if !slices.Equal(offered, tools.Names()) {
		t.Errorf("tools offered %q, want the registry's %q", offered, tools.Names())
	}
}
