package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Manager hands out workspaces. It is safe for concurrent use.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	mirrors map[string]*mirror
	names   []string // configured repository names, sorted

	mu      sync.Mutex
	closed  bool
	open    map[string]*Workspace // by repo + "/" + thread id
	threads map[string]*threadLock

	ops         sync.WaitGroup // public operations in flight
	stopJanitor context.CancelFunc
	janitorDone chan struct{}
}

// syncTimeout bounds the best-effort fetch when an existing workspace is
// opened.
const syncTimeout = 15 * time.Second

type threadLock struct {
	mu   sync.Mutex
	refs int
}

// New validates cfg, creates DataDir and starts the background janitor
// (unless cfg.CleanupInterval is negative). Mirrors are created lazily, on
// the first Open of their repository. Call Close to stop the janitor.
func New(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("workspace: data_dir: %w", err)
	}
	m := &Manager{
		cfg:     cfg,
		log:     cfg.Logger,
		mirrors: map[string]*mirror{},
		open:    map[string]*Workspace{},
		threads: map[string]*threadLock{},
	}
	for _, r := range cfg.Repos {
		g := &gitRunner{author: cfg.Author, timeout: cfg.GitTimeout, repo: r, redact: redactor{r.Token}, log: m.log.With("repo", r.Name)}
		m.mirrors[r.Name] = newMirror(cfg.DataDir, r, g, m.log)
		m.mirrors[r.Name].prefix = cfg.BranchPrefix
		m.names = append(m.names, r.Name)
	}
	sort.Strings(m.names)
	if cfg.CleanupInterval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		m.stopJanitor = cancel
		m.janitorDone = make(chan struct{})
		go m.janitor(ctx)
	}
	return m, nil
}

// Repos returns the configured repository names, sorted.
func (m *Manager) Repos() []string { return append([]string(nil), m.names...) }

// BranchFor returns the branch a thread's workspace uses (without creating
// anything), so callers can announce it before Open finishes.
func (m *Manager) BranchFor(key ThreadKey) string { return BranchName(m.cfg.BranchPrefix, key) }

// Close stops the janitor and waits for it and for operations in flight,
// or until ctx is done. Later calls fail with ErrClosed. Workspaces and
// mirrors stay on disk for the next start.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	if m.stopJanitor != nil {
		m.stopJanitor()
	}
	done := make(chan struct{})
	go func() {
		if m.janitorDone != nil {
			<-m.janitorDone
		}
		m.ops.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// begin registers a public operation so that Close can wait for it.
func (m *Manager) begin() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return newError(CodeClosed, "The workspace manager is shutting down.", nil)
	}
	m.ops.Add(1)
	return nil
}

func (m *Manager) mirror(name string) (*mirror, error) {
	mr, ok := m.mirrors[name]
	if !ok {
		return nil, newError(CodeUnknownRepo,
			fmt.Sprintf("Unknown repository %q. Known repositories: %s.", name, strings.Join(m.names, ", ")), nil)
	}
	return mr, nil
}

// lockThread serialises everything that changes one thread's workspace.
func (m *Manager) lockThread(key string) func() {
	m.mu.Lock()
	l := m.threads[key]
	if l == nil {
		l = &threadLock{}
		m.threads[key] = l
	}
	l.refs++
	m.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		m.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(m.threads, key)
		}
		m.mu.Unlock()
	}
}

