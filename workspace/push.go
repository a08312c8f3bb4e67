package workspace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FileStat is one file's line counts in a change.
type FileStat struct {
	Path string
	// OldPath is the previous path of a renamed file (Diff only).
	OldPath string
	Added   int
	Deleted int
	// Binary files have no line counts.
	Binary bool
}

// PushResult tells what a push did, for the thread's push notice.
type PushResult struct {
	Branch string
	// SHA is the branch's commit on the remote after the push.
	SHA string
	// Commits is the number of commits the remote did not have before.
	Commits int
	// Files changed between what the remote had (or the default branch, for
	// a new branch) and SHA.
	Files []FileStat
	// CompareURL shows the branch against the default branch on the forge;
	// "" for unknown forges and local remotes.
	CompareURL string
	// UpToDate: the remote already had SHA; nothing was sent.
	UpToDate bool
	// Created: the branch did not exist on the remote before.
	Created bool
	// Forced: the remote branch was replaced; every commit dropped from it
	// was the bot's own.
	Forced bool
}

// Push sends the thread's branch to the remote, including commits of earlier
// runs whose push failed. It only ever pushes the thread's branch, which is
// under branch_prefix and never the default branch. It never drops commits
// of others: when the remote branch has commits the local branch lacks, the
// push goes ahead (as a force push with lease) only if every one of those
// commits was made by the bot; otherwise it fails with ErrPushRejected and
// the local commits stay for the next attempt (Open brings the remote
// commits in before the next run). Auth and network failures return ErrAuth
// or ErrUnreachable, again keeping the commits.
func (w *Workspace) Push(ctx context.Context) (PushResult, error) {
	unlock, err := w.lock()
	if err != nil {
		return PushResult{}, err
	}
	defer unlock()
	return w.push(ctx)
}

func (w *Workspace) push(ctx context.Context) (PushResult, error) {
	mr, cfg := w.mirror, w.m.cfg
	if !strings.HasPrefix(w.branch, cfg.BranchPrefix) || w.branch == mr.repo.DefaultBranch {
		return PushResult{}, newError(CodeForbidden, fmt.Sprintf(
			"Refusing to push %s: the bot only pushes branches under %q, never the default branch.", w.branch, cfg.BranchPrefix), nil)
	}
	st := w.store
	localRef, trackingRef := "refs/heads/"+w.branch, "refs/remotes/origin/"+w.branch
	refs, err := st.refs(ctx, localRef, trackingRef)
	if err != nil {
		return PushResult{}, err
	}
	local, tracking := refs[localRef], refs[trackingRef]
	if local == "" {
		return PushResult{}, newError(CodeInternal, "", fmt.Errorf("branch %s has no commit", w.branch))
	}
	res := PushResult{
		Branch:     w.branch,
		SHA:        local,
		CompareURL: CompareURL(mr.repo.URL, mr.repo.Forge, mr.repo.DefaultBranch, w.branch),
	}
	fork := ""
	if tracking == "" {
		if fork, err = w.forkPoint(ctx, local); err != nil {
			return res, err
		}
		if fork == local {
			// No commit of its own yet: don't publish an empty branch.
			res.UpToDate = true
			return res, nil
		}
	}

	// The usual case first, in one round trip: the remote is where we last
	// saw it (the remote-tracking ref, moved by every fetch and push; absent
	// for a branch never pushed) and that is behind local. A push with a
	// lease on exactly that value can then only fast-forward (or create)
	// the branch; if the remote moved meanwhile, the lease fails and nothing
	// changed.
	if tracking == "" || tracking == local || st.mustIsAncestor(ctx, tracking, local) {
		err := w.pushBranch(ctx, local, tracking)
		if err == nil {
			res.UpToDate, res.Created = tracking == local, tracking == ""
			base := tracking
			if base == "" {
				base = fork
			}
			return w.pushed(ctx, res, base), nil
		}
		if !errors.Is(err, errStaleLease) {
			return res, err
		}
	}

	// The remote moved, or our branch was rewritten: ask the remote where
	// the branch is; the answer decides between a plain push, a force push
	// of the bot's own commits, and a refusal.
	remoteTip, err := st.remoteBranch(ctx, localRef)
	if err != nil {
		return res, err
	}
	if remoteTip == local {
		res.UpToDate = true
		return w.pushed(ctx, res, ""), nil
	}
	res.Created = remoteTip == ""
	base := remoteTip
	if base == "" {
		if base, err = w.forkPoint(ctx, local); err != nil {
			return res, err
		}
	}
	lease := remoteTip
	if remoteTip != "" && !st.mustIsAncestor(ctx, remoteTip, local) {
		if lease, err = w.leaseForBotCommits(ctx, local, remoteTip); err != nil {
			return res, err
		}
		base = lease
		res.Forced = true
	}
	if err := w.pushBranch(ctx, local, lease); err != nil {
		if errors.Is(err, errStaleLease) {
			// The remote moved again between our look and the push.
			return res, newError(CodePushRejected, fmt.Sprintf(
				"Push of %s was rejected because the remote branch changed meanwhile. Commit %s is kept here and pushed next time.",
				w.branch, short(local)), err)
		}
		return res, err
	}
	return w.pushed(ctx, res, base), nil
}

