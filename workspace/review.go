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
