package tools

import (
	"log/slog"

	"github.com/threadsmith/threadsmith/agent"
)

// Options configures the decorators every tool of New is wrapped in.
type Options struct {
	// Secrets are strings that must never reach the model or the logs: each
	// occurrence in a result (text, details, partial output, error) is replaced
	// by "[redacted]". Every non-empty string is redacted, however short.
	Secrets []string
	// MaxResultBytes caps the text of any one result, a backstop behind each
	// tool's own limits. Default DefaultMaxResultBytes.
	MaxResultBytes int
	// Logger gets one debug line per call (tool, duration, outcome) and the
	// details of infrastructure failures. Default: nothing is logged.
	Logger *slog.Logger
}

// DefaultMaxResultBytes is the default of Options.MaxResultBytes: the 50 KB
// every tool keeps to, plus room for its notice.
const DefaultMaxResultBytes = 64 << 10

// New returns the coding tools of one session working in ws, in the order the
// model is shown them: read, bash, edit, write, grep, find, ls. They share one
// ReadTracker, so edit knows what this session has read. Each tool is wrapped,
// outermost first, in an output cap, timing and logging, secret redaction and
// panic recovery; confinement to ws is not a wrapper but the path resolver
// every tool goes through.
func New(ws *Workspace, opts Options) []agent.Tool {
	files := NewReadTracker()
	tools := []agent.Tool{
		NewReadTool(ws, files),
		NewBashTool(ws),
		NewEditTool(ws, files),
		NewWriteTool(ws, files),
		NewGrepTool(ws),
		NewFindTool(ws),
		NewLsTool(ws),
	}
	for i, t := range tools {
		tools[i] = Decorate(t, opts)
	}
	return tools
}

// Decorate wraps one tool as New does. The wrapped tool keeps its spec and
// its ReadOnly answer.
func Decorate(t agent.Tool, opts Options) agent.Tool {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	limit := opts.MaxResultBytes
	if limit <= 0 {
		limit = DefaultMaxResultBytes
	}
	t = guarded{wrapper{t}}
	if r := newRedactor(opts.Secrets); r != nil {
		t = redacting{wrapper{t}, r}
	}
	t = timed{wrapper{t}, logger.With("component", "tools")}
	return capped{wrapper{t}, limit}
}
