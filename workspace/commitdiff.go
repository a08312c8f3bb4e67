package workspace

import (
	"context"
	"regexp"
)

// objectName is what CommitDiff accepts as a commit: a full or abbreviated
// hexadecimal object name, never anything git could read as an option or a
// revision expression.
var objectName = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// CommitDiff returns the patch from commit from to commit to of a
// repository, read from its mirror (which holds every commit the bot made
// and pushed): the diff of one push, for the session pages. With from empty
// it starts at to's fork point from the default branch (the branch's first
// push). The patch is cut at MaxPatchBytes (truncated set). Like Diff, it
// runs no external diff or textconv and changes nothing.
func (m *Manager) CommitDiff(ctx context.Context, repo, from, to string) (patch string, truncated bool, err error) {
	if err := m.begin(); err != nil {
		return "", false, err
	}
	defer m.ops.Done()
	mr, err := m.mirror(repo)
	if err != nil {
		return "", false, err
	}
	if !objectName.MatchString(to) || (from != "" && !objectName.MatchString(from)) {
		return "", false, newError(CodeInvalid, "A commit is named by its hexadecimal id.", nil)
	}
	if err := mr.ensure(ctx); err != nil {
		return "", false, err
	}
	if from == "" {
		base, err := mr.git.out(ctx, mr.call("merge-base", to, "refs/remotes/origin/"+mr.repo.DefaultBranch))
		switch {
		case err == nil:
			from = base
		case exitStatus(err) == 1: // unrelated histories: everything is new
			if from, err = mr.git.out(ctx, mr.call("hash-object", "--no-filters", "-t", "tree", "/dev/null")); err != nil {
				return "", false, newError(CodeInternal, "", err)
			}
		default:
			return "", false, newError(CodeInternal, "", err)
		}
	}
	out, err := mr.git.run(ctx, mr.call("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames",
		"--ignore-submodules=none", from, to, "--"))
	if err != nil {
		return "", false, newError(CodeInternal, "", err)
	}
	patch, truncated = capPatch(out, MaxPatchBytes)
	return patch, truncated, nil
}