// Open returns the workspace of a thread on repository repoName, creating it
// on first use: a linked worktree of the thread's own repository (see
// ensureStore) on the thread's branch. If that branch exists on the remote
// it is checked out (never reset); otherwise it starts from origin/<default_branch>. A workspace whose
// folder vanished is recreated from its branch. Opening an existing
// workspace runs Sync (commits others pushed to the branch are brought in);
// if the remote cannot be reached then (within 15 s), the workspace is still
// returned and the problem logged.
//
// Every successful Open must be paired with Close when the caller's run
// ends; a workspace is only cleaned up while no one holds it open.
func (m *Manager) Open(ctx context.Context, repoName string, key ThreadKey) (*Workspace, error) {
	if err := m.begin(); err != nil {
		return nil, err
	}
	defer m.ops.Done()
	mr, err := m.mirror(repoName)
	if err != nil {
		return nil, err
	}
	mr.opening.RLock()
	defer mr.opening.RUnlock()
	if key.Platform == "" || key.Key == "" {
		return nil, newError(CodeInvalid, "A workspace needs a thread (platform and key).", nil)
	}
	id := threadID(key)
	wkey := repoName + "/" + id
	unlock := m.lockThread(wkey)
	defer unlock()

	if err := mr.ensure(ctx); err != nil {
		return nil, err
	}
	w := m.newWorkspace(mr, key, id)
	log := m.log.With("repo", repoName, "branch", w.branch, "thread", key.String())
	if err := w.ensureStore(ctx); err != nil {
		return nil, err
	}

	admin, rootOK := w.locate()
	switch {
	case admin != "" && rootOK:
		w.setAdmin(admin)
	case rootOK:
		// The folder is here but its repository has no registration for it
		// (someone deleted it): register it again around the files, so
		// that uncommitted work survives.
		log.Warn("workspace folder has no registration in its repository; registering it again", "dir", w.root)
		if err := m.adopt(ctx, w); err != nil {
			return nil, err
		}
	default:
		if err := m.create(ctx, w, log); err != nil {
			return nil, err
		}
	}
	if fixed, err := repairDotGit(w.root, w.GitDir()); err != nil {
		log.Warn("could not repair the workspace's .git file", "err", err)
	} else if fixed {
		log.Warn("the workspace's .git file was changed or removed; restored it")
	}
	if rootOK {
		// Best effort: an unreachable remote must not hold up the run for
		// the full GitTimeout when the workspace is already here.
		sctx, cancel := context.WithTimeout(ctx, min(m.cfg.GitTimeout, syncTimeout))
		err := w.fetch(sctx)
		cancel()
		if err != nil {
			log.Warn("fetch before reusing workspace failed; working offline", "err", err)
		} else if _, err := w.integrateRemote(ctx); err != nil {
			log.Warn("could not bring in remote commits", "err", err)
		}
	}
	if err := os.MkdirAll(w.scratch, 0o755); err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	if w.cache != "" {
		if err := os.MkdirAll(w.cache, 0o700); err != nil {
			return nil, newError(CodeInternal, "", err)
		}
	}

	m.mu.Lock()
	if cur := m.open[wkey]; cur != nil && !cur.removed {
		// The registration may have been made again just now.
		cur.setAdmin(w.GitDir())
		w = cur
	} else {
		m.open[wkey] = w
	}
	w.refs++
	m.mu.Unlock()
	if err := m.touch(w); err != nil {
		log.Warn("could not record workspace use", "err", err)
	}
	return w, nil
}

// create makes the worktree of w. Called with the thread lock held.
func (m *Manager) create(ctx context.Context, w *Workspace, log *slog.Logger) error {
	mr, st := w.mirror, w.store
	fetchErr := w.fetch(ctx)

	local := "refs/heads/" + w.branch
	remote := "refs/remotes/origin/" + w.branch
	def := "refs/remotes/origin/" + mr.repo.DefaultBranch
	refs, err := st.refs(ctx, local, remote, def)
	if err != nil {
		return err
	}
	if fetchErr != nil {
		// Without a fresh fetch we could start a branch that already exists
		// on the remote; only go on when the branch is known locally.
		if refs[local] == "" {
			return fetchErr
		}
		log.Warn("fetch failed; recreating workspace from the local branch", "err", fetchErr)
	}

	// Something without work in it is in the way: a symlink, a file, a
	// folder holding nothing but .git.
	if _, err := os.Lstat(w.root); err == nil {
		log.Warn("removing what is in the way of the workspace folder", "dir", w.root)
		if err := os.RemoveAll(w.root); err != nil {
			return newError(CodeInternal, "", err)
		}
	}

	var args []string
	switch {
	case refs[local] != "":
		args = []string{"worktree", "add", "--quiet", w.staging(), w.branch}
	case refs[remote] != "":
		args = []string{"worktree", "add", "--quiet", "--no-track", "-b", w.branch, w.staging(), remote}
	case refs[def] != "":
		args = []string{"worktree", "add", "--quiet", "--no-track", "-b", w.branch, w.staging(), def}
	default:
		return mr.checkDefaultBranch(ctx, mr.dir)
	}
	// Exclusive: while git registers a worktree, other git commands that
	// enumerate worktrees (another worktree add, fetch, rebase, gc) fail
	// with "failed to read worktrees/<name>/commondir".
	mr.admin.Lock()
	admin, err := m.checkout(ctx, w, args)
	mr.admin.Unlock()
	if err != nil {
		return newError(CodeInternal, "", err)
	}
	w.setAdmin(admin)
	if refs[local] == "" && refs[remote] != "" {
		// The remote's commits are published: never replay them.
		if err := m.updateMeta(w, func(md *meta) { md.LastPushed = refs[remote] }); err != nil {
			return newError(CodeInternal, "", err)
		}
	}
	if refs[local] != "" && fetchErr == nil {
		if _, err := w.integrateRemote(ctx); err != nil {
			log.Warn("could not bring in remote commits", "err", err)
		}
	}
	switch {
	case refs[local] != "":
		log.Info("workspace recreated from local branch")
	case refs[remote] != "":
		log.Info("workspace created from existing remote branch")
	default:
		log.Info("workspace created", "from", mr.repo.DefaultBranch)
	}
	return nil
}

