package mcptool_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// startSet opens s as a thread's server through Start, in sb, over worktree.
func startSet(t *testing.T, sb *sandbox.Sandbox, s mcptool.Server, worktree string, mounts ...sandbox.Mount) *mcptool.Set {
	t.Helper()
	launch := func(_ context.Context, s mcptool.Server) (*mcptool.Process, error) {
		return mcptool.Start(sb, s, s.Command, mcptool.Where{Worktree: worktree, PATH: "/usr/bin:/bin",
			Mounts: append([]sandbox.Mount{{Path: worktree, Access: sandbox.ReadWrite}}, mounts...)}, nil)
	}
	set := mcptool.Open(t.Context(), []mcptool.Server{s}, mcptool.Options{Launch: launch})
	if st := set.Status(); len(st) != 1 || st[0].Err != "" {
		set.Close()
		t.Fatalf("the server did not start: %+v", st)
	}
	return set
}

// envOf is the server's environment as a map, failing on a name given twice
// (which one a program reads would depend on the program).
func envOf(t *testing.T, set *mcptool.Set, server string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(text(call(t, t.Context(), set.Tools(), server+"__env", `{}`))), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		if _, twice := env[k]; twice {
			t.Errorf("the server's environment names %s twice", k)
		}
		env[k] = v
	}
	return env
}

// An operator's server runs in the sandbox's private /tmp (not the
// worktree), its HOME and TMPDIR too, which start empty at every start, and
// with Python's import path closed; it is told where the worktree is and
// works on it by absolute path; what its config sets wins. A repository's
// server runs in the worktree, with the same private HOME. Nothing of
// theirs is left on the host.
func TestStartKeepsTheServerOutOfTheAgentsFolders(t *testing.T) {
	bin := mcpfake.Build(t)
	sb := sandboxtest.New(t, sandbox.Config{})
	t.Setenv("TMPDIR", t.TempDir()) // Start leaves nothing of the servers' on the host
	wt := t.TempDir()
	binDir := sandbox.Mount{Path: filepath.Dir(bin), Access: sandbox.ReadOnly}
	op := mcptool.Server{Name: "op", Command: bin, Timeout: 30 * time.Second,
		Env: map[string]string{"PYTHONNOUSERSITE": "0", "NOTES_TOKEN": "tok"}}

	set := startSet(t, sb, op, wt, binDir)
	env := envOf(t, set, "op")
	want := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
		"THREADSMITH_WORKTREE": wt, "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "0", "NOTES_TOKEN": "tok"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	for k := range env {
		if _, ok := want[k]; !ok {
			t.Errorf("the server's environment has %s, which neither Start nor its config sets", k)
		}
	}
	if r := call(t, t.Context(), set.Tools(), "op__write", `{"path":"own.py","text":"x"}`); r.IsError || text(r) != "wrote own.py" {
		t.Errorf("the server cannot write its own working directory: %s", text(r))
	}
	if r := call(t, t.Context(), set.Tools(), "op__read", `{"path":"/tmp/own.py"}`); r.IsError {
		t.Errorf("the server's working directory is not its private /tmp: %s", text(r))
	}
	if r := call(t, t.Context(), set.Tools(), "op__write", `{"path":"/tmp/.bashrc","text":"from the last start"}`); r.IsError {
		t.Fatalf("the server cannot write its HOME: %s", text(r))
	}
	if r := call(t, t.Context(), set.Tools(), "op__write", `{"path":"`+wt+`/by-the-server.txt","text":"x"}`); r.IsError {
		t.Errorf("the server cannot write the worktree by its absolute path: %s", text(r))
	}
	if _, err := os.Stat(filepath.Join(wt, "by-the-server.txt")); err != nil {
		t.Errorf("the server's file is not in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wt, "own.py")); err == nil {
		t.Errorf("the server wrote the worktree through its working directory")
	}
	set.Close()

	set = startSet(t, sb, op, wt, binDir)
	if r := call(t, t.Context(), set.Tools(), "op__read", `{"path":"/tmp/.bashrc"}`); !r.IsError {
		t.Errorf("the server's HOME kept a file from its last start: %s", text(r))
	}
	set.Close()

	repo := mcptool.Server{Name: "repo", Command: bin, FromRepo: true, Timeout: 30 * time.Second}
	set = startSet(t, sb, repo, wt, binDir)
	env = envOf(t, set, "repo")
	if env["HOME"] != "/tmp" || env["TMPDIR"] != "/tmp" || env["PYTHONSAFEPATH"] != "" {
		t.Errorf("a repository's server: HOME=%q TMPDIR=%q PYTHONSAFEPATH=%q, want /tmp, /tmp and unset", env["HOME"], env["TMPDIR"], env["PYTHONSAFEPATH"])
	}
	if r := call(t, t.Context(), set.Tools(), "repo__write", `{"path":"from-repo-server.txt","text":"x"}`); r.IsError {
		t.Errorf("a repository's server does not run in the worktree: %s", text(r))
	}
	if _, err := os.Stat(filepath.Join(wt, "from-repo-server.txt")); err != nil {
		t.Errorf("a repository's server does not run in the worktree: %v", err)
	}
	set.Close()

	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) > 0 {
		t.Errorf("the servers' folders outlived them: %v", left)
	}
}

// Without a sandbox a server's HOME is a fresh folder of its own, gone when
// it stops.
func TestStartUnsandboxedGivesAFreshHome(t *testing.T) {
	bin := mcpfake.Build(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	wt := t.TempDir()
	set := startSet(t, sandbox.None(), mcptool.Server{Name: "op", Command: bin, Timeout: 30 * time.Second}, wt)
	env := envOf(t, set, "op")
	if !strings.HasPrefix(env["HOME"], tmp+"/") || env["TMPDIR"] != env["HOME"] {
		t.Errorf("HOME=%q TMPDIR=%q, want a folder of the server's own under %s", env["HOME"], env["TMPDIR"], tmp)
	}
	if fi, err := os.Stat(env["HOME"]); err != nil || !fi.IsDir() {
		t.Errorf("the server's HOME: %v", err)
	}
	set.Close()
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the server's folders outlived it: %v", left)
	}
}
