package workspace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
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
	localRef := plumbing.NewBranchReferenceName(w.branch)
	refs, err := mr.refs(ctx, localRef.String())
	if err != nil {
		return PushResult{}, err
	}
	local := refs[localRef.String()]
	if local == "" {
		return PushResult{}, newError(CodeInternal, "", fmt.Errorf("branch %s has no commit", w.branch))
	}
	res := PushResult{
		Branch:     w.branch,
		SHA:        local,
		CompareURL: CompareURL(mr.repo.URL, mr.repo.Forge, mr.repo.DefaultBranch, w.branch),
	}

	repo, err := w.openRepo()
	if err != nil {
		return res, err
	}
	auth, err := mr.goGitAuth()
	if err != nil {
		return res, err
	}
	// The remote is built from the configuration, not read from the
	// mirror's config (repo.Remote), whose URL anyone with a worktree can
	// point elsewhere to receive the token. Its fetch refspec moves the
	// remote-tracking ref along with a push.
	remote := git.NewRemote(repo.Storer, &config.RemoteConfig{
		Name:  "origin",
		URLs:  []string{mr.repo.URL},
		Fetch: []config.RefSpec{fetchRefSpec},
	})

	// Ask the remote where the branch is: the remote-tracking ref may be
	// stale, and the answer decides between a plain push, a force push of
	// the bot's own commits, and a refusal.
	lctx, cancel := context.WithTimeout(ctx, cfg.GitTimeout)
	adv, err := remote.ListContext(lctx, &git.ListOptions{Auth: auth})
	cancel()
	if err != nil {
		return res, w.remoteErr("push to", err)
	}
	remoteTip := ""
	for _, r := range adv {
		if r.Name() == localRef {
			remoteTip = r.Hash().String()
		}
	}
	if remoteTip == local {
		res.UpToDate = true
		w.recordPush(local)
		return res, nil
	}
	res.Created = remoteTip == ""
	base := remoteTip
	if base == "" {
		if base, err = w.forkPoint(ctx, local); err != nil {
			return res, err
		}
		if base == local {
			// No commit of its own yet: don't publish an empty branch.
			res.UpToDate, res.Created = true, false
			return res, nil
		}
	}

	var lease *git.ForceWithLease
	if remoteTip != "" {
		ff := false
		if _, err := repo.CommitObject(plumbing.NewHash(remoteTip)); err == nil {
			if ff, err = mr.isAncestor(ctx, remoteTip, local); err != nil {
				return res, err
			}
		}
		if !ff {
			if lease, err = w.leaseForBotCommits(ctx, local, remoteTip); err != nil {
				return res, err
			}
			base = lease.Hash.String()
			res.Forced = true
		}
	}

	spec := config.RefSpec(localRef.String() + ":" + localRef.String())
	if lease != nil {
		spec = "+" + spec
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.GitTimeout)
	mr.admin.RLock()
	err = remote.PushContext(pctx, &git.PushOptions{
		RemoteName:     "origin",
		RemoteURL:      mr.repo.URL,
		RefSpecs:       []config.RefSpec{spec},
		Auth:           auth,
		ForceWithLease: lease,
	})
	mr.admin.RUnlock()
	cancel()
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		text := strings.ToLower(err.Error())
		if containsAny(text, "non-fast-forward", "fetch first", "rejected", "stale info") {
			// The remote moved between our look and the push.
			return res, newError(CodePushRejected, fmt.Sprintf(
				"Push of %s was rejected because the remote branch changed meanwhile. Commit %s is kept here and pushed next time.",
				w.branch, short(local)), mr.git.redact.Error(err))
		}
		return res, w.remoteErr("push to", err)
	}

	w.recordPush(local)
	// The push happened: a failure from here on only costs the notice its
	// details, so it is logged, not returned.
	if base != "" {
		if res.Files, err = treeStats(ctx, repo, base, local); err != nil {
			w.m.log.Warn("could not count the pushed changes", "branch", w.branch, "err", err)
		}
		if res.Commits, err = w.countCommits(ctx, base, local); err != nil {
			w.m.log.Warn("could not count the pushed commits", "branch", w.branch, "err", err)
		}
	}
	w.m.log.Info("pushed", "repo", mr.repo.Name, "branch", w.branch, "sha", short(local),
		"commits", res.Commits, "files", len(res.Files), "forced", res.Forced)
	return res, nil
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
	mr := w.mirror
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
// and returns a lease on the remote tip when all of them are the bot's;
// otherwise ErrPushRejected.
func (w *Workspace) leaseForBotCommits(ctx context.Context, local, remoteTip string) (*git.ForceWithLease, error) {
	mr := w.mirror
	if err := mr.fetch(ctx); err != nil {
		return nil, err
	}
	tracking := "refs/remotes/origin/" + w.branch
	refs, err := mr.refs(ctx, tracking)
	if err != nil {
		return nil, err
	}
	tip := refs[tracking]
	if tip == "" {
		tip = remoteTip
	}
	out, err := mr.git.out(ctx, mr.call("log", "--no-show-signature", "--format=%H%x09%ae%x09%ce%x09%an", local+".."+tip))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
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
		return nil, newError(CodePushRejected, fmt.Sprintf(
			"Push of %s was rejected: the remote branch has %d commit(s) by others (latest by %s) that this workspace does not have. "+
				"Commit %s is kept here; the next run brings their commits in and pushes again.",
			w.branch, len(others), others[0], short(local)), nil)
	}
	return &git.ForceWithLease{RefName: plumbing.NewBranchReferenceName(w.branch), Hash: plumbing.NewHash(tip)}, nil
}

