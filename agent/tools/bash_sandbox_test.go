package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// The bash tool in the sandbox the bot configures: what the agent needs
// still works, and nothing of one call outlives it.

func newSandboxedWorkspace(t *testing.T, cfg WorkspaceConfig) *testWorkspace {
	t.Helper()
	cfg.Sandbox = sandboxtest.New(t, sandbox.Config{})
	return newTestWorkspace(t, cfg)
}

func TestSandboxedBashWorksInTheWorkspace(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret-in-the-bot")
	tw := newSandboxedWorkspace(t, WorkspaceConfig{GitName: "Bot", GitEmail: "bot@example.com"})
	writeTree(t, tw.root, map[string]string{"main.go": "package main\n"})
	gitCommitAll(t, tw.root)
	sh := NewBashTool(tw.Workspace)
	res := call(t, sh, map[string]any{"command": `set -e
		env | sort
		echo changed >> main.go && git status --short && git diff --stat
		echo cached > "$HOME/cache" && cat "$HOME/cache"
		echo t > "$TMPDIR/t" && echo t > /tmp/t && echo tmp-ok
		ls "` + tw.Scratch() + `"
		(echo x > "` + filepath.Join(tw.Scratch(), "bash", "planted") + `") 2>&1 || echo scratch-read-only`})
	out := textOf(res)
	if res.IsError {
		t.Fatalf("got error:\n%s", out)
	}
	for _, want := range []string{"M main.go", "1 file changed", "cached", "tmp-ok", "scratch-read-only", "HOME=" + tw.Home()} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-secret") || strings.Contains(out, "OPENAI") {
		t.Errorf("the bot's environment reached the sandbox:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(tw.root, "main.go")); string(b) != "package main\nchanged\n" {
		t.Errorf("main.go on the host = %q", b)
	}
	if _, err := os.Lstat(filepath.Join(tw.Scratch(), "bash", "planted")); err == nil {
		t.Errorf("the agent wrote into the scratch folder the bot writes")
	}
	// What it cannot reach: the folder beside the workspace.
	res = call(t, sh, map[string]any{"command": "cat " + filepath.Join(tw.outside, "secret.txt") + "; ls " + tw.tmp})
	if out := textOf(res); strings.Contains(out, "TOPSECRET") || strings.Contains(out, "\noutside\n") {
		t.Errorf("the sandbox sees beside the workspace:\n%s", out)
	}
}

