package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/sandbox"
)

// DefaultBashTimeout is how long a bash command may run unless configured otherwise.
const DefaultBashTimeout = 10 * time.Minute

// WorkspaceConfig says where one session's tools work.
type WorkspaceConfig struct {
	// Root is the git work tree the tools are confined to. It must exist.
	Root string
	// Scratch is a folder outside Root for bash output logs, bash's HOME and
	// TMPDIR, and files the chat hands over. Default: "<Root>.scratch" next to
	// Root. It is created if missing and must not overlap Root.
	Scratch string
	// BashTimeout bounds every bash command; the model may ask for less, never
	// more. Default DefaultBashTimeout.
	BashTimeout time.Duration
	// Env holds extra variables for bash, on top of the allowlist (and winning
	// over it). Nothing else of the bot's own environment reaches bash.
	Env map[string]string
	// GitName and GitEmail are the git author and committer identity bash sees.
	// Default "threadsmith" and "threadsmith@localhost".
	GitName, GitEmail string
	// Sandbox runs bash. Nil runs it unsandboxed (sandbox.None), as tests
	// of the tools themselves do; the bot always passes its configured one.
	Sandbox *sandbox.Sandbox
	// Mounts returns what bash is shown besides the workspace (read-write)
	// and the scratch folder (read-only) with its home and tmp (read-write):
	// the worktree's git metadata, read-only, so that git status/diff/log
	// work. It is asked before every command (the metadata can move). Nil:
	// nothing more.
	Mounts func() []sandbox.Mount
	// Cache is a folder bash is shown read-write and told to keep its build
	// and package caches in (GOCACHE, GOMODCACHE, npm_config_cache,
	// PIP_CACHE_DIR, XDG_CACHE_HOME), shared with the other sessions given
	// the same folder. It must exist and overlap neither Root nor Scratch.
	// What the agent leaves there is never read, run or followed by the
	// tools; it counts under Quota with the worktree and the scratch folder.
	// "": no cache.
	Cache string
	// Quota limits the disk the worktree, the scratch folder and the cache
	// take together; the zero value limits nothing.
	Quota Quota
}

// Workspace is one session's confined file area: the repository root and a
// scratch area beside it, both opened as os.Root so that no file operation of a
// tool can leave them, plus what bash needs (home, temp folder, environment).
//
// A Workspace is safe for concurrent use by the tools of one or more sessions.
// Close it when the session ends.
type Workspace struct {
	repo    area
	scratch area
	home    string
	tmp     string
	logs    string // bash full-output logs
	cache   string // build and package caches, "" for none
	timeout time.Duration
	env     []string
	bash    string // absolute path of the bash binary
	sandbox *sandbox.Sandbox
	mounts  []sandbox.Mount
	extra   func() []sandbox.Mount
	quota   *quota
}

// area is a tree the file tools may use: its absolute path with symlinks
// resolved, the other spellings of that path a model may use, and the open root
// every operation goes through.
type area struct {
	abs     string
	aliases []string // abs as configured, when it differs
	fs      *os.Root
	isRepo  bool // .git is off limits, .gitignore applies
}

