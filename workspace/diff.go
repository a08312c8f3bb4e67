package workspace

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MaxPatchBytes caps DiffResult.Patch; a longer patch is cut at a line end
// and Truncated is set.
const MaxPatchBytes = 4 << 20

// DiffResult is the thread's work compared with the default branch.
type DiffResult struct {
	// Base is the commit where the branch left the default branch.
	Base string
	// Stat lists changed files with line counts, in path order.
	Stat []FileStat
	// Patch is the unified diff (at most MaxPatchBytes).
	Patch     string
	Truncated bool
	// CompareURL is the forge's page for the pushed branch ("" when
	// unknown); it shows pushed commits only.
	CompareURL string
}

// Diff compares the work tree with the point where the thread's branch left
// the default branch (the merge base with origin/<default_branch> as last
// fetched). It includes everything a person asking "what did you change?"
// means: committed and pushed work, committed but unpushed work, and
// uncommitted changes, new untracked files included (ignored files are not).
// Commits that landed on the default branch since the fork are not shown as
// reverted, as a two-point diff against its tip would.
//
// It changes nothing: untracked files are staged into a throwaway copy of
// the index, never the real one.
func (w *Workspace) Diff(ctx context.Context) (DiffResult, error) {
	unlock, err := w.lock()
	if err != nil {
		return DiffResult{}, err
	}
	defer unlock()

	mr := w.mirror
	res := DiffResult{CompareURL: CompareURL(mr.repo.URL, mr.repo.Forge, mr.repo.DefaultBranch, w.branch)}
	base, err := w.git.out(ctx, w.call("merge-base", "HEAD", "refs/remotes/origin/"+mr.repo.DefaultBranch))
	if err != nil {
		if exitStatus(err) != 1 {
			return res, newError(CodeInternal, "", err)
		}
		// Unrelated histories: compare with the empty tree.
		if base, err = w.git.out(ctx, w.call("hash-object", "--no-filters", "-t", "tree", "/dev/null")); err != nil {
			return res, newError(CodeInternal, "", err)
		}
	}
	res.Base = base

	tmpIndex, err := w.copyIndex()
	if err != nil {
		return res, newError(CodeInternal, "", err)
	}
	defer os.Remove(tmpIndex)
	env := []string{"GIT_INDEX_FILE=" + tmpIndex}
	if _, err := w.stage(ctx, env); err != nil {
		return res, err
	}
	// Index against a commit: no work tree is read, nested or not. No
	// external diff or textconv: their commands come from config.
	diff := func(extra ...string) (string, error) {
		c := w.call(append([]string{"diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv",
			"--ignore-submodules=none", "--find-renames"}, extra...)...)
		c.env = env
		return w.git.run(ctx, c)
	}
	numstat, err := diff("--numstat", "-z", base)
	if err != nil {
		return res, newError(CodeInternal, "", err)
	}
	res.Stat = parseNumstat(numstat)
	patch, err := diff(base)
	if err != nil {
		return res, newError(CodeInternal, "", err)
	}
	res.Patch, res.Truncated = capPatch(patch, MaxPatchBytes)
	return res, nil
}

// parseNumstat reads `git diff --numstat -z`: "added\tdeleted\tpath\0", or
// for a rename "added\tdeleted\t\0old\0new\0"; "-" counts mark binaries.
func parseNumstat(out string) []FileStat {
	var stats []FileStat
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		rec := fields[i]
		if rec == "" {
			continue
		}
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		st := FileStat{Path: parts[2]}
		if parts[0] == "-" && parts[1] == "-" {
			st.Binary = true
		} else {
			st.Added, _ = strconv.Atoi(parts[0])
			st.Deleted, _ = strconv.Atoi(parts[1])
		}
		if st.Path == "" && i+2 < len(fields) {
			st.OldPath, st.Path = fields[i+1], fields[i+2]
			i += 2
		}
		stats = append(stats, st)
	}
	return stats
}

func capPatch(p string, limit int) (string, bool) {
	if len(p) <= limit {
		return p, false
	}
	cut := p[:limit]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	return cut, true
}

// copyIndex copies the worktree's index to a new file in its admin dir and
// returns the copy's path. Starting from a copy keeps the index's stat data,
// so staging only rehashes files that changed. The file is created
// exclusively under a fresh name, so nothing planted there is followed.
func (w *Workspace) copyIndex() (string, error) {
	dst, err := os.CreateTemp(w.GitDir(), "threadsmith-diff-index-")
	if err != nil {
		return "", err
	}
	src, err := os.Open(filepath.Join(w.GitDir(), "index"))
	if os.IsNotExist(err) {
		// No index yet; git reads a missing index file as empty, an empty
		// one as corrupt.
		dst.Close()
		return dst.Name(), os.Remove(dst.Name())
	}
	var fi os.FileInfo
	if err == nil {
		if fi, err = src.Stat(); err == nil {
			_, err = io.Copy(dst, src)
		}
		src.Close()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The copy keeps the index's time: git trusts a file's cached
		// stat data only when the file changed before the index was
		// written, and a copy dated now would make a file changed in the
		// same clock tick as the index (same size) look unchanged.
		err = os.Chtimes(dst.Name(), time.Time{}, fi.ModTime())
	}
	if err != nil {
		os.Remove(dst.Name())
		return "", err
	}
	return dst.Name(), nil
}