func TestSandboxedBashEndsEverythingItStarted(t *testing.T) {
	tw := newSandboxedWorkspace(t, WorkspaceConfig{})
	sh := NewBashTool(tw.Workspace)
	marker := fmt.Sprintf("tsbash%d", time.Now().UnixNano())
	bg := fmt.Sprintf(`(exec -a %[1]s sleep 1000) & setsid bash -c 'exec -a %[1]s sleep 1000' & nohup bash -c 'exec -a %[1]s sleep 1000' >/dev/null 2>&1 & `, marker)

	res := call(t, sh, map[string]any{"command": bg + "echo started"})
	if res.IsError || !strings.Contains(textOf(res), "started") {
		t.Fatalf("got %q", textOf(res))
	}
	if left := sandboxtest.Live(marker); len(left) > 0 {
		t.Fatalf("after the call returned, processes %v are still alive", left)
	}

	res = call(t, sh, map[string]any{"command": bg + "wait", "timeout": 0.5})
	if !res.IsError || !strings.Contains(textOf(res), "Timed out after 0.5s") {
		t.Fatalf("got %q, want a timeout", textOf(res))
	}
	if left := sandboxtest.Live(marker); len(left) > 0 {
		t.Fatalf("after the timeout, processes %v are still alive", left)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res = callCtx(t, ctx, sh, map[string]any{"command": bg + "echo up; wait"}, func(r agent.ToolResult) {
		if strings.Contains(textOf(r), "up") {
			cancel()
		}
	})
	if !res.IsError || !strings.Contains(textOf(res), "Aborted") {
		t.Fatalf("got %q, want aborted", textOf(res))
	}
	if left := sandboxtest.Live(marker); len(left) > 0 {
		t.Fatalf("after the abort, processes %v are still alive", left)
	}
}

func TestSandboxedBashExitCodesAndFullOutput(t *testing.T) {
	tw := newSandboxedWorkspace(t, WorkspaceConfig{})
	sh := NewBashTool(tw.Workspace)
	res := call(t, sh, map[string]any{"command": "echo out; exit 3"})
	var d BashDetails
	json.Unmarshal(res.Details, &d)
	if !res.IsError || d.ExitCode == nil || *d.ExitCode != 3 || !strings.Contains(textOf(res), "[Exit code 3.]") {
		t.Errorf("exit 3: got %q %s", textOf(res), res.Details)
	}
	res = call(t, sh, map[string]any{"command": "kill -KILL $$"})
	d = BashDetails{}
	json.Unmarshal(res.Details, &d)
	if !res.IsError || d.Signal != "killed" {
		t.Errorf("kill -KILL: got %q %s", textOf(res), res.Details)
	}
	// A long output is saved in the scratch folder, which the command can
	// read (read-only) like the model can.
	res = call(t, sh, map[string]any{"command": "seq 1 5000"})
	d = BashDetails{}
	json.Unmarshal(res.Details, &d)
	if d.FullOutputPath == "" {
		t.Fatalf("no full output saved: %s", res.Details)
	}
	res = call(t, sh, map[string]any{"command": "tail -1 " + d.FullOutputPath})
	if got := strings.TrimSpace(textOf(res)); got != "5000" {
		t.Errorf("reading the saved output inside the sandbox: %q", got)
	}
}

func TestBashDescriptionSaysWhatTheSandboxAllows(t *testing.T) {
	off := NewBashTool(newSandboxedWorkspace(t, WorkspaceConfig{}).Workspace).Spec().Description
	if !strings.Contains(off, "run in a sandbox") || !strings.Contains(off, "There is no network") {
		t.Errorf("sandboxed, network off:\n%s", off)
	}
	on := NewBashTool(newTestWorkspace(t, WorkspaceConfig{Sandbox: sandboxtest.New(t, sandbox.Config{Network: true})}).Workspace).Spec().Description
	if !strings.Contains(on, "run in a sandbox") || strings.Contains(on, "no network") || !strings.Contains(on, "not this machine's own services") {
		t.Errorf("sandboxed, network on:\n%s", on)
	}
	if none := NewBashTool(newTestWorkspace(t, WorkspaceConfig{}).Workspace).Spec().Description; strings.Contains(none, "sandbox") {
		t.Errorf("unsandboxed:\n%s", none)
	}
}

// The read-only tools of a session (a plan's) have none that writes nor any
// tool that is not built in, and their bash, in the sandbox, cannot change
// the worktree however it tries; the full set's bash still can, and a file
// read while planning counts as read for edit afterwards.
func TestReadOnlySetCannotChangeTheWorktree(t *testing.T) {
	tw := newSandboxedWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{"main.go": "package main\n"})
	gitCommitAll(t, tw.root)
	all := New(tw.Workspace, Options{})
	extra := Decorate(NewLsTool(tw.Workspace), Options{})
	ro := ReadOnly(append(all, renamed{extra, "srv__ls"}), tw.Workspace, Options{})
	var names []string
	for _, tl := range ro {
		names = append(names, tl.Spec().Name)
	}
	if want := []string{ReadName, BashName, GrepName, FindName, LsName}; !slices.Equal(names, want) {
		t.Errorf("read-only tools %v, want %v", names, want)
	}
	byName := func(ts []agent.Tool, name string) agent.Tool {
		for _, tl := range ts {
			if tl.Spec().Name == name {
				return tl
			}
		}
		t.Fatalf("no %s tool", name)
		return nil
	}
	res := call(t, byName(ro, BashName), map[string]any{"command": `
		(echo changed >> main.go) 2>&1; (echo new > planted.txt) 2>&1; (rm -f main.go) 2>&1; (mkdir sub) 2>&1
		cat main.go; echo scratch > "$HOME/note" && cat "$HOME/note"`})
	out := textOf(res)
	if !strings.Contains(out, "package main") || !strings.Contains(out, "scratch") {
		t.Errorf("the read-only bash cannot read the worktree or write its home:\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(tw.root, "main.go")); string(b) != "package main\n" {
		t.Errorf("main.go = %q after the read-only bash", b)
	}
	for _, p := range []string{"planted.txt", "sub"} {
		if _, err := os.Lstat(filepath.Join(tw.root, p)); err == nil {
			t.Errorf("the read-only bash made %s", p)
		}
	}
	res = call(t, byName(ro, ReadName), map[string]any{"path": "main.go"})
	if res.IsError {
		t.Fatalf("read: %s", textOf(res))
	}
	res = call(t, byName(all, EditName), map[string]any{"path": "main.go", "oldText": "package main", "newText": "package app"})
	if res.IsError {
		t.Errorf("edit after a read-only read: %s", textOf(res))
	}
	res = call(t, byName(all, BashName), map[string]any{"command": "echo new > made.txt && cat made.txt"})
	if res.IsError || !strings.Contains(textOf(res), "new") {
		t.Errorf("the full set's bash cannot write: %s", textOf(res))
	}
}

// renamed is a tool under another name (an MCP server's, to ReadOnly).
type renamed struct {
	agent.Tool
	name string
}

func (r renamed) Spec() llm.ToolSpec {
	s := r.Tool.Spec()
	s.Name = r.name
	return s
}