// staging is where a new worktree is checked out before it is moved to
// Root: a crash during the checkout leaves a half-made folder there, never
// at Root, where a folder without a registration is taken for the agent's
// work and kept (see adopt). Its base name is the thread's id, which git
// names the admin dir after.
func (w *Workspace) staging() string {
	return filepath.Join(filepath.Dir(w.root), ".new", w.id)
}

// checkout runs `git worktree add` (args) into w's staging folder, then
// moves the folder to Root and points the new admin dir at it. It returns
// the admin dir. Callers hold mr.admin exclusively.
func (m *Manager) checkout(ctx context.Context, w *Workspace, args []string) (string, error) {
	st, staging := w.store, w.staging()
	if err := os.RemoveAll(staging); err != nil {
		return "", err
	}
	// Registrations whose folders are gone (this thread's earlier one,
	// say) keep git from checking their branch out again.
	if err := st.pruneStale(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(staging), 0o755); err != nil {
		return "", err
	}
	if _, err := st.git.run(ctx, st.call(args...)); err != nil {
		return "", err
	}
	admins := st.adminsFor(staging, w.id)
	if len(admins) != 1 {
		return "", fmt.Errorf("git worktree add made %d registrations for %s, want 1", len(admins), staging)
	}
	admin := admins[0]
	// Point the registration at Root before the folder gets there: a crash
	// in between leaves a registration whose folder is missing, pruned on
	// the next try.
	if err := writeFileAtomic(filepath.Join(admin, "gitdir"), []byte(filepath.Join(w.root, ".git")+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(admin, "locked"), []byte(lockReason), 0o644); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(w.root), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(staging, w.root); err != nil {
		return "", err
	}
	return admin, nil
}

// adopt registers the existing folder Root again, on the thread's branch,
// keeping every file in it: the index is rebuilt from the branch's last
// commit, so what the folder holds beyond it shows as uncommitted changes.
// Called with the thread lock held, when the repository has no usable
// registration for Root.
func (m *Manager) adopt(ctx context.Context, w *Workspace) error {
	mr := w.mirror
	local := "refs/heads/" + w.branch
	refs, err := w.store.refs(ctx, local, "refs/remotes/origin/"+w.branch, "refs/remotes/origin/"+mr.repo.DefaultBranch)
	if err != nil {
		return err
	}
	mr.admin.Lock()
	admin, err := m.register(ctx, w, refs)
	mr.admin.Unlock()
	if err != nil {
		return err
	}
	w.setAdmin(admin)
	if _, err := repairDotGit(w.root, admin); err != nil {
		return newError(CodeInternal, "", err)
	}
	// Mixed reset: the index becomes the branch's commit, the files stay.
	if _, err := w.git.run(ctx, w.call("reset", "--quiet")); err != nil {
		return newError(CodeInternal, "", err)
	}
	m.log.Info("workspace folder registered again; its files were kept", "repo", mr.repo.Name, "branch", w.branch)
	return nil
}

// register is adopt's part under mr.admin.
func (m *Manager) register(ctx context.Context, w *Workspace, refs map[string]string) (string, error) {
	mr, st := w.mirror, w.store
	// Unusable registrations naming Root are in the way.
	for _, a := range st.adminsFor(w.root, w.id) {
		if err := os.RemoveAll(a); err != nil {
			return "", newError(CodeInternal, "", err)
		}
	}
	if err := st.pruneStale(); err != nil {
		return "", err
	}
	if refs["refs/heads/"+w.branch] == "" {
		start := refs["refs/remotes/origin/"+w.branch]
		if start == "" {
			start = refs["refs/remotes/origin/"+mr.repo.DefaultBranch]
		}
		if start == "" {
			return "", mr.checkDefaultBranch(ctx, mr.dir)
		}
		if _, err := st.git.run(ctx, st.call("branch", "--no-track", w.branch, start)); err != nil {
			return "", newError(CodeInternal, "", err)
		}
	}
	admin, err := st.register(w.root, w.id, w.branch)
	if err != nil {
		return "", newError(CodeInternal, "", err)
	}
	return admin, nil
}

// ThreadDirs are the worktree and scratch folders of key's workspace of
// repoName, where Open puts them, whether or not it was opened yet: the
// bridge keeps files that come with a message in the scratch folder before
// the thread has a workspace, under the thread's quota like everything
// there.
func (m *Manager) ThreadDirs(repoName string, key ThreadKey) (root, scratch string) {
	id := threadID(key)
	return filepath.Join(m.cfg.DataDir, "workspaces", repoName, id), filepath.Join(m.cfg.DataDir, "scratch", repoName, id)
}

// cacheDir is repoName's cache folder, "" when caches are off.
func (m *Manager) cacheDir(repoName string) string {
	if m.cfg.NoCaches {
		return ""
	}
	return filepath.Join(m.cfg.DataDir, "caches", repoName)
}

func (m *Manager) newWorkspace(mr *mirror, key ThreadKey, id string) *Workspace {
	root, scratch := m.ThreadDirs(mr.repo.Name, key)
	return &Workspace{
		m:       m,
		mirror:  mr,
		store:   m.storeFor(mr, id),
		key:     key,
		id:      id,
		branch:  m.cfg.BranchPrefix + id,
		root:    root,
		scratch: scratch,
		cache:   m.cacheDir(mr.repo.Name),
		meta:    filepath.Join(m.cfg.DataDir, "meta", mr.repo.Name, id+".json"),
		git:     mr.git,
	}
}

// meta is what is remembered about a thread's workspace across restarts.
type meta struct {
	Platform string    `json:"platform"`
	Key      string    `json:"key"`
	Branch   string    `json:"branch"`
	LastUsed time.Time `json:"last_used"`
	// LastPushed is the last commit the bot pushed (or found on the remote
	// when the workspace was made from the remote branch): commits after it
	// are the unpushed ones, the only ones ever replayed onto the remote.
	LastPushed string `json:"last_pushed,omitempty"`
	// ReviewSeen are the keys of the pull request's comments already given
	// to the model (see Workspace.ReviewSeen).
	ReviewSeen []string `json:"review_seen,omitempty"`
}

// updateMeta changes w's record with f. Callers hold the thread lock.
func (m *Manager) updateMeta(w *Workspace, f func(*meta)) error {
	md, err := readMeta(w.meta)
	if err != nil && !os.IsNotExist(err) {
		m.log.Warn("unreadable workspace record; starting a new one", "err", err)
	}
	md.Platform, md.Key, md.Branch = w.key.Platform, w.key.Key, w.branch
	f(&md)
	b, err := json.Marshal(md)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(w.meta), 0o755); err != nil {
		return err
	}
	tmp := w.meta + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, w.meta)
}