// refusalReason is what the remote said when it refused a push: its
// "remote:" lines and the reasons git puts in parentheses after "! [...]".
// These come from the remote, not the bot's disk (git's own lines, which
// name local paths, are left out), and are already redacted; the result is
// cut short for a chat message.
func refusalReason(err error) string {
	var ge *gitError
	if !errors.As(err, &ge) {
		return ""
	}
	var parts []string
	for _, line := range strings.Split(ge.stderr, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "remote:"):
			if r := strings.TrimSpace(strings.TrimPrefix(line, "remote:")); r != "" {
				parts = append(parts, r)
			}
		case strings.HasPrefix(line, "! ["):
			if i := strings.LastIndex(line, "("); i >= 0 && strings.HasSuffix(line, ")") {
				parts = append(parts, line[i+1:len(line)-1])
			}
		}
	}
	r := strings.Join(parts, "; ")
	if len(r) > 300 {
		r = strings.ToValidUTF8(r[:300], "") + "…"
	}
	return r
}

// errStaleLease: the remote branch was not where the push's lease said.
var errStaleLease = errors.New("the remote branch is not where the lease expects it")

// pushBranch pushes local to the thread's branch on the remote, with a lease:
// only if the remote branch is at expect now ("" = it must not exist).
//
// The git CLI pushes, as it fetches: one transport, with the same hermetic
// environment (credentials bound to the configured host, GIT_ALLOW_PROTOCOL,
// the pinned ssh command). The URL is the configured one, on the command
// line, so remote.origin.pushurl (a dead end) and remote.origin.push in the
// repository's config play no part; the refspec names the thread's branch on both
// sides; --no-verify and the pinned core.hooksPath keep the repository's pre-push
// guard (and any hook) from running. The lease makes every push a
// compare-and-swap: a fast-forward from expect, or a force push over commits
// the caller checked are all the bot's.
func (w *Workspace) pushBranch(ctx context.Context, local, expect string) error {
	mr := w.mirror
	ref := "refs/heads/" + w.branch
	c := w.store.call("push", "--no-verify", "--no-signed", "--no-recurse-submodules",
		"--force-with-lease="+ref+":"+expect, mr.repo.URL, local+":"+ref)
	c.network = true
	_, err := mr.git.run(ctx, c)
	if err != nil {
		text := strings.ToLower(err.Error())
		switch {
		case exitStatus(err) <= 0:
		case containsAny(text, "stale info", "[rejected]", "non-fast-forward", "fetch first"):
			return fmt.Errorf("%w: %w", errStaleLease, err)
		case strings.Contains(text, "[remote rejected]") ||
			exitStatus(err) == 1 && containsAny(text, "[remote failure]", "failed to push some refs"):
			// The remote was reached and refused (a protected branch, a hook,
			// a size limit): say so, with the remote's own words, instead of
			// calling it unreachable. (git exits 1 for refused refs, 128 for
			// fatal errors such as auth and network, which remoteError sorts.)
			why := "its branch rules or hooks"
			if r := refusalReason(err); r != "" {
				why = "it said: " + r
			}
			return newError(CodePushRejected, fmt.Sprintf(
				"The remote refused the push of %s (%s). Commit %s is kept here and pushed next time.",
				w.branch, why, short(local)), err)
		}
		return remoteError(mr.repo.Name, "push to", w.m.cfg.GitTimeout, err)
	}
	return nil
}

