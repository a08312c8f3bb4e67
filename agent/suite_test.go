package agent_test

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	anthropicfake "github.com/threadsmith/threadsmith/internal/fakes/anthropic"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The behaviour suite runs against both providers: a scenario is written once
// against a provider-neutral script (replies of text or tool calls) and a
// neutral view of the requests, and forEachProvider plays it on the real
// OpenAI client against llmfake and on the real Anthropic client against
// anthropicfake.

// provider builds a harness whose fake answers with the given provider's wire format.
type provider struct {
	name string
	new  func(t *testing.T, opts ...func(*agent.Config)) *harness
}

var providers = []provider{
	{name: "openai", new: func(t *testing.T, opts ...func(*agent.Config)) *harness {
		h := newHarness(t, opts...)
		h.fake = openaiScript{h.llm}
		return h
	}},
	{name: "anthropic", new: func(t *testing.T, opts ...func(*agent.Config)) *harness {
		h, fake := newAnthropicHarness(t, opts...)
		h.fake = anthropicScript{fake}
		return h
	}},
}

// forEachProvider runs the scenario once per provider, as subtests.
func forEachProvider(t *testing.T, scenario func(t *testing.T, p provider)) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) { scenario(t, p) })
	}
}

// reply is a provider-neutral scripted answer: text, or tool calls.
type reply struct {
	text  []string
	calls []llmfake.Call
	down  bool // the endpoint answers 503: the model is unavailable
}

func say(chunks ...string) reply         { return reply{text: chunks} }
func callTools(cs ...llmfake.Call) reply { return reply{calls: cs} }
func unavailable() reply                 { return reply{down: true} }

// sent is a provider-neutral view of one request.
type sent struct {
	Seq     int
	users   []string // the user texts, in order (tool results left out)
	results []string // "id=text" of the tool results, in order
	tools   []string // names of the offered tools
}

// script is what a scenario asks of the fake.
type script interface {
	Push(rs ...reply)
	Handle(fn func(seq int) reply)
	Requests() []sent
}

type openaiScript struct{ s *llmfake.Server }

func (o openaiScript) wire(r reply) llmfake.Response {
	if r.down {
		return llmfake.HTTPError(503, "", "Service Unavailable")
	}
	if len(r.calls) > 0 {
		return llmfake.ToolCallReply(r.calls...)
	}
	return llmfake.TextReply(r.text...)
}

func (o openaiScript) Push(rs ...reply) {
	for _, r := range rs {
		o.s.Push(o.wire(r))
	}
}

func (o openaiScript) Handle(fn func(int) reply) {
	o.s.Handle(func(req llmfake.Request) llmfake.Response { return o.wire(fn(req.Seq)) })
}

func (o openaiScript) Requests() []sent {
	var out []sent
	for _, r := range o.s.Requests() {
		s := sent{Seq: r.Seq, users: userTexts(r), results: toolResults(r)}
		for _, t := range r.Tools {
			s.tools = append(s.tools, t.Name)
		}
		out = append(out, s)
	}
	return out
}

type anthropicScript struct{ s *anthropicfake.Server }

func (a anthropicScript) wire(r reply) anthropicfake.Response {
	if r.down {
		return anthropicfake.HTTPError(503, "api_error", "Service Unavailable")
	}
	if len(r.calls) > 0 {
		var blocks []anthropicfake.ReplyBlock
		for _, c := range r.calls {
			blocks = append(blocks, anthropicfake.ToolUse(c.ID, c.Name, c.Args))
		}
		return anthropicfake.Reply(blocks...)
	}
	return anthropicfake.Reply(anthropicfake.Text(strings.Join(r.text, "")))
}

func (a anthropicScript) Push(rs ...reply) {
	for _, r := range rs {
		a.s.Push(a.wire(r))
	}
}

func (a anthropicScript) Handle(fn func(int) reply) {
	a.s.Handle(func(req anthropicfake.Request) anthropicfake.Response { return a.wire(fn(req.Seq)) })
}

// Requests reads user texts and tool results out of Anthropic's user
// messages: one text block is one user text, one tool_result block one result.
func (a anthropicScript) Requests() []sent {
	var out []sent
	for _, r := range a.s.Requests() {
		s := sent{Seq: r.Seq}
		for _, m := range r.Messages {
			if m.Role != "user" {
				continue
			}
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					s.users = append(s.users, b.Text)
				case "tool_result":
					var text strings.Builder
					for _, c := range b.Content {
						text.WriteString(c.Text)
					}
					s.results = append(s.results, b.ToolUseID+"="+text.String())
				}
			}
		}
		for _, t := range r.Tools {
			s.tools = append(s.tools, t.Name)
		}
		out = append(out, s)
	}
	return out
}
