package tools

import (
	"encoding/json"
	"strings"
	"text/template"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
	"github.com/threadsmith/threadsmith/sandbox"
)

// Default result limits, as pi.
const (
	GrepLimit = 100
	FindLimit = 1000
	LsLimit   = 500
)

// descriptionData fills the placeholders of the embedded tool descriptions, so a
// limit changed in code cannot drift from what the model is told.
type descriptionData struct {
	MaxLines     int
	MaxKB        int
	MaxLineChars int
	GrepLimit    int
	FindLimit    int
	LsLimit      int
	BashTimeout  int // seconds
	MaxImageMB   int
	// Sandboxed and Network describe bash's sandbox.
	Sandboxed, Network bool
}

func describe(name, tmpl string, ws *Workspace) string {
	bashTimeout, sb := DefaultBashTimeout, sandbox.None()
	if ws != nil {
		bashTimeout, sb = ws.timeout, ws.sandbox
	}
	t := template.Must(template.New(name).Option("missingkey=error").Parse(tmpl))
	var b strings.Builder
	err := t.Execute(&b, descriptionData{
		MaxLines:     truncate.MaxLines,
		MaxKB:        truncate.MaxBytes / 1024,
		MaxLineChars: truncate.MaxLineChars,
		GrepLimit:    GrepLimit,
		FindLimit:    FindLimit,
		LsLimit:      LsLimit,
		BashTimeout:  int(bashTimeout / time.Second),
		MaxImageMB:   MaxImageBytes >> 20,
		Sandboxed:    sb.Confined(),
		Network:      sb.Network(),
	})
	if err != nil {
		panic(err) // the templates are ours and fixed at build time
	}
	return strings.TrimSpace(b.String())
}

// newSpec builds a tool's spec once, at construction: the description from
// its template, the parameters from its params struct.
func newSpec(name, tmpl string, ws *Workspace, params any) llm.ToolSpec {
	return llm.ToolSpec{Name: name, Description: describe(name, tmpl, ws), Parameters: Schema(params)}
}

// withDetails attaches machine-readable facts (truncation, diff, exit code) for
// renderers and logs; the model reads only Content.
func withDetails(r agent.ToolResult, details any) agent.ToolResult {
	if details == nil {
		return r
	}
	b, err := json.Marshal(details)
	if err == nil && string(b) != "{}" && string(b) != "null" {
		r.Details = b
	}
	return r
}

func errorResult(err error) agent.ToolResult {
	return agent.ErrorResult(err.Error())
}
