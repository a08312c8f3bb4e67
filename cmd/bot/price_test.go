package main

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A well-known model id on its provider's API gets the built-in list price;
// the same id on a local server (which may serve any model under that name)
// gets none unless configured, and neither does an unknown id anywhere.
func TestBuiltInPricesAreForTheProvidersOnly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		m         config.Model
		wantInput float64
	}{
		{config.Model{ID: "gpt-4.1", BaseURL: config.DefaultOpenAIBaseURL}, 2},
		{config.Model{ID: "claude-sonnet-4-5", BaseURL: config.DefaultAnthropicBaseURL}, 3},
		{config.Model{ID: "gpt-4.1", BaseURL: "http://127.0.0.1:8080/v1"}, 0},
		{config.Model{ID: "gpt-4.1", BaseURL: "http://localhost:11434/v1"}, 0},
		{config.Model{ID: "qwen2.5-coder", BaseURL: "https://llm.internal.example/v1"}, 0},
		{config.Model{ID: "gpt-4.1", BaseURL: "http://127.0.0.1:8080/v1", Price: config.Price{Input: 0.5}}, 0.5},
	} {
		if got := modelPrice(c.m).Input; got != c.wantInput {
			t.Errorf("%s at %s: input price %v, want %v", c.m.ID, c.m.BaseURL, got, c.wantInput)
		}
	}
}

// The footer of a run on a local server without a configured price shows
// no cost, as !status does.
func TestALocalModelShowsNoCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.LLM.Model = "gpt-4.1" }) // a local server asked for gpt-4.1
	e.llm.Push(llmfake.Stream(llmfake.Content("done here"), llmfake.Usage(1_000_000, 10, 0), llmfake.Finish("stop")))
	th := thread("920.1")
	e.say(th, "hello", true)
	e.waitText(th, " in / ")
	for _, text := range e.chat.BotTexts(th) {
		if strings.Contains(text, "$") {
			t.Errorf("a message shows a cost for a model of unknown price: %q", text)
		}
	}
}
