package workspace

import (
	"context"
	"strconv"
)

// SyncResult tells what Sync brought in.
type SyncResult struct {
	// Pulled is the number of commits others pushed to the thread's branch
	// that are now in the workspace.
	Pulled int
	// Rebased: the workspace had unpushed commits; they were replayed on top
	// of the remote branch (and are still unpushed).
	Rebased bool
	// Diverged: the remote branch has commits that could not be brought in
	// (their changes conflict with unpushed commits, or uncommitted changes
	// are in the way). Nothing was changed; the next Push reports
	// ErrPushRejected until a person resolves it.
	Diverged bool
}

// Sync fetches and brings commits that others pushed to the thread's branch
// into the workspace: a fast-forward when the workspace has no unpushed
// commits (uncommitted changes stay, unless they touch the same files), else
// a rebase of the unpushed commits, and only those, onto the remote branch
// when the work tree is clean. A conflicting rebase is aborted and reported
// as Diverged. Call it before each run of a workspace kept open across runs,
// so that people's pushes to the review branch reach the agent and a push
// rejected because of them succeeds afterwards; Open does the same for a
// workspace that already exists. Fetch failures are returned as ErrAuth or
// ErrUnreachable; the fetch waits at most 15 s.
func (w *Workspace) Sync(ctx context.Context) (SyncResult, error) {
	unlock, err := w.lock()
	if err != nil {
		return SyncResult{}, err
	}
	defer unlock()
	sctx, cancel := context.WithTimeout(ctx, min(w.m.cfg.GitTimeout, syncTimeout))
	err = w.fetch(sctx)
	cancel()
	if err != nil {
		return SyncResult{}, err
	}
	return w.integrateRemote(ctx)
}

// integrateRemote is Sync after the fetch. Callers hold the thread lock.
func (w *Workspace) integrateRemote(ctx context.Context) (SyncResult, error) {
	var res SyncResult
	mr := w.store
	local, remote := "refs/heads/"+w.branch, "refs/remotes/origin/"+w.branch
	refs, err := mr.refs(ctx, local, remote)
	if err != nil || refs[remote] == "" || refs[local] == refs[remote] {
		return res, err
	}
	if ahead, err := mr.isAncestor(ctx, refs[remote], refs[local]); err != nil || ahead {
		return res, err // nothing new on the remote; our commits await a push
	}
	if err := w.checkOnBranch(ctx); err != nil {
		return res, err
	}
	mr.admin.RLock()
	defer mr.admin.RUnlock()
	pulled, err := mr.git.out(ctx, mr.call("rev-list", "--count", refs[local]+".."+refs[remote]))
	if err != nil {
		return res, newError(CodeInternal, "", err)
	}
	n, _ := strconv.Atoi(pulled)

	if behind, err := mr.isAncestor(ctx, refs[local], refs[remote]); err != nil {
		return res, err
	} else if behind {
		if _, err := w.git.run(ctx, w.call("merge", "--ff-only", "--quiet", "--no-stat", "--no-verify-signatures", remote)); err != nil {
			w.m.log.Warn("could not fast-forward to the remote branch", "branch", w.branch, "err", err)
			res.Diverged = true
			return res, nil
		}
		w.m.log.Info("workspace fast-forwarded to remote branch", "branch", w.branch, "commits", n)
		res.Pulled = n
		return res, nil
	}

	dirty, err := w.changed(ctx)
	if err != nil {
		return res, err
	}
	if dirty {
		w.m.log.Warn("branch diverged from the remote and the work tree has uncommitted changes; not rebasing", "branch", w.branch)
		res.Diverged = true
		return res, nil
	}
	// Replay only the commits never pushed: a commit the bot pushed that is
	// no longer on the remote was dropped by a person, on purpose.
	args := []string{"rebase", "--quiet", remote}
	if md, err := readMeta(w.meta); err == nil && md.LastPushed != "" {
		if ok, err := mr.isAncestor(ctx, md.LastPushed, refs[local]); err == nil && ok {
			args = []string{"rebase", "--quiet", "--onto", remote, md.LastPushed}
		}
	}
	if _, err := w.git.run(ctx, w.call(args...)); err != nil {
		_, _ = w.git.run(ctx, w.call("rebase", "--abort"))
		w.m.log.Warn("rebase of unpushed commits onto the remote branch failed; left as it was", "branch", w.branch, "err", err)
		res.Diverged = true
		return res, nil
	}
	w.m.log.Info("unpushed commits rebased onto remote branch", "branch", w.branch, "pulled", n)
	res.Pulled, res.Rebased = n, true
	return res, nil
}