// touch records now as w's last use. Callers hold the thread lock.
func (m *Manager) touch(w *Workspace) error {
	now := m.cfg.Now()
	return m.updateMeta(w, func(md *meta) { md.LastUsed = now })
}

func readMeta(path string) (meta, error) {
	var md meta
	b, err := os.ReadFile(path)
	if err != nil {
		return md, err
	}
	if err := json.Unmarshal(b, &md); err != nil {
		return md, fmt.Errorf("%s: %w", path, err)
	}
	return md, nil
}

// janitor runs Cleanup every CleanupInterval until ctx is done.
func (m *Manager) janitor(ctx context.Context) {
	defer close(m.janitorDone)
	t := time.NewTicker(m.cfg.CleanupInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := m.cleanup(ctx); err != nil && !errors.Is(err, context.Canceled) {
				m.log.Warn("workspace cleanup failed", "err", err)
			}
		}
	}
}

// Cleanup removes the folders of workspaces that are not open and were last
// used more than IdleTTL ago (uncommitted changes are first committed
// locally, so nothing is lost; branches stay), removes the cache folders no
// workspace uses (dropIdleCache, dropStrayCaches), and runs `git gc --auto`
// in every thread's repository and every mirror. It returns the branches
// whose workspaces were removed. The janitor calls it every CleanupInterval.
func (m *Manager) Cleanup(ctx context.Context) ([]string, error) {
	if err := m.begin(); err != nil {
		return nil, err
	}
	defer m.ops.Done()
	return m.cleanup(ctx)
}

