package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/threadsmith/threadsmith/agent/anthropic"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	"github.com/threadsmith/threadsmith/config"
)

// newModel builds the model every session uses: a router from the names
// `!model` knows (llm.model and llm.models) to a client per endpoint, so a
// session switches provider by switching name. Models of one endpoint and key
// share a client, and with it a connection pool.
func newModel(cfg *config.Config) (*llm.Router, error) {
	type endpoint struct {
		provider config.Provider
		url, key string
	}
	clients := map[endpoint]llm.Model{}
	routes := map[string]llm.Route{}
	all := append([]config.Model{cfg.LLM.Main()}, cfg.LLM.Models...)
	for i, m := range all {
		ep := endpoint{m.Provider, m.BaseURL, m.APIKey}
		client, ok := clients[ep]
		if !ok {
			var err error
			switch m.Provider {
			case config.ProviderAnthropic:
				client, err = anthropic.New(anthropic.Config{BaseURL: m.BaseURL, APIKey: m.APIKey})
			default:
				client, err = openai.New(openai.Config{BaseURL: m.BaseURL, APIKey: m.APIKey})
			}
			if err != nil {
				key := "llm.base_url"
				if i > 0 {
					key = fmt.Sprintf("llm.models[%d].base_url", i-1)
				}
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			clients[ep] = client
		}
		routes[m.Name] = llm.Route{Model: client, ID: m.ID, Reasoning: string(m.Reasoning), Price: modelPrice(m)}
	}
	return llm.NewRouter(routes), nil
}

// modelNames are the names sessions may use: llm.model, then llm.models'.
func modelNames(cfg *config.Config) []string {
	names := []string{cfg.LLM.Model}
	for _, m := range cfg.LLM.Models {
		names = append(names, m.Name)
	}
	return names
}

// modelPrice is the configured price, else the built-in one of a well-known
// model id, else zero (no cost shown: an unknown price is never guessed).
// A loopback endpoint is a local model server: whatever name it is asked
// for (a local server may answer to gpt-4.1 with its own model), its model
// has no list price, so only a configured price counts there.
func modelPrice(m config.Model) llm.Price {
	if !m.Price.IsZero() {
		return llm.Price{Input: m.Price.Input, Output: m.Price.Output, CacheRead: m.Price.CacheRead, CacheWrite: m.Price.CacheWrite}
	}
	if config.IsLoopbackURL(m.BaseURL) {
		return llm.Price{}
	}
	p, _ := llm.KnownPrice(m.ID)
	return p
}

// checkModels reaches every model endpoint once (llm's and each other one in
// llm.models) and checks that the models configured on it are among the ones
// it lists (when it lists any: some local servers list none).
func checkModels(ctx context.Context, cfg *config.Config) []string {
	type endpoint struct {
		provider config.Provider
		url, key string
	}
	keys := map[endpoint][]string{} // endpoint -> config keys of its models, in order
	ids := map[endpoint][]string{}
	var order []endpoint
	for i, m := range append([]config.Model{cfg.LLM.Main()}, cfg.LLM.Models...) {
		ep := endpoint{m.Provider, m.BaseURL, m.APIKey}
		if _, seen := keys[ep]; !seen {
			order = append(order, ep)
		}
		key := "llm.model"
		if i > 0 {
			key = fmt.Sprintf("llm.models[%d].model", i-1)
		}
		keys[ep] = append(keys[ep], key)
		ids[ep] = append(ids[ep], m.ID)
	}
	var problems []string
	for _, ep := range order {
		where := "llm"
		if k := keys[ep][0]; k != "llm.model" {
			where = k[:len(k)-len(".model")]
		}
		var listed []string
		var err error
		switch ep.provider {
		case config.ProviderAnthropic:
			var c *anthropic.Client
			if c, err = anthropic.New(anthropic.Config{BaseURL: ep.url, APIKey: ep.key}); err == nil {
				listed, err = c.ListModels(ctx)
			}
		default:
			var c *openai.Client
			if c, err = openai.New(openai.Config{BaseURL: ep.url, APIKey: ep.key}); err == nil {
				listed, err = c.ListModels(ctx)
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: cannot reach %s: %v", where, ep.url, err))
			continue
		}
		for i, id := range ids[ep] {
			if len(listed) > 0 && !slices.Contains(listed, id) {
				problems = append(problems, fmt.Sprintf("%s: %q is not among the models the endpoint lists", keys[ep][i], id))
			}
		}
	}
	return problems
}

// budgetNotes are what -check and the start say of the budgets: their
// limits, then each model the budgets cannot be enforced for (it has no
// price, so its replies count as nothing); none when no budget is set.
func budgetNotes(cfg *config.Config) (limits string, unpriced []string) {
	b := cfg.Budget
	if !b.On() {
		return "", nil
	}
	var parts []string
	if b.PerUserDaily > 0 {
		parts = append(parts, fmt.Sprintf("%g a person a day (UTC)", b.PerUserDaily))
	}
	if b.PerThread > 0 {
		parts = append(parts, fmt.Sprintf("%g a thread", b.PerThread))
	}
	limits = "budget: " + strings.Join(parts, ", ") + ", in the currency of llm.price"
	for i, m := range append([]config.Model{cfg.LLM.Main()}, cfg.LLM.Models...) {
		if !modelPrice(m).IsZero() {
			continue
		}
		key := "llm.price"
		if i > 0 {
			key = fmt.Sprintf("llm.models[%d].price", i-1)
		}
		unpriced = append(unpriced, fmt.Sprintf("budget: cannot be enforced for model %q: it has no price (set %s), so its replies count as nothing", m.Name, key))
	}
	return limits, unpriced
}
