package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
)

func TestNewListsToolsInOrder(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	var names []string
	readOnly := map[string]bool{}
	for _, tl := range New(tw.Workspace, Options{}) {
		spec := tl.Spec()
		names = append(names, spec.Name)
		ro, ok := tl.(agent.ReadOnlyTool)
		readOnly[spec.Name] = ok && ro.ReadOnly()
		if spec.Description == "" || strings.Contains(spec.Description, "{{") || !json.Valid(spec.Parameters) {
			t.Errorf("%s: bad spec %+v", spec.Name, spec)
		}
	}
	if want := []string{ReadName, BashName, EditName, WriteName, GrepName, FindName, LsName}; !slices.Equal(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
	want := map[string]bool{ReadName: true, GrepName: true, FindName: true, LsName: true, BashName: false, EditName: false, WriteName: false}
	for name, ro := range want {
		if readOnly[name] != ro {
			t.Errorf("%s: ReadOnly %v after decoration, want %v", name, readOnly[name], ro)
		}
	}
	if d := toolByName(New(tw.Workspace, Options{}), BashName).Spec().Description; !strings.Contains(d, "after 600 seconds") {
		t.Errorf("bash description does not state the timeout: %q", d)
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	const token = "xoxb-1234-SECRET"
	tw := newTestWorkspace(t, WorkspaceConfig{Env: map[string]string{"LEAKED": token}})
	writeTree(t, tw.root, map[string]string{"config.txt": "token: " + token + "\n"})
	var logs bytes.Buffer
	tools := New(tw.Workspace, Options{Secrets: []string{token, "", "sk-\"quoted\""}, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	var partials []string
	update := func(r agent.ToolResult) { partials = append(partials, textOf(r)) }
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{BashName, map[string]any{"command": "echo $LEAKED; echo 'sk-\"quoted\"'"}},
		{ReadName, map[string]any{"path": "config.txt"}},
		{GrepName, map[string]any{"pattern": "SECRET"}},
		{BashName, map[string]any{"command": "echo " + token + " >&2; exit 1"}},
	} {
		res := callCtx(t, context.Background(), toolByName(tools, c.tool), c.args, update)
		all := textOf(res) + string(res.Details) + strings.Join(partials, "")
		if strings.Contains(all, "SECRET") || strings.Contains(all, "quoted") {
			t.Errorf("%s leaks a secret: %q / %s / %q", c.tool, textOf(res), res.Details, partials)
		}
		if !strings.Contains(textOf(res), Redacted) {
			t.Errorf("%s: got %q, want %s in its place", c.tool, textOf(res), Redacted)
		}
	}
	if strings.Contains(logs.String(), "SECRET") {
		t.Errorf("logs leak a secret: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "tool=bash") {
		t.Errorf("no debug line per call in the log: %s", logs.String())
	}
}

// fakeTool misbehaves on purpose: it panics, floods, or fails.
type fakeTool struct {
	run func() (agent.ToolResult, error)
}

func (f fakeTool) Spec() llm.ToolSpec { return llm.ToolSpec{Name: "fake"} }
func (f fakeTool) Execute(context.Context, agent.ToolCall, func(agent.ToolResult)) (agent.ToolResult, error) {
	return f.run()
}

func TestDecoratorsCapAndRecover(t *testing.T) {
	flood := Decorate(fakeTool{func() (agent.ToolResult, error) {
		return agent.TextResult(strings.Repeat("é", 100_000)), nil
	}}, Options{MaxResultBytes: 1001})
	res, err := flood.Execute(context.Background(), agent.ToolCall{Name: "fake"}, nil)
	if err != nil || !strings.HasSuffix(textOf(res), "[Result cut at 1001B.]") || len(textOf(res)) > 1100 {
		t.Errorf("got %d bytes ending %q, err %v; want a cut near 1001 bytes", len(textOf(res)), textOf(res)[max(0, len(textOf(res))-40):], err)
	}
	panicky := Decorate(fakeTool{func() (agent.ToolResult, error) { panic("boom sk-panic") }}, Options{Secrets: []string{"sk-panic"}})
	_, err = panicky.Execute(context.Background(), agent.ToolCall{Name: "fake"}, nil)
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") || strings.Contains(err.Error(), "sk-panic") {
		t.Errorf("got %v, want a redacted panic error", err)
	}
	failing := Decorate(fakeTool{func() (agent.ToolResult, error) { return agent.ToolResult{}, errors.New("disk sk-x full") }}, Options{Secrets: []string{"sk-x"}})
	if _, err := failing.Execute(context.Background(), agent.ToolCall{Name: "fake"}, nil); err == nil || strings.Contains(err.Error(), "sk-x") {
		t.Errorf("got %v, want the error with the secret redacted", err)
	}
}

// Tools of one workspace used at once, as the agent loop runs read-only calls
// in parallel and several sessions may share a machine: run under -race.
func TestToolsInParallel(t *testing.T) {
	tw := searchTree(t)
	tools := New(tw.Workspace, Options{Secrets: []string{"visible-dotfile"}})
	read, grep, find, ls := toolByName(tools, ReadName), toolByName(tools, GrepName), toolByName(tools, FindName), toolByName(tools, LsName)
	write, edit, bash := toolByName(tools, WriteName), toolByName(tools, EditName), toolByName(tools, BashName)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	check := func(name string, res agent.ToolResult, want string) {
		if res.IsError || !strings.Contains(textOf(res), want) {
			errs <- fmt.Sprintf("%s: got %q, want %q", name, textOf(res), want)
		}
	}
	for i := range 4 {
		wg.Go(func() { check("read", call(t, read, map[string]any{"path": "main.go"}), "func Handler") })
		wg.Go(func() { check("grep", call(t, grep, map[string]any{"pattern": "Handler"}), "main.go:6:") })
		wg.Go(func() { check("find", call(t, find, map[string]any{"pattern": "*.go"}), "util/strings.go") })
		wg.Go(func() { check("ls", call(t, ls, map[string]any{}), "main.go") })
		wg.Go(func() {
			name := fmt.Sprintf("gen/f%d.txt", i)
			check("write", call(t, write, map[string]any{"path": name, "content": "v1\n"}), "Wrote")
			check("edit", call(t, edit, map[string]any{"path": name, "oldText": "v1", "newText": "v2"}), "Edited")
			check("read back", call(t, read, map[string]any{"path": name}), "v2")
		})
		wg.Go(func() { check("bash", call(t, bash, map[string]any{"command": "cat .env"}), Redacted) })
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// The registry is what New returns, and each tool's MainArgs are string
// parameters of its own schema: a renamed parameter fails here, not as a
// chat line that quietly lost its summary.
func TestBuiltinsDescribeWhatNewReturns(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	made := New(tw.Workspace, Options{})
	if len(made) != len(Builtins()) {
		t.Fatalf("New returns %d tools, the registry lists %d", len(made), len(Builtins()))
	}
	mainArgs := MainArgs()
	for i, b := range Builtins() {
		spec := made[i].Spec()
		if spec.Name != b.Name || Names()[i] != b.Name {
			t.Errorf("tool %d: New made %q, the registry says %q (Names: %q)", i, spec.Name, b.Name, Names()[i])
		}
		var schema struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
			t.Fatalf("%s: parameters: %v", spec.Name, err)
		}
		if len(b.MainArgs) == 0 {
			t.Errorf("%s: no main argument", b.Name)
		}
		for _, k := range b.MainArgs {
			if p, ok := schema.Properties[k]; !ok || p.Type != "string" {
				t.Errorf("%s: main argument %q is not a string parameter of its schema %s", b.Name, k, spec.Parameters)
			}
		}
		if !slices.Equal(mainArgs[b.Name], b.MainArgs) {
			t.Errorf("%s: MainArgs() = %q, want %q", b.Name, mainArgs[b.Name], b.MainArgs)
		}
	}
}

// The system prompt's tool list names every built-in tool once, in New's
// order, and nothing else.
func TestPromptGuideNamesEveryBuiltinOnce(t *testing.T) {
	lines := strings.Split(PromptGuide(), "\n")
	if lines[0] != "Tools:" {
		t.Fatalf("first line %q, want Tools:", lines[0])
	}
	var named []string
	for _, l := range lines[1:] {
		head, _, ok := strings.Cut(strings.TrimPrefix(l, "- "), ": ")
		if !ok || !strings.HasPrefix(l, "- ") {
			t.Fatalf("line %q is not \"- name[, name]: what it does\"", l)
		}
		named = append(named, strings.Split(head, ", ")...)
	}
	if !slices.Equal(named, Names()) {
		t.Errorf("the guide names %q, the registry %q", named, Names())
	}
}