func (m *Manager) cleanup(ctx context.Context) ([]string, error) {
	var removed []string
	var errs []error
	cutoff := m.cfg.Now().Add(-m.cfg.IdleTTL)
	for _, name := range m.names {
		mr := m.mirrors[name]
		if _, err := os.Stat(filepath.Join(mr.dir, "HEAD")); err != nil {
			continue // never created: no workspaces, nothing to collect
		}
		// Establishes the mirror's config before the first git call on it.
		if err := mr.ensure(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		paths, _ := filepath.Glob(filepath.Join(m.cfg.DataDir, "meta", name, "*.json"))
		for _, p := range paths {
			if ctx.Err() != nil {
				return removed, ctx.Err()
			}
			md, err := readMeta(p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			key := ThreadKey{Platform: md.Platform, Key: md.Key}
			if err := m.gcStore(ctx, mr, key); err != nil {
				errs = append(errs, err)
			}
			if md.LastUsed.After(cutoff) {
				continue
			}
			ok, err := m.removeIdle(ctx, mr, key, cutoff)
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				removed = append(removed, md.Branch)
			}
		}
		if err := m.dropIdleCache(name, mr); err != nil {
			errs = append(errs, err)
		}
		if err := mr.gc(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := m.dropStrayCaches(); err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// dropIdleCache removes the repository's cache folder once it has no
// workspace on disk (each was idle longer than IdleTTL, or its thread was
// forgotten) and none is being opened: the cache goes with the repository's
// last workspace, and the next thread starts it anew.
func (m *Manager) dropIdleCache(name string, mr *mirror) error {
	dir := m.cacheDir(name)
	if dir == "" {
		return nil
	}
	mr.opening.Lock()
	defer mr.opening.Unlock()
	entries, err := os.ReadDir(filepath.Join(m.cfg.DataDir, "workspaces", name))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, e := range entries {
		if e.Name() != ".new" {
			return nil // a workspace of the repository is still here
		}
	}
	m.mu.Lock()
	for k, w := range m.open {
		if strings.HasPrefix(k, name+"/") && w.refs > 0 {
			m.mu.Unlock()
			return nil
		}
	}
	m.mu.Unlock()
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return nil
	}
	m.log.Info("removing the cache of a repository with no workspace left", "repo", name)
	return os.RemoveAll(dir)
}

// dropStrayCaches removes the cache folders no configured repository uses:
// those of repositories no longer configured, and every one with caches
// off. No thread can open them.
func (m *Manager) dropStrayCaches() error {
	root := filepath.Join(m.cfg.DataDir, "caches")
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if !m.cfg.NoCaches && slices.Contains(m.names, e.Name()) {
			continue
		}
		m.log.Info("removing a cache no configured repository uses", "dir", e.Name())
		errs = append(errs, os.RemoveAll(filepath.Join(root, e.Name())))
	}
	return errors.Join(errs...)
}

// gcStore runs `git gc --auto` in a thread's repository, under its thread
// lock: its loose objects (the bot's commits) are packed, its own only (git
// gc packs with --local: the mirror's objects stay borrowed), and nothing is
// pruned.
func (m *Manager) gcStore(ctx context.Context, mr *mirror, key ThreadKey) error {
	st := m.storeFor(mr, threadID(key))
	unlock := m.lockThread(mr.repo.Name + "/" + threadID(key))
	defer unlock()
	if _, err := os.Lstat(filepath.Join(st.dir, "HEAD")); err != nil {
		return nil
	}
	c := st.call("gc", "--auto", "--quiet")
	c.gc = true
	if _, err := st.git.run(ctx, c); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}

// removeIdle removes one workspace if it is still idle once its thread lock
// is held (an Open may have raced the scan).
func (m *Manager) removeIdle(ctx context.Context, mr *mirror, key ThreadKey, cutoff time.Time) (bool, error) {
	w := m.newWorkspace(mr, key, threadID(key))
	wkey := mr.repo.Name + "/" + w.id
	unlock := m.lockThread(wkey)
	defer unlock()
	m.mu.Lock()
	if cur := m.open[wkey]; cur != nil {
		if cur.refs > 0 {
			m.mu.Unlock()
			return false, nil
		}
		w = cur // so that its holders learn it was removed
	}
	m.mu.Unlock()
	if md, err := readMeta(w.meta); err != nil || md.LastUsed.After(cutoff) {
		return false, err
	}
	if _, rootOK := w.locate(); !rootOK {
		return false, nil
	}
	if err := w.remove(ctx, "removed after being idle"); err != nil {
		return false, err
	}
	m.log.Info("idle workspace removed", "repo", mr.repo.Name, "branch", w.branch)
	return true, nil
}