// pushed finishes a push that reached the remote (or found it up to date):
// the remote-tracking ref and the thread's record follow, and the notice's
// counts are worked out from base. A failure from here on only costs the
// notice its details, so it is logged, not returned.
func (w *Workspace) pushed(ctx context.Context, res PushResult, base string) PushResult {
	mr, st, local := w.mirror, w.store, res.SHA
	// A push to a URL moves no remote-tracking ref; the next push, Unpushed
	// and Sync read this one.
	if _, err := st.git.run(ctx, st.call("update-ref", "refs/remotes/origin/"+w.branch, local)); err != nil {
		w.m.log.Warn("could not move the remote-tracking branch", "branch", w.branch, "err", err)
	}
	if err := w.publish(ctx); err != nil {
		w.m.log.Warn("could not copy the pushed commits into the mirror", "branch", w.branch, "err", err)
	}
	w.recordPush(local)
	if res.UpToDate {
		return res
	}
	if base != "" {
		var err error
		if res.Files, err = st.treeStats(ctx, base, local); err != nil {
			w.m.log.Warn("could not count the pushed changes", "branch", w.branch, "err", err)
		}
		if res.Commits, err = w.countCommits(ctx, base, local); err != nil {
			w.m.log.Warn("could not count the pushed commits", "branch", w.branch, "err", err)
		}
	}
	w.m.log.Info("pushed", "repo", mr.repo.Name, "branch", w.branch, "sha", short(local),
		"commits", res.Commits, "files", len(res.Files), "forced", res.Forced)
	return res
}

// mustIsAncestor is isAncestor with a failure (a missing object, say) read
// as "no": the callers then take the careful path.
func (m *mirror) mustIsAncestor(ctx context.Context, a, b string) bool {
	ok, err := m.isAncestor(ctx, a, b)
	return err == nil && ok
}

// remoteBranch asks the configured remote (by URL, never the mirror's
// remote.origin.url) for the commit of ref; "" when it has no such branch.
func (m *mirror) remoteBranch(ctx context.Context, ref string) (string, error) {
	c := m.call("ls-remote", "--refs", m.repo.URL, ref)
	c.network = true
	out, err := m.git.out(ctx, c)
	if err != nil {
		return "", remoteError(m.repo.Name, "push to", m.git.timeout, err)
	}
	// ls-remote matches patterns against the end of ref names: keep the
	// exact one.
	for _, line := range strings.Split(out, "\n") {
		if sha, name, ok := strings.Cut(line, "\t"); ok && name == ref {
			return sha, nil
		}
	}
	return "", nil
}

