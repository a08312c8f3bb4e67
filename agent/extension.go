package agent

import (
	"context"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// Extension adds behaviour to a session. Every field is optional. Extensions are
// given at construction and called in the order they were given.
type Extension struct {
	Name string
	// Input sees raw input before expansion and may handle or transform it.
	Input func(ctx context.Context, in Input) InputResult
	// BeforeAgentStart runs just before a prompt is sent: it may add custom
	// messages and replace the system prompt.
	BeforeAgentStart func(ctx context.Context, ev BeforeAgentStart) BeforeAgentStartResult
	// OnEvent sees every event, before external listeners, on the event queue.
	OnEvent func(Event)
	// BeforeModelCall is asked, on the run's goroutine, before each model
	// call of a run but its first, once every event of the run so far is
	// processed (stored, seen by listeners). An error stops the run there
	// as Abort would, with no call made: the run ends with Halted (the
	// error's text) and agent_end, and queued input stays queued for the
	// next run.
	BeforeModelCall func(ctx context.Context) error
}

// Input is what a person sent.
type Input struct {
	Text   string
	Images []llm.Content
}

// InputAction is an input hook's verdict.
type InputAction int

const (
	// InputContinue passes the input on unchanged.
	InputContinue InputAction = iota
	// InputTransform passes on Text and Images of the result instead.
	InputTransform
	// InputHandled stops the pipeline: the hook took care of the input.
	InputHandled
)

// InputResult is returned by an input hook.
type InputResult struct {
	Action InputAction
	Text   string
	Images []llm.Content // nil keeps the current images
}

// BeforeAgentStart is given to BeforeAgentStart hooks.
type BeforeAgentStart struct {
	Prompt string
	Images []llm.Content
	// SystemPrompt is the prompt so far: the base prompt, as replaced by earlier hooks.
	SystemPrompt string
}

// BeforeAgentStartResult is returned by a BeforeAgentStart hook.
type BeforeAgentStartResult struct {
	// Messages are added after the prompt as custom messages (all hooks' are kept).
	Messages []llm.Message
	// Preface messages are added before the prompt as custom messages (all
	// hooks' are kept, in hook order): a header the prompt is read under, such
	// as who asks and when, kept out of the system prompt so that it stays
	// the same for the session.
	Preface []llm.Message
	// SystemPrompt, when not empty, replaces the system prompt for this prompt only.
	SystemPrompt string
}
