package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// mirror is the shared bare repository of one configured Repo. Every thread's
// worktree hangs off it, so objects are stored and fetched once.
//
// Locks, always taken in this order: the thread's lock (Manager), initMu
// (creation), fetchMu (fetches: concurrent fetches of one repository only
// repeat work), admin. admin is held exclusively by operations that change
// the set of worktrees or delete objects (worktree add/remove/prune, gc) and
// shared by everything else that runs git in the mirror or a worktree and
// might enumerate worktrees (fetch, merge, rebase, commit, push): git 2.39
// fails such commands while another process is registering a worktree.
type mirror struct {
	repo Repo
	dir  string
	git  *gitRunner
	log  *slog.Logger
	// prefix is the configured branch_prefix (see migrate).
	prefix string

	initMu sync.Mutex
	ready  bool

	// opening is held shared by every Open of the repository's workspaces,
	// and exclusively by the janitor while it removes the repository's
	// cache folder (dropIdleCache): no thread starts using a cache being
	// removed.
	opening sync.RWMutex

	fetchMu sync.Mutex
	// fetchTicket counts fetches started; fetchDone is the ticket of the
	// last successful fetch. Both are guarded by fetchMu except that
	// fetchTicket is read without it through ticket().
	fetchTicket uint64
	fetchDone   uint64
	ticketMu    sync.Mutex

	admin sync.RWMutex
}

func newMirror(dataDir string, repo Repo, g *gitRunner, log *slog.Logger) *mirror {
	dir := filepath.Join(dataDir, "mirrors", repo.Name+".git")
	g.mirrorDir = dir
	g.storesDir = filepath.Join(dataDir, "threads", repo.Name)
	return &mirror{
		repo: repo,
		dir:  dir,
		git:  g,
		log:  log.With("repo", repo.Name),
	}
}

// fetchRefSpec maps the remote's branches to remote-tracking refs.
const fetchRefSpec = "+refs/heads/*:refs/remotes/origin/*"

// call is a git command on the mirror itself.
func (m *mirror) call(args ...string) gitCall { return m.callIn(m.dir, args...) }

// callIn is a git command on the bare repository dir: the mirror, or the
// temporary folder it is built in.
func (m *mirror) callIn(dir string, args ...string) gitCall {
	return gitCall{dir: dir, gitDir: dir, commonDir: dir, args: args}
}

// ensure creates the mirror on first use: a bare repository with a fetch
// refspec into refs/remotes/origin/*, fetched once. It is built in a
// temporary folder and renamed into place, so a crash never leaves a
// half-made mirror behind. The first ensure of a process also works out the
// mirror's config (see enforceConfig) and puts it in place.
func (m *mirror) ensure(ctx context.Context) error {
	m.initMu.Lock()
	defer m.initMu.Unlock()
	if m.ready {
		return nil
	}
	if m.git.config.Load() == nil {
		cfg, err := m.canonicalConfig(ctx)
		if err != nil {
			return err
		}
		m.git.config.Store(&cfg)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "HEAD")); err == nil {
		// The config (remote URL included) follows the configuration; the
		// next git call restores it, do it now to say so once.
		if err := m.git.enforceConfig(m.dir); err != nil {
			return err
		}
		if err := m.guardPushes(m.dir); err != nil {
			return err
		}
		if err := m.migrate(ctx, m.prefix); err != nil {
			return err
		}
		m.ready = true
		return nil
	}

	if err := os.MkdirAll(filepath.Dir(m.dir), 0o755); err != nil {
		return newError(CodeInternal, "", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(m.dir), "."+m.repo.Name+".tmp-")
	if err != nil {
		return newError(CodeInternal, "", err)
	}
	defer os.RemoveAll(tmp)
	if err := m.initBare(ctx, tmp, "--initial-branch="+m.repo.DefaultBranch); err != nil {
		return err
	}
	if err := markLayout(tmp); err != nil {
		return err
	}
	if err := m.fetchIn(ctx, tmp); err != nil {
		return err
	}
	if err := m.checkDefaultBranch(ctx, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, m.dir); err != nil {
		return newError(CodeInternal, "", err)
	}
	m.log.Info("mirror created", "dir", m.dir)
	m.ready = true
	return nil
}