// NewWorkspace opens the workspace described by cfg and prepares its scratch
// area (home with an empty git config, tmp, bash logs).
func NewWorkspace(cfg WorkspaceConfig) (*Workspace, error) {
	if cfg.Root == "" {
		return nil, errors.New("tools: workspace root is empty")
	}
	root, rootAliases, err := canonicalDir(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace root: %w", err)
	}
	scratchPath := cfg.Scratch
	if scratchPath == "" {
		scratchPath = root + ".scratch"
	}
	if err := os.MkdirAll(scratchPath, 0o700); err != nil {
		return nil, fmt.Errorf("tools: scratch folder: %w", err)
	}
	scratch, scratchAliases, err := canonicalDir(scratchPath)
	if err != nil {
		return nil, fmt.Errorf("tools: scratch folder: %w", err)
	}
	if within(root, scratch) || within(scratch, root) {
		return nil, fmt.Errorf("tools: scratch folder %s and workspace root %s must not contain each other", scratch, root)
	}
	var cache string
	if cfg.Cache != "" {
		if cache, _, err = canonicalDir(cfg.Cache); err != nil {
			return nil, fmt.Errorf("tools: cache folder: %w", err)
		}
		for _, p := range []string{root, scratch} {
			if within(p, cache) || within(cache, p) {
				return nil, fmt.Errorf("tools: cache folder %s and %s must not contain each other", cache, p)
			}
		}
	}
	w := &Workspace{
		cache:   cache,
		home:    filepath.Join(scratch, "home"),
		tmp:     filepath.Join(scratch, "tmp"),
		logs:    filepath.Join(scratch, "bash"),
		timeout: cfg.BashTimeout,
	}
	if w.timeout <= 0 {
		w.timeout = DefaultBashTimeout
	}
	for _, d := range []string{w.home, w.tmp, w.logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("tools: scratch folder: %w", err)
		}
	}
	gitconfig := filepath.Join(w.home, ".gitconfig")
	f, err := os.OpenFile(gitconfig, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tools: git config: %w", err)
	}
	f.Close()
	if w.bash, err = exec.LookPath("bash"); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	w.env = bashEnv(cfg, w.home, w.tmp, gitconfig, cache)

	rootFS, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("tools: workspace root: %w", err)
	}
	scratchFS, err := os.OpenRoot(scratch)
	if err != nil {
		rootFS.Close()
		return nil, fmt.Errorf("tools: scratch folder: %w", err)
	}
	w.repo = area{abs: root, aliases: rootAliases, fs: rootFS, isRepo: true}
	w.scratch = area{abs: scratch, aliases: scratchAliases, fs: scratchFS}
	w.sandbox = cfg.Sandbox
	if w.sandbox == nil {
		w.sandbox = sandbox.None()
	}
	w.mounts = []sandbox.Mount{
		{Path: root, Access: sandbox.ReadWrite},
		{Path: scratch, Access: sandbox.ReadOnly},
		{Path: w.home, Access: sandbox.ReadWrite},
		{Path: w.tmp, Access: sandbox.ReadWrite},
	}
	roots := []string{root, scratch}
	if cache != "" {
		w.mounts = append(w.mounts, sandbox.Mount{Path: cache, Access: sandbox.ReadWrite})
		roots = append(roots, cache)
	}
	w.extra = cfg.Mounts
	w.quota = newQuota(cfg.Quota, roots...)
	return w, nil
}

// Root is the workspace's absolute path, symlinks resolved.
func (w *Workspace) Root() string { return w.repo.abs }

// Scratch is the scratch folder's absolute path, symlinks resolved.
func (w *Workspace) Scratch() string { return w.scratch.abs }

// Home is bash's HOME, inside the scratch folder.
func (w *Workspace) Home() string { return w.home }

// Mounts is what bash is shown in its sandbox; other programs the session
// runs there (MCP servers) are shown the same.
func (w *Workspace) Mounts() []sandbox.Mount { return w.bashMounts() }

// Cache is the build and package cache folder's absolute path, symlinks
// resolved; "" when there is none.
func (w *Workspace) Cache() string { return w.cache }

// TmpDir is bash's TMPDIR, inside the scratch folder.
func (w *Workspace) TmpDir() string { return w.tmp }

// bashMounts is what bash is shown in its sandbox.
func (w *Workspace) bashMounts() []sandbox.Mount {
	if w.extra == nil {
		return w.mounts
	}
	return append(slices.Clip(w.mounts), w.extra()...)
}

// ReadOnly is a view of the workspace whose bash sees the worktree
// read-only (its home, temporary folder and cache stay writable): the
// workspace of runs that must not change the worktree. It shares w's open
// folders; close w, never the view. A sandbox that confines nothing
// (sandbox.None) ignores mounts, and bash may write all the same.
func (w *Workspace) ReadOnly() *Workspace {
	v := *w
	v.mounts = slices.Clone(w.mounts)
	for i, m := range v.mounts {
		if m.Path == w.repo.abs {
			v.mounts[i].Access = sandbox.ReadOnly
		}
	}
	return &v
}

// Sandbox is what bash runs in.
func (w *Workspace) Sandbox() *sandbox.Sandbox { return w.sandbox }

// BashTimeout is the longest a bash command may run.
func (w *Workspace) BashTimeout() time.Duration { return w.timeout }

// Close releases the workspace's open directories. Tools must not be called after.
func (w *Workspace) Close() error {
	w.quota.settle(context.Background())
	return errors.Join(w.repo.fs.Close(), w.scratch.fs.Close())
}

// canonicalDir returns dir as an absolute path with symlinks resolved, and the
// absolute spelling it was given when that differs.
func canonicalDir(dir string) (string, []string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	if !fi.IsDir() {
		return "", nil, fmt.Errorf("%s is not a directory", dir)
	}
	var aliases []string
	if abs != real {
		aliases = append(aliases, abs)
	}
	return real, aliases, nil
}

// within reports whether p is dir or inside it (both clean and absolute).
func within(dir, p string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
