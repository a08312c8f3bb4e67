package tools

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
)

// snapshot records every path under dir with its type, size, mode, mtime and
// content hash, to prove an attack changed nothing there.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}

// attackRepo is a committed repository with links that point out of it, next
// to an "outside" folder holding a secret.
func attackRepo(t *testing.T) (*testWorkspace, []agent.Tool) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{
		"README.md":      "inside\n",
		"src/main.go":    "package main\n",
		"link":           "->/etc",
		"rellink":        "->../outside",
		"filelink":       "->" + filepath.Join(tw.outside, "secret.txt"),
		"src/deep/up":    "->../../../outside",
		"loop1":          "->loop2",
		"loop2":          "->loop1",
		"gitlink":        "->.git",
		"inlink":         "->src/main.go",
		"abs-inside":     "->" + filepath.Join(tw.root, "README.md"),
		"dotdot-in-link": "->src/../../outside/secret.txt",
	})
	gitCommitAll(t, tw.root)
	if out := gitCmd(t, tw.root, "ls-files", "-s", "link"); !strings.HasPrefix(out, "120000") {
		t.Fatalf("link is not committed as a symlink: %q", out)
	}
	return tw, New(tw.Workspace, Options{})
}

func toolByName(tools []agent.Tool, name string) agent.Tool {
	for _, t := range tools {
		if t.Spec().Name == name {
			return t
		}
	}
	panic(name)
}

func TestConfinementAttacks(t *testing.T) {
	tw, tools := attackRepo(t)
	read, write, edit := toolByName(tools, ReadName), toolByName(tools, WriteName), toolByName(tools, EditName)
	ls, grep, find := toolByName(tools, LsName), toolByName(tools, GrepName), toolByName(tools, FindName)
	pwned := "threadsmith-attack-" + filepath.Base(tw.tmp)
	long := strings.Repeat("a/", 2100) + "x"
	attacks := []struct {
		name string
		tool agent.Tool
		args map[string]any
		want string // in the refusal
	}{
		{"absolute path outside", read, map[string]any{"path": "/etc/passwd"}, "outside the workspace"},
		{"absolute path to the secret", read, map[string]any{"path": filepath.Join(tw.outside, "secret.txt")}, "outside the workspace"},
		{"dot-dot", read, map[string]any{"path": "../outside/secret.txt"}, "leaves the workspace"},
		{"dot-dot in the middle", read, map[string]any{"path": "src/../../outside/secret.txt"}, "leaves the workspace"},
		{"@ and dot-dot", read, map[string]any{"path": "@../outside/secret.txt"}, "leaves the workspace"},
		{"committed link to /etc", read, map[string]any{"path": "link/passwd"}, "symbolic link link"},
		{"write through the link to /etc", write, map[string]any{"path": "link/" + pwned, "content": "x"}, "symbolic link link"},
		{"symlinked file", read, map[string]any{"path": "filelink"}, "symbolic link filelink"},
		{"write onto a symlinked file", write, map[string]any{"path": "filelink", "content": "pwned"}, "symbolic link filelink"},
		{"edit a symlinked file", edit, map[string]any{"path": "filelink", "oldText": "TOPSECRET", "newText": "pwned"}, "symbolic link filelink"},
		{"relative symlinked directory", read, map[string]any{"path": "rellink/secret.txt"}, "symbolic link rellink"},
		{"write into a symlinked directory", write, map[string]any{"path": "rellink/new.txt", "content": "x"}, "symbolic link rellink"},
		{"symlinked directory deep in the tree", write, map[string]any{"path": "src/deep/up/secret.txt", "content": "x"}, "symbolic link src/deep/up"},
		{"dot-dot inside a link target", read, map[string]any{"path": "dotdot-in-link"}, "symbolic link dotdot-in-link"},
		{"symlink loop", read, map[string]any{"path": "loop1/x"}, "too many levels of symbolic links"},
		{"/proc/self/root", read, map[string]any{"path": "/proc/self/root/etc/passwd"}, "outside the workspace"},
		{"/proc/self/cwd", ls, map[string]any{"path": "/proc/self/cwd"}, "outside the workspace"},
		{"NUL byte", write, map[string]any{"path": "ok.txt\x00../../outside/x", "content": "x"}, "NUL byte"},
		{"very long path", write, map[string]any{"path": long, "content": "x"}, "too long"},
		{"very long name", write, map[string]any{"path": strings.Repeat("n", 300), "content": "x"}, "longer than 255 bytes"},
		{"one-dot-leader look-alike of ..", read, map[string]any{"path": "\u2024\u2024/outside/secret.txt"}, "looks like"},
		{"fullwidth dots", write, map[string]any{"path": "\uff0e\uff0e/x", "content": "x"}, "looks like"},
		{"division slash", write, map[string]any{"path": "..\u2215outside\u2215x", "content": "x"}, "looks like"},
		{"zero-width .git", write, map[string]any{"path": ".g\u200bit/config", "content": "x"}, "looks like"},
		{"read .git/config", read, map[string]any{"path": ".git/config"}, "inside .git"},
		{"write a git hook", write, map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/" + pwned}, "inside .git"},
		{"upper-case .GIT", write, map[string]any{"path": ".GIT/hooks/post-commit", "content": "x"}, "inside .git"},
		{"path through .git out", write, map[string]any{"path": ".git/../../outside/x", "content": "x"}, "leaves the workspace"},
		{"symlink to .git", write, map[string]any{"path": "gitlink/hooks/pre-push", "content": "x"}, "inside .git"},
		{"ls .git", ls, map[string]any{"path": ".git"}, "inside .git"},
		{"home", read, map[string]any{"path": "~/.ssh/id_rsa"}, "home folder"},
		{"ls through the link", ls, map[string]any{"path": "link"}, "symbolic link link"},
		{"grep through the link", grep, map[string]any{"pattern": "root", "path": "link"}, "symbolic link link"},
		{"find through a link", find, map[string]any{"pattern": "*", "path": "rellink"}, "symbolic link rellink"},
		{"scratch path escaping", read, map[string]any{"path": tw.Scratch() + "/../outside/secret.txt"}, "outside the workspace"},
	}
	if len(attacks) < 20 {
		t.Fatalf("only %d attacks", len(attacks))
	}
	outsideBefore := snapshot(t, tw.outside)
	gitBefore := snapshot(t, filepath.Join(tw.root, ".git"))
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			res := call(t, a.tool, a.args)
			got := textOf(res)
			if !res.IsError || !strings.Contains(got, a.want) {
				t.Errorf("got IsError=%v %q, want a refusal containing %q", res.IsError, got, a.want)
			}
			if strings.Contains(got, "TOPSECRET") || strings.Contains(got, "root:x:0:0") {
				t.Errorf("refusal leaks outside content: %q", got)
			}
		})
	}
	if after := snapshot(t, tw.outside); after != outsideBefore {
		t.Errorf("the outside folder changed:\nbefore\n%s\nafter\n%s", outsideBefore, after)
	}
	if after := snapshot(t, filepath.Join(tw.root, ".git")); after != gitBefore {
		t.Errorf(".git changed")
	}
	for _, p := range []string{"/etc/" + pwned, "/tmp/" + pwned} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was created", p)
		}
	}
}