// canonicalConfig returns what the mirror's config file must hold: what
// `git init --bare` writes on this machine and file system, plus the remote
// (URL from the configuration, the fetch refspec, and a dead-end pushurl).
// It is worked out in a scratch repository next to the mirror, never read
// from the mirror, whose config anyone with a worktree can change.
func (m *mirror) canonicalConfig(ctx context.Context) ([]byte, error) {
	parent := filepath.Dir(m.dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+m.repo.Name+".config-")
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	defer os.RemoveAll(tmp)
	calls := []gitCall{
		{dir: parent, args: []string{"init", "--quiet", "--bare", "--template=", tmp}},
		m.callIn(tmp, "config", "remote.origin.url", m.repo.URL),
		m.callIn(tmp, "config", "remote.origin.fetch", fetchRefSpec),
		m.callIn(tmp, "config", "remote.origin.pushurl", pushBlockedURL),
	}
	for _, c := range calls {
		if _, err := m.git.run(ctx, c); err != nil {
			return nil, newError(CodeInternal, "", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(tmp, "config"))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	return b, nil
}

// pushBlockedURL is the mirror's remote.origin.pushurl: a `git push` run by
// anyone but the bot (the agent's bash, say) fails with this in its message.
const pushBlockedURL = "/threadsmith/pushes-go-through-the-bot"

// prePushHook refuses every push made with the git CLI from the mirror or a
// worktree. The bot's own push passes --no-verify, and all its git calls pin
// core.hooksPath to nothing, so the hook never stops the bot.
const prePushHook = `#!/bin/sh
echo "threadsmith: pushes go through the bot, only to the thread's branch" >&2
exit 1
`

// initBare makes dir a bare repository (git init with the extra flags)
// with the mirror's config and push guard.
func (m *mirror) initBare(ctx context.Context, dir string, flags ...string) error {
	args := append(append([]string{"init", "--quiet", "--bare"}, flags...), dir)
	if _, err := m.git.run(ctx, gitCall{dir: filepath.Dir(dir), args: args}); err != nil {
		return newError(CodeInternal, "", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "config"), *m.git.config.Load(), 0o644); err != nil {
		return newError(CodeInternal, "", err)
	}
	return m.guardPushes(dir)
}

// guardPushes makes the git CLI unable to push from the mirror and its
// worktrees (with the dead-end pushurl of the canonical config), so only
// Workspace.Push (which checks the branch) reaches the remote: defence in
// depth for docs/behaviour.md §7, as the agent's tools can run git.
func (m *mirror) guardPushes(dir string) error {
	hooks := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		return newError(CodeInternal, "", err)
	}
	if err := writeFileAtomic(filepath.Join(hooks, "pre-push"), []byte(prePushHook), 0o755); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}

// ticket returns a number that a later fetch must exceed to be fresh for
// the caller.
func (m *mirror) ticket() uint64 {
	m.ticketMu.Lock()
	defer m.ticketMu.Unlock()
	return m.fetchTicket
}

// fetch brings the mirror's remote-tracking branches up to date. Concurrent
// callers share work: a caller that waited while a fetch which started
// after its own call ran to success does not fetch again.
func (m *mirror) fetch(ctx context.Context) error {
	since := m.ticket()
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	if m.fetchDone > since {
		return nil
	}
	m.ticketMu.Lock()
	m.fetchTicket++
	t := m.fetchTicket
	m.ticketMu.Unlock()
	m.admin.RLock()
	err := m.fetchIn(ctx, m.dir)
	m.admin.RUnlock()
	if err != nil {
		return err
	}
	m.fetchDone = t
	return nil
}

// fetchIn fetches into the bare repository dir from the configured URL,
// named on the command line: remote.origin.* in the mirror's config is
// never what decides where the bot connects.
func (m *mirror) fetchIn(ctx context.Context, dir string) error {
	c := m.callIn(dir, "fetch", "--quiet", "--prune", "--no-write-fetch-head", "--no-show-forced-updates",
		"--recurse-submodules=no", m.repo.URL, fetchRefSpec)
	c.network = true
	_, err := m.git.run(ctx, c)
	if err != nil {
		return remoteError(m.repo.Name, "fetch", m.git.timeout, err)
	}
	return nil
}

// checkDefaultBranch fails with a clear message when the remote has no
// branch of the configured default name.
func (m *mirror) checkDefaultBranch(ctx context.Context, dir string) error {
	if _, err := m.git.out(ctx, m.callIn(dir, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+m.repo.DefaultBranch+"^{commit}")); err == nil {
		return nil
	}
	out, _ := m.git.out(ctx, m.callIn(dir, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin/"))
	var branches []string
	for _, b := range strings.Split(out, "\n") {
		if b != "" && b != "HEAD" {
			branches = append(branches, b)
		}
	}
	sort.Strings(branches)
	msg := fmt.Sprintf("Repository %q has no branch %q (its default_branch setting)", m.repo.Name, m.repo.DefaultBranch)
	switch {
	case len(branches) == 0:
		msg = fmt.Sprintf("Repository %q has no commit yet: make a first commit on %q (git commit) and push it there, then try again.", m.repo.Name, m.repo.DefaultBranch)
	case len(branches) <= 10:
		msg += "; its branches are: " + strings.Join(branches, ", ") + "."
	default:
		msg += fmt.Sprintf("; it has %d other branches, e.g. %s.", len(branches), strings.Join(branches[:10], ", "))
	}
	return newError(CodeNoDefaultBranch, msg, nil)
}

// refs resolves the given full ref names in one git call; missing refs are
// absent from the result.
func (m *mirror) refs(ctx context.Context, names ...string) (map[string]string, error) {
	args := append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, names...)
	out, err := m.git.out(ctx, m.call(args...))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		sha, name, ok := strings.Cut(line, " ")
		if ok && want[name] {
			got[name] = sha
		}
	}
	return got, nil
}

// isAncestor reports whether commit a is an ancestor of (or equal to) b.
func (m *mirror) isAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := m.git.run(ctx, m.call("merge-base", "--is-ancestor", a, b))
	if err == nil {
		return true, nil
	}
	if exitStatus(err) == 1 {
		return false, nil
	}
	return false, newError(CodeInternal, "", err)
}

// gc runs `git gc --auto` on the mirror. It never prunes: the threads'
// repositories borrow the mirror's objects (see store), and a commit the
// remote dropped (a force push, a deleted branch) may still be the base of
// a thread's branch.
func (m *mirror) gc(ctx context.Context) error {
	m.admin.Lock()
	defer m.admin.Unlock()
	c := m.call("gc", "--auto", "--quiet")
	c.gc = true
	_, err := m.git.run(ctx, c)
	return err
}
