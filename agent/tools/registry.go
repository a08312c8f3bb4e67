package tools

import (
	"log/slog"
	"slices"
	"strings"

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

// Builtin is one built-in tool as the rest of the program knows it: its
// name, the arguments that say what a call does (most telling first: a chat
// shows the first one present as the call's one-line summary), and how New
// makes it.
type Builtin struct {
	Name     string
	MainArgs []string
	// Writes says the tool changes files: it is left out of ReadOnly sets.
	Writes  bool
	newTool func(ws *Workspace, files *ReadTracker) agent.Tool
}

// builtins is the one list of the built-in tools, in the order the model is
// shown them. Everything else that names them (the system prompt's tool
// list, the chat's call summaries, msgjson's interned strings) reads it or
// is tested against it.
var builtins = []Builtin{
	{Name: ReadName, MainArgs: []string{"path"}, newTool: func(ws *Workspace, f *ReadTracker) agent.Tool { return NewReadTool(ws, f) }},
	{Name: BashName, MainArgs: []string{"command"}, newTool: func(ws *Workspace, _ *ReadTracker) agent.Tool { return NewBashTool(ws) }},
	{Name: EditName, MainArgs: []string{"path"}, Writes: true, newTool: func(ws *Workspace, f *ReadTracker) agent.Tool { return NewEditTool(ws, f) }},
	{Name: WriteName, MainArgs: []string{"path"}, Writes: true, newTool: func(ws *Workspace, f *ReadTracker) agent.Tool { return NewWriteTool(ws, f) }},
	{Name: GrepName, MainArgs: []string{"pattern", "path"}, newTool: func(ws *Workspace, _ *ReadTracker) agent.Tool { return NewGrepTool(ws) }},
	{Name: FindName, MainArgs: []string{"pattern", "path"}, newTool: func(ws *Workspace, _ *ReadTracker) agent.Tool { return NewFindTool(ws) }},
	{Name: LsName, MainArgs: []string{"path"}, newTool: func(ws *Workspace, _ *ReadTracker) agent.Tool { return NewLsTool(ws) }},
}

// Builtins returns the built-in tools in the order New returns them.
func Builtins() []Builtin { return slices.Clone(builtins) }

// Names returns the built-in tools' names in the order New returns them.
func Names() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.Name
	}
	return names
}

// MainArgs maps each built-in tool's name to its MainArgs. The map is new
// at every call.
func MainArgs() map[string][]string {
	m := make(map[string][]string, len(builtins))
	for _, b := range builtins {
		m[b.Name] = slices.Clone(b.MainArgs)
	}
	return m
}

// promptGuide is the tool list of the system prompt: one line per entry,
// which may name several tools; every built-in tool is on exactly one line.
var promptGuide = []struct {
	names []string
	text  string
}{
	{[]string{ReadName}, "read a file (use offset/limit for long files; images are shown to you)."},
	{[]string{BashName}, "run a shell command in the repository (build, test, git log/diff/status, search)."},
	{[]string{EditName}, "replace an exact piece of text in a file you have read (the match must be unique)."},
	{[]string{WriteName}, "create or overwrite a file."},
	{[]string{GrepName, FindName, LsName}, "search file contents, find files by name, list folders (they honour .gitignore)."},
}

// PromptGuide is the "Tools:" section of the system prompt: one line per
// tool or group of tools, in the order New returns them.
func PromptGuide() string {
	var b strings.Builder
	b.WriteString("Tools:")
	for _, g := range promptGuide {
		b.WriteString("\n- " + strings.Join(g.names, ", ") + ": " + g.text)
	}
	return b.String()
}

// New returns the coding tools of one session working in ws, in the order the
// model is shown them (builtins). They share one ReadTracker, so edit knows
// what this session has read. Each tool is wrapped, outermost first, in an
// output cap, timing and logging, secret redaction and panic recovery;
// confinement to ws is not a wrapper but the path resolver every tool goes
// through.
func New(ws *Workspace, opts Options) []agent.Tool {
	files := NewReadTracker()
	tools := make([]agent.Tool, len(builtins))
	for i, b := range builtins {
		tools[i] = Decorate(b.newTool(ws, files), opts)
	}
	return tools
}

// ReadOnly returns the tools of set, a session's (New's, maybe with others
// added), that a run which must change nothing in the worktree (a plan) is
// offered: the built-in tools that do not write, the same instances (a file
// read while planning counts as read for edit afterwards), except bash, which
// is a new one over ws.ReadOnly() and sees the worktree read-only in the
// sandbox. Any other tool (an MCP server's) is left out: nothing says it
// writes nothing. Under a sandbox that confines nothing (sandbox.None) only
// the missing tools hold.
func ReadOnly(set []agent.Tool, ws *Workspace, opts Options) []agent.Tool {
	var out []agent.Tool
	for _, t := range set {
		name := t.Spec().Name
		i := slices.IndexFunc(builtins, func(b Builtin) bool { return b.Name == name })
		switch {
		case i < 0 || builtins[i].Writes:
			continue
		case name == BashName:
			t = Decorate(NewBashTool(ws.ReadOnly()), opts)
		}
		out = append(out, t)
	}
	return out
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
