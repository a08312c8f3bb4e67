package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
)

// The file tools run in the bot's own process: a named pipe or a device the
// agent put anywhere they look (the path named, a .gitignore on the way, a
// file a search walks into, a file to overwrite) must not hold them, and a
// huge file must not be read whole.
func TestFileToolsNeverWaitOnAPipe(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{"sub/a.go": "needle\n", "zero": "->/dev/zero"})
	for _, p := range []string{"fifo", "sub/fifo", ".gitignore", "sub/.gitignore"} {
		if err := syscall.Mkfifo(filepath.Join(tw.root, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big, err := os.Create(filepath.Join(tw.root, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(1 << 30)
	big.Close()
	files := NewReadTracker()
	for _, c := range []struct {
		tool agent.Tool
		args map[string]any
		want string // in the result
	}{
		{NewReadTool(tw.Workspace, files), map[string]any{"path": "fifo"}, "not a regular file"},
		{NewReadTool(tw.Workspace, files), map[string]any{"path": "zero"}, ""},
		{NewReadTool(tw.Workspace, files), map[string]any{"path": "big.txt", "limit": 1}, ""},
		{NewEditTool(tw.Workspace, files), map[string]any{"path": "fifo", "oldText": "a", "newText": "b"}, "not a regular file"},
		{NewWriteTool(tw.Workspace, files), map[string]any{"path": "fifo", "content": "x"}, "not a regular file"},
		{NewLsTool(tw.Workspace), map[string]any{"path": "fifo"}, "not a folder"},
		{NewLsTool(tw.Workspace), map[string]any{"path": "sub"}, "a.go"},
		{NewFindTool(tw.Workspace), map[string]any{"pattern": "*", "path": "fifo"}, ""},
		{NewFindTool(tw.Workspace), map[string]any{"pattern": "*.go", "path": "sub"}, "a.go"},
		{NewGrepTool(tw.Workspace), map[string]any{"pattern": "needle", "path": "sub"}, "a.go"},
		{NewGrepTool(tw.Workspace), map[string]any{"pattern": "needle", "path": "sub/fifo"}, ""},
		{NewGrepTool(tw.Workspace), map[string]any{"pattern": "needle"}, "a.go"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan agent.ToolResult, 1)
		go func() { done <- callCtx(t, ctx, c.tool, c.args, nil) }()
		select {
		case res := <-done:
			if !strings.Contains(textOf(res), c.want) {
				t.Errorf("%s %v: %q, want %q in it", c.tool.Spec().Name, c.args, textOf(res), c.want)
			}
		case <-time.After(10 * time.Second): // a failure, never a wait of a passing run
			t.Errorf("%s %v blocked", c.tool.Spec().Name, c.args)
		}
		cancel()
	}
}
