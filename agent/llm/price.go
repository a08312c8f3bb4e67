package llm

import "strings"

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// IsZero reports whether no price is known.
func (p Price) IsZero() bool { return p == Price{} }

// Cost is what one call cost, in USD, split as pi's usage.cost is.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

// Cost prices a usage.
func (p Price) Cost(u Usage) Cost {
	c := Cost{
		Input:      float64(u.Input) * p.Input / 1e6,
		Output:     float64(u.Output) * p.Output / 1e6,
		CacheRead:  float64(u.CacheRead) * p.CacheRead / 1e6,
		CacheWrite: float64(u.CacheWrite) * p.CacheWrite / 1e6,
	}
	c.Total = c.Input + c.Output + c.CacheRead + c.CacheWrite
	return c
}

// knownPrices are list prices (USD per million tokens) of common models, so a
// configuration without prices still shows what a thread costs. Keys are model
// id prefixes; the longest matching one wins, so "gpt-4.1-mini" is not priced
// as "gpt-4.1". Anthropic's cache writes are the 5-minute rate (1.25× input).
var knownPrices = map[string]Price{
	"gpt-4.1":           {Input: 2, Output: 8, CacheRead: 0.5},
	"gpt-4.1-mini":      {Input: 0.4, Output: 1.6, CacheRead: 0.1},
	"gpt-4.1-nano":      {Input: 0.1, Output: 0.4, CacheRead: 0.025},
	"gpt-4o":            {Input: 2.5, Output: 10, CacheRead: 1.25},
	"gpt-4o-mini":       {Input: 0.15, Output: 0.6, CacheRead: 0.075},
	"gpt-5":             {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":        {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5-nano":        {Input: 0.05, Output: 0.4, CacheRead: 0.005},
	"o3":                {Input: 2, Output: 8, CacheRead: 0.5},
	"o3-mini":           {Input: 1.1, Output: 4.4, CacheRead: 0.55},
	"o4-mini":           {Input: 1.1, Output: 4.4, CacheRead: 0.275},
	"claude-opus-4":     {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"claude-3-5-haiku":  {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
}

// KnownPrice returns the built-in price of a model id, matched by the longest
// known prefix; a provider prefix ("openai/gpt-4.1", as OpenRouter names
// models) is ignored.
func KnownPrice(model string) (Price, bool) {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	best, found := "", false
	for prefix := range knownPrices {
		if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
			best, found = prefix, true
		}
	}
	return knownPrices[best], found
}
