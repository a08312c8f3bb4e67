package workspace

import (
	"bytes"
	"context"
	"strings"
)

// stage records the work tree in the index as `git add --all` would: new,
// modified and deleted files, honouring .gitignore, and a nested repository
// as its checked-out commit. env may name another index (GIT_INDEX_FILE).
//
// Not `git add --all` itself: for every submodule in the index whose commit
// did not change, it runs `git status` inside the nested repository to see
// whether its files did, and that git reads the nested repository's own
// config, which the agent wrote (a filter driver runs a command, say).
// ls-files and update-index read a nested repository's HEAD in-process and
// start no git there.
func (w *Workspace) stage(ctx context.Context, env []string) error {
	lsChanged := w.call("ls-files", "-z", "--modified", "--deleted")
	lsChanged.env = env
	changed, err := w.git.run(ctx, lsChanged)
	if err != nil {
		return newError(CodeInternal, "", err)
	}
	lsNew := w.call("ls-files", "-z", "--others", "--exclude-standard")
	lsNew.env = env
	untracked, err := w.git.run(ctx, lsNew)
	if err != nil {
		return newError(CodeInternal, "", err)
	}

	// Tracked paths first: a file that became a folder is removed before
	// the files in it are added, or update-index refuses them.
	var paths bytes.Buffer
	seen := map[string]bool{}
	for p := range strings.SplitSeq(changed, "\x00") {
		if p != "" && !seen[p] { // a deleted file is also "modified"
			seen[p] = true
			paths.WriteString(p + "\x00")
		}
	}
	for p := range strings.SplitSeq(untracked, "\x00") {
		// A nested repository is listed as "dir/"; update-index adds it
		// as a gitlink when named without the slash.
		if p = strings.TrimSuffix(p, "/"); p != "" {
			paths.WriteString(p + "\x00")
		}
	}
	if paths.Len() == 0 {
		return nil
	}
	// --replace: a path may turn from file into folder or back.
	update := w.call("update-index", "--add", "--remove", "--replace", "-z", "--stdin")
	update.env, update.stdin = env, paths.Bytes()
	if _, err := w.git.run(ctx, update); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}