// forkPoint is where the thread's branch left the default branch.
func (w *Workspace) forkPoint(ctx context.Context, head string) (string, error) {
	mr := w.mirror
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
	out, err := w.mirror.git.out(ctx, w.mirror.call("rev-list", "--count", base+".."+head))
	if err != nil {
		return 0, newError(CodeInternal, "", err)
	}
	n, err := strconv.Atoi(out)
	if err != nil {
		return 0, newError(CodeInternal, "", err)
	}
	return n, nil
}

// treeStats counts changed lines per file between two commits with go-git:
// a tree diff only descends into subtrees whose hashes differ, so it costs
// the size of the change, not of the repository.
func treeStats(ctx context.Context, repo *git.Repository, from, to string) ([]FileStat, error) {
	fc, err := repo.CommitObject(plumbing.NewHash(from))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	tc, err := repo.CommitObject(plumbing.NewHash(to))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	ft, err := fc.Tree()
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	tt, err := tc.Tree()
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	patch, err := ft.PatchContext(ctx, tt)
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	var stats []FileStat
	for _, fp := range patch.FilePatches() {
		f, t := fp.Files()
		st := FileStat{Binary: fp.IsBinary()}
		switch {
		case t != nil:
			st.Path = t.Path()
			if f != nil && f.Path() != t.Path() {
				st.OldPath = f.Path()
			}
		case f != nil:
			st.Path = f.Path()
		}
		for _, c := range fp.Chunks() {
			n := strings.Count(c.Content(), "\n")
			if !strings.HasSuffix(c.Content(), "\n") && c.Content() != "" {
				n++
			}
			switch c.Type() {
			case fdiff.Add:
				st.Added += n
			case fdiff.Delete:
				st.Deleted += n
			}
		}
		stats = append(stats, st)
	}
	return stats, nil
}

// goGitAuth returns go-git credentials for the repository's transport.
func (m *mirror) goGitAuth() (transport.AuthMethod, error) {
	switch m.repo.kind() {
	case kindHTTP:
		if m.repo.Token == "" {
			return nil, nil
		}
		return &githttp.BasicAuth{Username: m.repo.Username, Password: m.repo.Token}, nil
	case kindSSH:
		user := "git"
		if ep, err := transport.NewEndpoint(m.repo.URL); err == nil && ep.User != "" {
			user = ep.User
		}
		var hostKeys ssh.HostKeyCallback
		if m.repo.SSHKnownHosts != "" {
			cb, err := gitssh.NewKnownHostsCallback(m.repo.SSHKnownHosts)
			if err != nil {
				return nil, newError(CodeAuth, fmt.Sprintf("The ssh known_hosts file of repository %q cannot be read.", m.repo.Name), err)
			}
			hostKeys = cb
		}
		if m.repo.SSHKeyFile == "" {
			agent, err := gitssh.NewSSHAgentAuth(user)
			if err != nil {
				return nil, newError(CodeAuth, fmt.Sprintf("Repository %q has no ssh key and no ssh agent is running.", m.repo.Name), err)
			}
			agent.HostKeyCallback = hostKeys // nil: go-git reads ~/.ssh/known_hosts
			return agent, nil
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, m.repo.SSHKeyFile, "")
		if err != nil {
			return nil, newError(CodeAuth, fmt.Sprintf("The ssh key of repository %q cannot be used.", m.repo.Name), err)
		}
		keys.HostKeyCallback = hostKeys
		return keys, nil
	}
	return nil, nil
}

// remoteErr classifies a go-git transport error for the thread.
func (w *Workspace) remoteErr(op string, err error) *Error {
	mr := w.mirror
	clean := mr.git.redact.Error(err)
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrAuthorizationFailed) {
		return newError(CodeAuth, fmt.Sprintf(
			"Could not %s repository %q: the remote refused the credentials. Check the repository's token or ssh key.", op, mr.repo.Name), clean)
	}
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		return newError(CodeUnreachable, fmt.Sprintf(
			"Could not %s repository %q: the remote repository was not found (or the credentials cannot see it).", op, mr.repo.Name), clean)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return newError(CodeUnreachable, fmt.Sprintf(
			"Could not %s repository %q: the remote did not answer within %s.", op, mr.repo.Name, w.m.cfg.GitTimeout), clean)
	}
	return remoteError(mr.repo.Name, op, w.m.cfg.GitTimeout, clean)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
