package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A thread's repository (its store), threads/<repo>/<id>.git, is a bare
// repository of its own that the thread's worktree hangs off: the thread's
// branch, the objects of the commits the bot makes there, and the
// worktree's admin dir (GitDir). It borrows the remote's objects from the
// mirror (its objects/info/alternates names the mirror's object store) and
// takes a copy of the mirror's remote-tracking refs after every fetch.
//
// So what a thread sees (its sandbox shows the store and the mirror's
// objects, read-only) is the remote as the bot last fetched it plus its own
// work, and nothing of other threads: their branches and unpushed commits (a
// push the remote refused, the WIP commit of a removed workspace) live in
// their own stores. The mirror holds only what was fetched from the remote
// and the commits the bot pushed there; its gc never prunes, because the
// stores borrow its objects.
//
// The store's config file is the mirror's and its alternates file the
// bot's, both put back before every git call if changed (enforceConfig,
// enforceAlternates); its hooks are the mirror's push guard.

// storeFor returns the store of thread id of mr's repository; it may not
// exist yet (see ensureStore). It is a mirror value for the helpers they
// share (call, refs, worktree registrations); fetch and ensure are the
// mirror's only.
func (m *Manager) storeFor(mr *mirror, id string) *mirror {
	return &mirror{
		repo: mr.repo,
		dir:  filepath.Join(mr.git.storesDir, id+".git"),
		git:  mr.git,
		log:  mr.log,
	}
}

// alternates is what a store's objects/info/alternates holds.
func (m *mirror) alternates() string { return filepath.Join(m.dir, "objects") + "\n" }

// ensureStore creates w's store on first use (see makeStore). Called with
// the thread lock held, after the mirror's ensure.
func (w *Workspace) ensureStore(ctx context.Context) error {
	st, mr := w.store, w.mirror
	if _, err := os.Lstat(filepath.Join(st.dir, "HEAD")); err == nil {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(st.dir, "objects")); err == nil && fi.IsDir() {
		// A store whose HEAD someone deleted: its branch and commits are
		// still there. (The store's HEAD names no branch anyone uses.)
		if err := writeFileAtomic(filepath.Join(st.dir, "HEAD"), []byte("ref: refs/heads/"+mr.repo.DefaultBranch+"\n"), 0o644); err != nil {
			return newError(CodeInternal, "", err)
		}
		return nil
	}
	// Not a store the bot made (they appear whole, by a rename).
	if err := os.RemoveAll(st.dir); err != nil {
		return newError(CodeInternal, "", err)
	}
	return mr.makeStore(ctx, st.dir, "", "")
}

