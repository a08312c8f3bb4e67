package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
)

// FindName is the find tool's name.
const FindName = "find"

//go:embed find.md
var findDescription string

type findParams struct {
	Pattern string `json:"pattern" required:"true" desc:"Glob pattern, e.g. '*.go', '**/*.json' or 'src/**/*.spec.ts'"`
	Path    string `json:"path" desc:"Folder to search (default: the workspace root)"`
	Limit   *int   `json:"limit" desc:"Maximum number of results (default 1000)"`
}

// FindDetails are the machine-readable facts of a find result.
type FindDetails struct {
	Results      int              `json:"results"`
	LimitReached bool             `json:"limitReached,omitempty"`
	Truncation   *truncate.Result `json:"truncation,omitempty"`
}

// FindTool finds paths by glob in pure Go, honouring .gitignore.
type FindTool struct {
	ws   *Workspace
	spec llm.ToolSpec
}

var _ agent.ReadOnlyTool = (*FindTool)(nil)

// NewFindTool returns the find tool of ws.
func NewFindTool(ws *Workspace) *FindTool {
	return &FindTool{ws: ws, spec: newSpec(FindName, findDescription, ws, findParams{})}
}

func (t *FindTool) Spec() llm.ToolSpec { return t.spec }

func (t *FindTool) ReadOnly() bool { return true }

func (t *FindTool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var p findParams
	if err := decodeArgs(FindName, call.Args, &p); err != nil {
		return errorResult(err), nil
	}
	limit := FindLimit
	if p.Limit != nil && *p.Limit > 0 {
		limit = *p.Limit
	}
	g, err := compileGlob(p.Pattern)
	if err != nil {
		return agent.ErrorResult(err.Error()), nil
	}
	tg, err := t.ws.resolve(p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	if fi, err := tg.area.fs.Stat(tg.rel); err != nil {
		return agent.ErrorResult("path " + quoted(p.Path) + ": " + describeFSError(err)), nil
	} else if !fi.IsDir() {
		return agent.ErrorResult("path " + quoted(p.Path) + " is not a folder"), nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var found []string
	more := false
	err = walkTree(ctx, tg, func(e walkEntry) bool {
		rel := relTo(tg.rel, e.rel)
		if g.match(rel, e.isDir) {
			if len(found) == limit {
				more = true
				cancel()
				return false
			}
			name := target{tg.area, e.rel}.display()
			if e.isDir {
				name += "/"
			}
			found = append(found, name)
		}
		return e.isDir && g.descend(rel)
	})
	if err != nil && !more {
		if ctx.Err() != nil {
			return agent.ErrorResult("find aborted"), nil
		}
		return agent.ErrorResult("path " + quoted(p.Path) + ": " + describeFSError(err)), nil
	}
	details := FindDetails{Results: len(found), LimitReached: more}
	if len(found) == 0 {
		return withDetails(agent.TextResult("No files found matching the pattern."), details), nil
	}
	text := strings.Join(found, "\n")
	var notices []string
	if more {
		notices = append(notices, fmt.Sprintf("%d results shown, the limit. Use limit=%d or a narrower pattern or path", limit, limit*2))
	}
	if tr := truncate.Head(text, truncate.Limits{MaxLines: int(^uint(0) >> 1)}); tr.Truncated {
		text = tr.Content
		details.Truncation = &tr
		notices = append(notices, fmt.Sprintf("output cut at %s", truncate.FormatSize(truncate.MaxBytes)))
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + ".]"
	}
	return withDetails(agent.TextResult(text), details), nil
}
