package tools

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
	"github.com/threadsmith/threadsmith/internal/safefile"
)

// LsName is the ls tool's name.
const LsName = "ls"

//go:embed ls.md
var lsDescription string

type lsParams struct {
	Path  string `json:"path" desc:"Folder to list (default: the workspace root)"`
	Limit *int   `json:"limit" desc:"Maximum number of entries (default 500)"`
}

// LsDetails are the machine-readable facts of an ls result.
type LsDetails struct {
	Entries      int              `json:"entries"`
	LimitReached bool             `json:"limitReached,omitempty"`
	Truncation   *truncate.Result `json:"truncation,omitempty"`
}

// LsTool lists one folder.
type LsTool struct {
	ws   *Workspace
	spec llm.ToolSpec
}

var _ agent.ReadOnlyTool = (*LsTool)(nil)

// NewLsTool returns the ls tool of ws.
func NewLsTool(ws *Workspace) *LsTool {
	return &LsTool{ws: ws, spec: newSpec(LsName, lsDescription, ws, lsParams{})}
}

func (t *LsTool) Spec() llm.ToolSpec { return t.spec }

func (t *LsTool) ReadOnly() bool { return true }

func (t *LsTool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var p lsParams
	if err := decodeArgs(LsName, call.Args, &p); err != nil {
		return errorResult(err), nil
	}
	limit := LsLimit
	if p.Limit != nil && *p.Limit > 0 {
		limit = *p.Limit
	}
	tg, err := t.ws.resolve(p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	// A pipe or anything else but a folder fails the open at once.
	f, err := safefile.OpenDirIn(tg.area.fs, tg.rel)
	if errors.Is(err, syscall.ENOTDIR) {
		if fi, serr := tg.area.fs.Stat(tg.rel); serr == nil && fi.Mode().IsRegular() {
			return agent.ErrorResult("path " + quoted(p.Path) + " is a file, not a folder; use read"), nil
		}
		return agent.ErrorResult("path " + quoted(p.Path) + " is not a folder"), nil
	}
	if err != nil {
		return agent.ErrorResult("path " + quoted(p.Path) + ": " + describeFSError(err)), nil
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		if fi, serr := tg.area.fs.Stat(tg.rel); serr == nil && !fi.IsDir() {
			return agent.ErrorResult("path " + quoted(p.Path) + " is a file, not a folder; use read"), nil
		}
		return agent.ErrorResult("path " + quoted(p.Path) + ": " + describeFSError(err)), nil
	}
	if ctx.Err() != nil {
		return agent.ErrorResult("ls aborted"), nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Name()), strings.ToLower(b.Name())), cmp.Compare(a.Name(), b.Name()))
	})
	details := LsDetails{}
	var lines []string
	for _, e := range entries {
		if len(lines) == limit {
			details.LimitReached = true
			break
		}
		name := e.Name()
		switch {
		case e.IsDir():
			name += "/"
		case e.Type()&fs.ModeSymlink != 0:
			if dest, err := tg.area.fs.Readlink(path.Join(tg.rel, e.Name())); err == nil {
				name += " -> " + dest
			}
		}
		lines = append(lines, name)
	}
	details.Entries = len(lines)
	if len(lines) == 0 {
		return withDetails(agent.TextResult("(empty folder)"), details), nil
	}
	text := strings.Join(lines, "\n")
	var notices []string
	if details.LimitReached {
		notices = append(notices, fmt.Sprintf("%d entries shown, the limit. Use limit=%d for more", limit, limit*2))
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