// Unpushed counts the branch's commits that the remote did not have when
// last seen (at the last fetch or push): commits whose push failed or that
// were never pushed. Local only; no network call. A caller that skipped a
// push because nothing changed in a run uses it to retry an earlier failed
// push.
func (w *Workspace) Unpushed(ctx context.Context) (int, error) {
	unlock, err := w.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	mr := w.store
	local, tracking := "refs/heads/"+w.branch, "refs/remotes/origin/"+w.branch
	refs, err := mr.refs(ctx, local, tracking)
	if err != nil {
		return 0, err
	}
	if refs[local] == "" {
		return 0, nil
	}
	exclude := refs[tracking]
	if exclude == "" {
		exclude = "refs/remotes/origin/" + mr.repo.DefaultBranch
	}
	out, err := mr.git.out(ctx, mr.call("rev-list", "--count", refs[local], "^"+exclude))
	if err != nil {
		return 0, newError(CodeInternal, "", err)
	}
	n, err := strconv.Atoi(out)
	if err != nil {
		return 0, newError(CodeInternal, "", err)
	}
	return n, nil
}

// recordPush remembers sha as the last commit known to be on the remote.
func (w *Workspace) recordPush(sha string) {
	if err := w.m.updateMeta(w, func(md *meta) { md.LastPushed = sha }); err != nil {
		w.m.log.Warn("could not record the push", "branch", w.branch, "err", err)
	}
}

// leaseForBotCommits is called when the remote branch (at remoteTip) is not
// an ancestor of local. It fetches, lists the commits the push would drop,
// and returns the remote tip to lease on when all of them are the bot's;
// otherwise ErrPushRejected.
func (w *Workspace) leaseForBotCommits(ctx context.Context, local, remoteTip string) (string, error) {
	mr := w.store
	if err := w.fetch(ctx); err != nil {
		return "", err
	}
	tracking := "refs/remotes/origin/" + w.branch
	refs, err := mr.refs(ctx, tracking)
	if err != nil {
		return "", err
	}
	tip := refs[tracking]
	if tip == "" {
		tip = remoteTip
	}
	out, err := mr.git.out(ctx, mr.call("log", "--no-show-signature", "--format=%H%x09%ae%x09%ce%x09%an", local+".."+tip))
	if err != nil {
		return "", newError(CodeInternal, "", err)
	}
	bot := strings.ToLower(w.m.cfg.Author.Email)
	var others []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		if strings.ToLower(f[1]) != bot || strings.ToLower(f[2]) != bot {
			others = append(others, f[3])
		}
	}
	if len(others) > 0 {
		return "", newError(CodePushRejected, fmt.Sprintf(
			"Push of %s was rejected: the remote branch has %d commit(s) by others (latest by %s) that this workspace does not have. "+
				"Commit %s is kept here; the next run brings their commits in and pushes again.",
			w.branch, len(others), others[0], short(local)), nil)
	}
	return tip, nil
}

// forkPoint is where the thread's branch left the default branch.
func (w *Workspace) forkPoint(ctx context.Context, head string) (string, error) {
	mr := w.store
	out, err := mr.git.run(ctx, mr.call("merge-base", head, "refs/remotes/origin/"+mr.repo.DefaultBranch))
	if err != nil {
		if exitStatus(err) == 1 {
			return "", nil // unrelated histories
		}
		return "", newError(CodeInternal, "", err)
	}
	return strings.TrimSpace(out), nil
}

func (w *Workspace) countCommits(ctx context.Context, base, head string) (int, error) {
	out, err := w.store.git.out(ctx, w.store.call("rev-list", "--count", base+".."+head))
	if err != nil {
		return 0, newError(CodeInternal, "", err)
	}
	n, err := strconv.Atoi(out)
	if err != nil {
		return 0, newError(CodeInternal, "", err)
	}
	return n, nil
}

// treeStats counts changed lines per file between two commits. A tree diff
// only descends into subtrees whose hashes differ, so it costs the size of
// the change, not of the repository. No external diff or textconv (their
// commands come from config); renames show as a removal and an addition.
func (m *mirror) treeStats(ctx context.Context, from, to string) ([]FileStat, error) {
	out, err := m.git.run(ctx, m.call("diff", "--numstat", "-z", "--no-color", "--no-ext-diff", "--no-textconv",
		"--no-renames", "--ignore-submodules=none", from, to))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	return parseNumstat(out), nil
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
