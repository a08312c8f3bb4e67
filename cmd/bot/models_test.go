package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/config"
	anthropicfake "github.com/threadsmith/threadsmith/internal/fakes/anthropic"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The config's model names reach their own endpoints, under their provider
// ids, with their keys, reasoning and prices (configured or built in).
func TestModelsFromTheConfigReachTheirEndpoints(t *testing.T) {
	t.Parallel()
	oai := llmfake.New(t)
	oai.RequireAPIKey("sk-openai")
	ant := anthropicfake.New(t)
	ant.RequireAPIKey("sk-ant")
	oai.Push(
		llmfake.Stream(llmfake.Content("a"), llmfake.Usage(1_000_000, 0, 0), llmfake.Finish("stop")),
		llmfake.Stream(llmfake.Content("b"), llmfake.Usage(1_000_000, 0, 0), llmfake.Finish("stop")),
	)
	ant.Push(anthropicfake.Reply(anthropicfake.Text("c")).WithUsage(anthropicfake.Usage{Input: 1_000_000}))
	cfg := config.Default()
	cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model = oai.URL(), "sk-openai", "gpt-4.1"
	cfg.LLM.Models = []config.Model{
		{Name: "cheap", Provider: config.ProviderOpenAI, BaseURL: oai.URL(), APIKey: "sk-openai", ID: "house-model",
			Price: config.Price{Input: 1}},
		{Name: "sonnet", Provider: config.ProviderAnthropic, BaseURL: ant.URL(), APIKey: "sk-ant", ID: "claude-sonnet-4-5", Reasoning: "medium"},
	}
	model, err := newModel(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The fakes are local servers: only the configured price counts there
	// (built-in prices: TestBuiltInPricesAreForTheProvidersOnly).
	for name, wantCost := range map[string]float64{"gpt-4.1": 0, "cheap": 1, "sonnet": 0} {
		m, err := model.Stream(ctx, llm.Request{Model: name, Messages: []llm.Message{llm.UserText("hi")}, MaxTokens: 100}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch {
		case m.Usage == nil:
			t.Errorf("%s: no usage", name)
		case wantCost == 0 && m.Usage.Cost != nil:
			t.Errorf("%s: cost %+v on a local server without a configured price, want none", name, m.Usage.Cost)
		case wantCost != 0 && (m.Usage.Cost == nil || m.Usage.Cost.Total != wantCost):
			t.Errorf("%s: usage %+v, want a cost of $%v for a million input tokens", name, m.Usage, wantCost)
		}
	}
	var ids []string
	for _, r := range oai.Requests() {
		ids = append(ids, r.Model)
	}
	if len(ids) != 2 || !(ids[0] == "gpt-4.1" && ids[1] == "house-model" || ids[1] == "gpt-4.1" && ids[0] == "house-model") {
		t.Errorf("OpenAI endpoint saw models %v, want gpt-4.1 and house-model", ids)
	}
	reqs := ant.Requests()
	if len(reqs) != 1 || reqs[0].Model != "claude-sonnet-4-5" || reqs[0].Thinking == nil || reqs[0].Thinking.BudgetTokens != 8192 {
		t.Errorf("Anthropic requests = %+v, want claude-sonnet-4-5 with a medium thinking budget", reqs)
	}
}

// -check reaches every model endpoint and names the model a key cannot use.
func TestCheckReachesEveryModelEndpoint(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	ant := anthropicfake.New(t)
	ant.RequireAPIKey("sk-ant")
	ant.SetModels("claude-sonnet-4-5")
	other := llmfake.New(t)
	other.RequireAPIKey("sk-right")
	cfg.LLM.Models = []config.Model{
		{Name: "sonnet", Provider: config.ProviderAnthropic, BaseURL: ant.URL(), APIKey: "sk-ant", ID: "claude-sonnet-4-5", ContextWindow: 200000, MaxOutputTokens: 8192},
		{Name: "opus", Provider: config.ProviderAnthropic, BaseURL: ant.URL(), APIKey: "sk-ant", ID: "claude-opus-9", ContextWindow: 200000, MaxOutputTokens: 8192},
		{Name: "other", Provider: config.ProviderOpenAI, BaseURL: other.URL(), APIKey: "sk-wrong", ID: "x", ContextWindow: 200000, MaxOutputTokens: 8192},
	}
	ok, out := runCheck(t, cfg)
	if ok {
		t.Fatalf("check passed:\n%s", out)
	}
	for _, want := range []string{`llm.models[1].model: "claude-opus-9" is not among the models the endpoint lists`, "llm.models[2]: cannot reach"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "llm.models[0]") || strings.Contains(out, "sk-wrong") {
		t.Errorf("check output names a model that is fine, or a key:\n%s", out)
	}
}
