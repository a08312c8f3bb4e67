package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

func TestToolArgumentsSurviveStorage(t *testing.T) {
	for _, text := range []string{
		`{"path":"a.go"}`,
		`{"path": "a.go"}`,
		"{\n  \"cmd\": \"go test ./... && echo <done>\"\n}",
		`{"s":"\u2028"}`,
		``,
		`{"broken": `,
	} {
		args, raw := llm.ToolArguments([]byte(text))
		stored, err := json.Marshal(llm.Content{Type: llm.ContentToolCall, Arguments: args, RawArguments: raw})
		if err != nil {
			t.Fatalf("%q: Marshal: %v", text, err)
		}
		var back llm.Content
		if err := json.Unmarshal(stored, &back); err != nil {
			t.Fatalf("%q: Unmarshal: %v", text, err)
		}
		want := string(args)
		if raw != "" {
			want = text
		}
		if got := back.WireArguments(); got != want {
			t.Errorf("%q: after storage WireArguments() = %q, want %q", text, got, want)
		}
	}
}

func TestKnownPriceTakesTheLongestPrefix(t *testing.T) {
	for model, want := range map[string]float64{
		"gpt-4.1": 2, "gpt-4.1-mini-2025-04-14": 0.4, "openai/gpt-4.1-nano": 0.1,
		"claude-sonnet-4-5-20250929": 3, "claude-opus-4-5": 5, "claude-opus-4-1": 15,
	} {
		p, ok := llm.KnownPrice(model)
		if !ok || p.Input != want {
			t.Errorf("KnownPrice(%q) = %+v, %v; want input %v", model, p, ok, want)
		}
	}
	if _, ok := llm.KnownPrice("llama3:8b"); ok {
		t.Error("KnownPrice(llama3:8b) found a price")
	}
}

type recordingModel struct{ got llm.Request }

func (m *recordingModel) Stream(_ context.Context, req llm.Request, _ llm.StreamFunc) (llm.Message, error) {
	m.got = req
	return llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop, Usage: &llm.Usage{Input: 1_000_000, Output: 100_000, CacheRead: 2_000_000}}, nil
}

func TestRouterSendsTheProviderIDAndPricesTheReply(t *testing.T) {
	a, b := &recordingModel{}, &recordingModel{}
	r := llm.NewRouter(map[string]llm.Route{
		"fast":  {Model: a, ID: "gpt-4.1-mini", Reasoning: "low", Price: llm.Price{Input: 0.4, Output: 1.6, CacheRead: 0.1}},
		"local": {Model: b, ID: "qwen"},
	})
	m, err := r.Stream(context.Background(), llm.Request{Model: "fast"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.got.Model != "gpt-4.1-mini" || a.got.Reasoning != "low" {
		t.Errorf("sent model %q reasoning %q, want gpt-4.1-mini, low", a.got.Model, a.got.Reasoning)
	}
	if m.Usage.Cost == nil || m.Usage.Cost.Total != 0.4+0.16+0.2 {
		t.Errorf("cost = %+v, want total 0.76", m.Usage.Cost)
	}
	m, _ = r.Stream(context.Background(), llm.Request{Model: "local", Reasoning: "high"}, nil)
	if b.got.Model != "qwen" || b.got.Reasoning != "high" || m.Usage.Cost != nil {
		t.Errorf("local: sent %q/%q, cost %+v; want qwen/high and no cost", b.got.Model, b.got.Reasoning, m.Usage.Cost)
	}
	if _, err := r.Stream(context.Background(), llm.Request{Model: "nope"}, nil); err == nil {
		t.Error("an unknown model name streamed")
	}
}