// What stays inside works: links inside the tree, absolute paths in the root,
// and walks that meet links do not follow them out.
func TestConfinementAllowsInside(t *testing.T) {
	tw, tools := attackRepo(t)
	read, grep, find := toolByName(tools, ReadName), toolByName(tools, GrepName), toolByName(tools, FindName)
	for _, p := range []string{"inlink", "abs-inside", filepath.Join(tw.root, "src/main.go"), "src/deep/../main.go", "./README.md"} {
		if res := call(t, read, map[string]any{"path": p}); res.IsError {
			t.Errorf("read %q: %q, want success", p, textOf(res))
		}
	}
	res := call(t, grep, map[string]any{"pattern": "TOPSECRET|root:x"})
	if got := textOf(res); got != "No matches found." {
		t.Errorf("grep over the tree followed a link out: %q", got)
	}
	res = call(t, find, map[string]any{"pattern": "*secret*"})
	if got := textOf(res); got != "No files found matching the pattern." {
		t.Errorf("find over the tree followed a link out: %q", got)
	}
	res = call(t, find, map[string]any{"pattern": "config"})
	if got := textOf(res); strings.Contains(got, ".git") {
		t.Errorf("find entered .git: %q", got)
	}
	// The workspace root reached through a symlinked spelling is the same root.
	alias := filepath.Join(tw.tmp, "alias")
	if err := os.Symlink(tw.root, alias); err != nil {
		t.Fatal(err)
	}
	ws2, err := NewWorkspace(WorkspaceConfig{Root: alias, Scratch: filepath.Join(tw.tmp, "scratch2")})
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	rd2 := NewReadTool(ws2, NewReadTracker())
	for _, p := range []string{filepath.Join(alias, "README.md"), filepath.Join(tw.root, "README.md")} {
		if res := call(t, rd2, map[string]any{"path": p}); res.IsError {
			t.Errorf("read %q through the alias root: %q", p, textOf(res))
		}
	}
}

func TestNewWorkspaceRefusesOverlappingScratch(t *testing.T) {
	root := t.TempDir()
	if _, err := NewWorkspace(WorkspaceConfig{Root: root, Scratch: filepath.Join(root, "scratch")}); err == nil {
		t.Error("a scratch folder inside the root was accepted")
	}
}
