package tools

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from the current results")

// testWorkspace is a workspace in t.TempDir(): <tmp>/repo is the root,
// <tmp>/repo.scratch the scratch folder, <tmp>/outside a folder next to them
// that no tool may touch.
type testWorkspace struct {
	*Workspace
	tmp     string
	root    string
	outside string
	files   *ReadTracker
}

func newTestWorkspace(t testing.TB, cfg WorkspaceConfig) *testWorkspace {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "repo")
	outside := filepath.Join(tmp, "outside")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Root = root
	ws, err := NewWorkspace(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return &testWorkspace{Workspace: ws, tmp: tmp, root: root, outside: outside, files: NewReadTracker()}
}

// writeTree creates files (path → content) under dir; a content starting with
// "->" makes a symbolic link to the rest.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gitCmd runs git hermetically in dir.
func gitCmd(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// gitCommitAll makes dir a repository with everything committed.
func gitCommitAll(t testing.TB, dir string) {
	t.Helper()
	gitCmd(t, dir, "init", "-q", "-b", "main")
	gitCmd(t, dir, "add", "-A")
	gitCmd(t, dir, "commit", "-q", "-m", "fixture")
}

func call(t testing.TB, tool agent.Tool, args any) agent.ToolResult {
	t.Helper()
	return callCtx(t, context.Background(), tool, args, nil)
}

func callCtx(t testing.TB, ctx context.Context, tool agent.Tool, args any, update func(agent.ToolResult)) agent.ToolResult {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Execute(ctx, agent.ToolCall{ID: "call-1", Name: tool.Spec().Name, Args: raw}, update)
	if err != nil {
		t.Fatalf("%s(%s): infrastructure error %v", tool.Spec().Name, raw, err)
	}
	return res
}

func textOf(res agent.ToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if c.Type == llm.ContentText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// goldenCase is one call and its result, for a golden file.
type goldenCase struct {
	name string
	res  agent.ToolResult
}

// checkGolden compares the rendered cases with testdata/<name>.golden.
// Absolute paths of the test workspace are replaced by placeholders.
func checkGolden(t *testing.T, name string, tw *testWorkspace, cases []goldenCase) {
	t.Helper()
	var b strings.Builder
	for _, c := range cases {
		b.WriteString("=== " + c.name)
		if c.res.IsError {
			b.WriteString(" (error)")
		}
		b.WriteString("\n")
		for _, blk := range c.res.Content {
			switch blk.Type {
			case llm.ContentText:
				b.WriteString(blk.Text)
			case llm.ContentImage:
				b.WriteString("<image " + blk.MimeType + " " + blk.Data + ">")
			}
			b.WriteString("\n")
		}
	}
	got := strings.NewReplacer(tw.Scratch(), "<SCRATCH>", tw.Root(), "<ROOT>").Replace(b.String())
	path := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("results differ from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
