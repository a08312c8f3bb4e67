package config

import "testing"

const slackTokens = "slack:\n  bot_token: xoxb-1\n  app_token: xapp-1\n"

func TestModelsInheritTheirEndpointOnlyFromTheSameProvider(t *testing.T) {
	c := mustParse(t, `llm:
  api_key: sk-openai
  models:
    - {name: mini, model: gpt-4.1-mini, reasoning: low}
    - {name: sonnet, provider: anthropic, api_key: sk-ant, model: claude-sonnet-4-5, reasoning: high}
    - {name: local, base_url: "http://127.0.0.1:11434/v1"}
`+slackTokens, nil)
	mini, sonnet, local := c.LLM.Models[0], c.LLM.Models[1], c.LLM.Models[2]
	if mini.Provider != ProviderOpenAI || mini.BaseURL != DefaultOpenAIBaseURL || mini.APIKey != "sk-openai" || mini.ID != "gpt-4.1-mini" || mini.Reasoning != "low" {
		t.Errorf("mini = %+v, want llm's endpoint and key, id gpt-4.1-mini, reasoning low", mini)
	}
	if sonnet.BaseURL != DefaultAnthropicBaseURL || sonnet.APIKey != "sk-ant" || sonnet.ID != "claude-sonnet-4-5" {
		t.Errorf("sonnet = %+v, want Anthropic's API with its own key", sonnet)
	}
	if local.APIKey != "" || local.ID != "local" {
		t.Errorf("local = %+v, want no key (llm.api_key belongs to llm.base_url) and id = name", local)
	}
	if main := c.LLM.Main(); main.ID != "gpt-4.1" || main.Provider != ProviderOpenAI || main.APIKey != "sk-openai" {
		t.Errorf("Main() = %+v", main)
	}
}

func TestAnthropicMainModelGetsAnthropicsAPI(t *testing.T) {
	c := mustParse(t, "llm:\n  provider: anthropic\n  api_key: sk-ant\n  model: claude-sonnet-4-5\n  context_window: 200000\n"+slackTokens, nil)
	if c.LLM.BaseURL != DefaultAnthropicBaseURL {
		t.Errorf("base_url = %q, want %q", c.LLM.BaseURL, DefaultAnthropicBaseURL)
	}
}

func TestModelProblemsNameTheKey(t *testing.T) {
	c := mustParse(t, `llm:
  api_key: sk-openai
  reasoning: extreme
  models:
    - {name: a, provider: gemini}
    - {name: b, provider: anthropic}
    - {name: c, reasoning: lots}
`+slackTokens, nil)
	err := c.Validate()
	wantErr(t, err, "llm.reasoning", "off, minimal, low, medium or high")
	wantErr(t, err, "llm.models[0].provider", "openai or anthropic")
	wantErr(t, err, "llm.models[1].api_key", "required")
	wantErr(t, err, "llm.models[2].reasoning", "got \"lots\"")
}

func TestRedactedHidesModelKeys(t *testing.T) {
	c := mustParse(t, "llm:\n  api_key: sk-openai\n  models:\n    - {name: s, provider: anthropic, api_key: sk-ant-secret}\n"+slackTokens, nil)
	if got := c.Redacted().LLM.Models[0].APIKey; got != redactedValue {
		t.Errorf("redacted model key = %q", got)
	}
	if c.LLM.Models[0].APIKey != "sk-ant-secret" {
		t.Error("Redacted changed the config it was called on")
	}
}