// makeStore creates the store dir in a temporary folder renamed into place:
// the mirror's config and push guard, the mirror's objects as its
// alternate, its remote-tracking refs copied from the mirror, and, when
// branch is set, that branch at sha with the objects only it reaches copied
// from the mirror (see migrate).
func (m *mirror) makeStore(ctx context.Context, dir, branch, sha string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return newError(CodeInternal, "", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return newError(CodeInternal, "", err)
	}
	defer os.RemoveAll(tmp)
	if err := m.initBare(ctx, tmp, "--template="); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(tmp, "objects", "info"), 0o755); err != nil {
		return newError(CodeInternal, "", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "objects", "info", "alternates"), []byte(m.alternates()), 0o644); err != nil {
		return newError(CodeInternal, "", err)
	}
	// Git calls on the temporary folder skip enforceConfig (it is not
	// where the stores are); the bot just wrote it.
	staged := &mirror{repo: m.repo, dir: tmp, git: m.git, log: m.log}
	if err := syncRemoteRefs(ctx, m, staged); err != nil {
		return err
	}
	// One packed-refs file rather than a file per branch of the remote.
	if _, err := m.git.run(ctx, staged.call("pack-refs", "--all", "--prune")); err != nil {
		return newError(CodeInternal, "", err)
	}
	if branch != "" {
		if err := m.copyOwnObjects(ctx, sha, tmp); err != nil {
			return err
		}
		if _, err := m.git.run(ctx, staged.call("update-ref", "refs/heads/"+branch, sha, "")); err != nil {
			return newError(CodeInternal, "", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}

// copyOwnObjects packs the objects reachable from sha but from none of the
// mirror's remote-tracking refs into the object store of repository dir.
func (m *mirror) copyOwnObjects(ctx context.Context, sha, dir string) error {
	list, err := m.git.run(ctx, m.call("rev-list", "--objects", sha, "--not", "--remotes=origin"))
	if err != nil {
		return newError(CodeInternal, "", err)
	}
	if strings.TrimSpace(list) == "" {
		return nil
	}
	pack := m.call("pack-objects", "--quiet", filepath.Join(dir, "objects", "pack", "pack"))
	pack.stdin = []byte(list)
	if err := os.MkdirAll(filepath.Join(dir, "objects", "pack"), 0o755); err != nil {
		return newError(CodeInternal, "", err)
	}
	if _, err := m.git.run(ctx, pack); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}

// migrate turns a mirror of the layout where every thread's branch and
// worktree registration were the mirror's own into one that holds only what
// the remote has. Each branch under branch_prefix becomes its thread's store
// (with the objects only it reaches), the registrations go (the next Open
// registers each worktree folder again around its files, see adopt), and
// the objects no remote-tracking ref reaches are deleted. A branch outside
// branch_prefix (a changed prefix, say) stays, and then so do the objects.
// Each step can be repeated: a crash half way is finished on the next
// start. Called from ensure, before anything else uses the mirror.
func (m *mirror) migrate(ctx context.Context, prefix string) error {
	if _, err := os.Lstat(filepath.Join(m.dir, layoutMarker)); err == nil {
		return nil
	}
	heads, err := m.listRefs(ctx, "refs/heads/")
	if err != nil {
		return err
	}
	m.log.Info("moving the threads' branches out of the mirror into their own repositories", "branches", len(heads))
	if err := os.RemoveAll(m.worktreesDir()); err != nil {
		return newError(CodeInternal, "", err)
	}
	kept := 0
	names := make([]string, 0, len(heads))
	for ref := range heads {
		names = append(names, ref)
	}
	sort.Strings(names)
	for _, ref := range names {
		sha, branch := heads[ref], strings.TrimPrefix(ref, "refs/heads/")
		id, ok := strings.CutPrefix(branch, prefix)
		if !ok || id == "" || strings.ContainsAny(id, "/\\") || strings.HasPrefix(id, ".") {
			m.log.Warn("a branch of the mirror outside branch_prefix is left there", "branch", branch)
			kept++
			continue
		}
		dir := filepath.Join(m.git.storesDir, id+".git")
		if _, err := os.Lstat(dir); err == nil {
			m.log.Warn("the thread already has a repository; its branch in the mirror is dropped", "branch", branch)
		} else if err := m.makeStore(ctx, dir, branch, sha); err != nil {
			return err
		}
		if _, err := m.git.run(ctx, m.call("update-ref", "-d", ref, sha)); err != nil {
			return newError(CodeInternal, "", err)
		}
	}
	if kept > 0 {
		return nil
	}
	for _, args := range [][]string{{"repack", "-a", "-d", "-q"}, {"prune", "--expire=now"}} {
		if _, err := m.git.run(ctx, m.call(args...)); err != nil {
			return newError(CodeInternal, "", err)
		}
	}
	return markLayout(m.dir)
}

// layoutMarker is the file in a mirror that says it holds the remote's refs
// and objects only: made so, or migrated (see migrate). A mirror without it
// is migrated at the next start, a migration cut off half way included.
const layoutMarker = "threadsmith-remote-only"

func markLayout(dir string) error {
	if err := writeFileAtomic(filepath.Join(dir, layoutMarker), []byte("refs and objects of the remote only; threads' work in ../../threads\n"), 0o644); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}

// listRefs returns the refs under prefix of repository m, by name.
func (m *mirror) listRefs(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := m.git.out(ctx, m.call("for-each-ref", "--format=%(objectname) %(refname)", prefix))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs, nil
}

// syncRemoteRefs makes store's remote-tracking refs those of the mirror mr,
// in one transaction.
func syncRemoteRefs(ctx context.Context, mr, store *mirror) error {
	const prefix = "refs/remotes/origin/"
	want, err := mr.listRefs(ctx, prefix)
	if err != nil {
		return err
	}
	have, err := store.listRefs(ctx, prefix)
	if err != nil {
		return err
	}
	var cmds []string
	for ref, sha := range want {
		if have[ref] != sha {
			cmds = append(cmds, fmt.Sprintf("update %s %s", ref, sha))
		}
	}
	for ref := range have {
		if _, ok := want[ref]; !ok {
			cmds = append(cmds, "delete "+ref)
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	sort.Strings(cmds)
	c := store.call("update-ref", "--stdin")
	c.stdin = []byte(strings.Join(cmds, "\n") + "\n")
	if _, err := store.git.run(ctx, c); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}

// fetch brings the mirror up to date with the remote, and w's store's view
// of the remote with it.
func (w *Workspace) fetch(ctx context.Context) error {
	if err := w.mirror.fetch(ctx); err != nil {
		return err
	}
	return syncRemoteRefs(ctx, w.mirror, w.store)
}

// publish copies the commits just pushed from w's store into the mirror,
// with the mirror's remote-tracking ref of the branch: the remote has them
// now, and CommitDiff (the session pages) reads pushes from the mirror.
// Only the bot's own store is read, with the transport allowed for this
// call alone. It waits for a fetch in progress: two fetches into one
// repository may fail on each other's ref locks.
func (w *Workspace) publish(ctx context.Context) error {
	mr := w.mirror
	mr.fetchMu.Lock()
	defer mr.fetchMu.Unlock()
	c := mr.call("fetch", "--quiet", "--no-write-fetch-head", "--no-tags", "--recurse-submodules=no",
		w.store.dir, "+refs/heads/"+w.branch+":refs/remotes/origin/"+w.branch)
	c.env = []string{"GIT_ALLOW_PROTOCOL=file"}
	mr.admin.RLock()
	_, err := mr.git.run(ctx, c)
	mr.admin.RUnlock()
	return err
}
