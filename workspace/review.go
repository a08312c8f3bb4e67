package workspace

import (
	"context"
	"slices"
	"strings"
)

// Subjects returns the subjects of the branch's commits that the default
// branch does not have, oldest first: what the branch did, for a pull
// request's description.
func (w *Workspace) Subjects(ctx context.Context) ([]string, error) {
	unlock, err := w.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	out, err := w.git.out(ctx, w.call("log", "--no-show-signature", "--reverse", "--format=%s",
		"refs/remotes/origin/"+w.mirror.repo.DefaultBranch+"..HEAD"))
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	var subjects []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			subjects = append(subjects, l)
		}
	}
	return subjects, nil
}

// BranchFiles returns the files the branch's commits changed since it left
// the default branch (the merge base with origin/<default_branch> as last
// fetched), in path order with line counts: what a pull request's
// description lists. Uncommitted changes are not in it (they are not on the
// pushed branch). No external diff or textconv runs.
func (w *Workspace) BranchFiles(ctx context.Context) ([]FileStat, error) {
	unlock, err := w.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	numstat := func(rev ...string) (string, error) {
		return w.git.run(ctx, w.call(append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv",
			"--ignore-submodules=none", "--find-renames", "--numstat", "-z"}, rev...)...))
	}
	// A...B diffs from their merge base: one git process, not two.
	out, err := numstat("refs/remotes/origin/" + w.mirror.repo.DefaultBranch + "...HEAD")
	if err != nil {
		// Unrelated histories (no merge base): every file of the branch
		// is new.
		empty, eerr := w.git.out(ctx, w.call("hash-object", "--no-filters", "-t", "tree", "/dev/null"))
		if eerr != nil {
			return nil, newError(CodeInternal, "", eerr)
		}
		if out, err = numstat(empty, "HEAD"); err != nil {
			return nil, newError(CodeInternal, "", err)
		}
	}
	return parseNumstat(out), nil
}

// ReviewSeen returns the keys of the review comments already handed to the
// model, kept with the workspace across restarts.
func (w *Workspace) ReviewSeen() []string {
	md, _ := readMeta(w.meta)
	return md.ReviewSeen
}

// MarkReviewSeen records more review comment keys as handed over.
func (w *Workspace) MarkReviewSeen(keys []string) error {
	unlock := w.m.lockThread(w.wkey())
	defer unlock()
	return w.m.updateMeta(w, func(md *meta) {
		for _, k := range keys {
			if !slices.Contains(md.ReviewSeen, k) {
				md.ReviewSeen = append(md.ReviewSeen, k)
			}
		}
	})
}
