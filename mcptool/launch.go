package mcptool

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/threadsmith/threadsmith/sandbox"
)

// Where says where a thread's stdio server runs.
type Where struct {
	// Worktree is the thread's worktree. A repository's server runs in it;
	// an operator's server is told where it is ($THREADSMITH_WORKTREE) and
	// sees it at that path when Mounts show it.
	Worktree string
	// Mounts are what the server is shown besides the system's programs
	// and libraries: what bash is shown.
	Mounts []sandbox.Mount
	// PATH is the server's PATH.
	PATH string
}

// WorktreeEnv names the variable that tells a server the thread's worktree.
const WorktreeEnv = "THREADSMITH_WORKTREE"

// closedImports are set in an operator's server's environment, unless its
// config sets them: Python leaves its working directory and the user's
// site-packages out of its import path. Every other variable that adds code
// to a program (PYTHONPATH, PYTHONSTARTUP, NODE_OPTIONS, NODE_PATH, PERL5LIB,
// PERL5OPT, RUBYOPT, RUBYLIB, LD_PRELOAD, LD_LIBRARY_PATH…) is absent, as is
// everything the config does not name.
var closedImports = map[string]string{
	"PYTHONSAFEPATH":   "1",
	"PYTHONNOUSERSITE": "1",
}

// Start starts a stdio server (its program at path) in sb, wired to the MCP
// client, so that nothing the thread's agent wrote can become its code.
//
// The agent's bash writes the worktree, its own HOME and TMPDIR; an
// operator's server, which holds the operator's secrets (its env), uses none
// of them for its own files. Its working directory (not the worktree, whose
// files `python -m`, `npx` and friends would load), HOME and TMPDIR are the
// sandbox's /tmp: a tmpfs of its own, empty at each start, that no other
// sandbox sees. Its environment has closedImports. A repository's server is
// the repository's code and holds no secrets: it runs in the worktree (its
// own files are there), with the same private HOME and TMPDIR and the
// environment its file states.
//
// A variable the server's Env names is taken as written, whatever the
// above: the operator's choice wins. Without a sandbox (sb not Confined)
// the working directory is an empty folder and HOME and TMPDIR a fresh
// one, both removed when the server stops, but nothing there is out of
// the agent's reach.
//
// stderr receives the server's standard error, line by line (nil: dropped).
func Start(sb *sandbox.Sandbox, s Server, path string, w Where, stderr func(line string)) (*Process, error) {
	dir, home, cleanup := "/tmp", "/tmp", func() {}
	if !sb.Confined() {
		own, err := os.MkdirTemp("", "threadsmith-mcp-")
		if err != nil {
			return nil, fmt.Errorf("a folder for the server: %w", err)
		}
		cleanup = func() { os.RemoveAll(own) }
		dir, home = filepath.Join(own, "cwd"), filepath.Join(own, "home")
		if err := errors.Join(os.Mkdir(dir, 0o555), os.Mkdir(home, 0o700)); err != nil {
			cleanup()
			return nil, fmt.Errorf("a folder for the server: %w", err)
		}
	}
	if s.FromRepo {
		dir = w.Worktree
	}
	env := map[string]string{
		"PATH":      w.PATH,
		"HOME":      home,
		"TMPDIR":    home,
		"LANG":      "C.UTF-8",
		WorktreeEnv: w.Worktree,
	}
	if !s.FromRepo {
		maps.Copy(env, closedImports)
	}
	maps.Copy(env, s.Env)
	var list []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	p, err := StartInSandbox(sb, sandbox.Spec{
		Path: path, Args: append([]string{s.Command}, s.Args...), Env: list,
		Dir: dir, Mounts: w.Mounts,
	}, stderr)
	if err != nil {
		cleanup()
		return nil, err
	}
	stop := p.Stop
	p.Stop = func() {
		stop()
		cleanup()
	}
	return p, nil
}
