package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
)

// WriteName is the write tool's name.
const WriteName = "write"

//go:embed write.md
var writeDescription string

type writeParams struct {
	Path    string `json:"path" required:"true" desc:"File to write, relative to the workspace root"`
	Content string `json:"content" required:"true" desc:"The complete new content of the file"`
}

// WriteDetails are the machine-readable facts of a write result.
type WriteDetails struct {
	Bytes   int  `json:"bytes"`
	Created bool `json:"created"`
}

// WriteTool creates or replaces whole files.
type WriteTool struct {
	ws    *Workspace
	files *ReadTracker
	spec  llm.ToolSpec
}

// NewWriteTool returns the write tool of ws; written files are recorded in files
// so that they can be edited without being read back.
func NewWriteTool(ws *Workspace, files *ReadTracker) *WriteTool {
	return &WriteTool{ws: ws, files: files, spec: newSpec(WriteName, writeDescription, ws, writeParams{})}
}

func (t *WriteTool) Spec() llm.ToolSpec { return t.spec }

func (t *WriteTool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var p writeParams
	if err := decodeArgs(WriteName, call.Args, &p); err != nil {
		return errorResult(err), nil
	}
	if p.Path == "" {
		return agent.ErrorResult("path is required"), nil
	}
	if err := ctx.Err(); err != nil {
		return agent.ErrorResult("write aborted"), nil
	}
	tg, err := t.ws.resolve(p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	grow, refused := t.ws.quota.checkWrite(ctx, p.Path, tg.size(), int64(len(p.Content)), !tg.exists())
	if refused != "" {
		return agent.ErrorResult(refused), nil
	}
	created, err := writeFile(tg, p.Path, []byte(p.Content))
	if err != nil {
		return errorResult(err), nil
	}
	t.ws.quota.adjust(grow)
	if fi, err := tg.area.fs.Stat(tg.rel); err == nil {
		t.files.record(tg.abs(), stampOf([]byte(p.Content), fi.ModTime()))
	}
	how := "replaced its content"
	if created {
		how = "new file"
	}
	return withDetails(agent.TextResult(fmt.Sprintf("Wrote %d byte%s to %s (%s).", len(p.Content), plural(len(p.Content)), p.Path, how)),
		WriteDetails{Bytes: len(p.Content), Created: created}), nil
}

// writeFile writes data to a resolved target in place (keeping an existing
// file's mode), creating parent folders. Every step goes through the area's
// os.Root, so neither a symlinked parent nor a symlinked file can lead outside.
func writeFile(tg target, input string, data []byte) (created bool, err error) {
	if tg.rel == "." {
		return false, &pathError{"path " + quoted(input) + " is the workspace root, not a file"}
	}
	fi, err := tg.area.fs.Stat(tg.rel)
	switch {
	case err == nil:
		if err := checkRegular(fi, input); err != nil {
			return false, err
		}
	case errors.Is(err, fs.ErrNotExist):
		created = true
		if dir := path.Dir(tg.rel); dir != "." {
			if err := tg.area.fs.MkdirAll(dir, 0o755); err != nil {
				return false, &pathError{"cannot create the folders of " + quoted(input) + ": " + describeFSError(err)}
			}
		}
	default:
		return false, &pathError{"cannot write " + quoted(input) + ": " + describeFSError(err)}
	}
	// O_NONBLOCK: a pipe swapped in after the check fails the open (no
	// reader) or is refused below, instead of holding the bot's process.
	f, err := tg.area.fs.OpenFile(tg.rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0o644)
	if err != nil {
		return false, &pathError{"cannot write " + quoted(input) + ": " + describeFSError(err)}
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return false, &pathError{"path " + quoted(input) + " is not a regular file"}
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return false, &pathError{"cannot write " + quoted(input) + ": " + describeFSError(err)}
	}
	return created, nil
}
