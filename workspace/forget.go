package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/threadsmith/threadsmith/workspace/diskuse"
)

// threadPaths are the files and folders of thread id of repository repo,
// relative to the data dir (see the layout in the package doc).
func threadPaths(repo, id string) []string {
	return []string{
		filepath.Join("workspaces", repo, id),
		filepath.Join("workspaces", repo, ".new", id),
		filepath.Join("scratch", repo, id),
		filepath.Join("threads", repo, id+".git"),
		filepath.Join("meta", repo, id+".json"),
		filepath.Join("meta", repo, id+".json.tmp"),
	}
}

// checkRepoName refuses a name a configured repository could not have (it
// comes from the database, not only from the config): one path element, so
// that the thread's paths and its in-use key name the same workspace.
func checkRepoName(repo string) error {
	if !repoNameRE.MatchString(repo) {
		return newError(CodeInvalid, fmt.Sprintf("not a repository name: %q", repo), nil)
	}
	return nil
}

// ThreadFilesSize returns the space a thread's workspace of repository
// repo takes under dataDir, as du counts it (diskuse.Measure) — its
// worktree, scratch folder and thread repository — plus its record's size,
// without changing anything (a missing dataDir is 0). Symbolic links are
// counted as links, never followed, and nothing outside the thread's
// folders is read.
func ThreadFilesSize(ctx context.Context, dataDir, repo string, key ThreadKey) (int64, error) {
	if err := checkRepoName(repo); err != nil {
		return 0, err
	}
	var dirs []string
	var total int64
	for _, p := range threadPaths(repo, threadID(key)) {
		p = filepath.Join(dataDir, p)
		switch fi, err := os.Lstat(p); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, err
		case fi.IsDir():
			dirs = append(dirs, p)
		case fi.Mode().IsRegular():
			total += fi.Size()
		}
	}
	u, err := diskuse.Measure(ctx, dirs...)
	return total + u.Bytes, err
}

// Forget deletes a thread's files of repository repoName for good: its
// worktree with any uncommitted changes, its scratch folder, its thread
// repository (its branch and commits not pushed) and its record. The
// remote and the shared mirror keep what was pushed. Everything is removed
// through an os.Root at the data dir: a symbolic link the agent planted is
// removed, never followed, and nothing outside the data dir is touched. A
// workspace someone holds open is left alone (CodeInvalid). A repository no
// longer configured is forgotten the same way.
func (m *Manager) Forget(ctx context.Context, repoName string, key ThreadKey) error {
	if err := m.begin(); err != nil {
		return err
	}
	defer m.ops.Done()
	if err := checkRepoName(repoName); err != nil {
		return err
	}
	id := threadID(key)
	wkey := repoName + "/" + id
	unlock := m.lockThread(wkey)
	defer unlock()
	m.mu.Lock()
	cur := m.open[wkey]
	if cur != nil && cur.refs > 0 {
		m.mu.Unlock()
		return newError(CodeInvalid, "the workspace is in use", nil)
	}
	m.mu.Unlock()
	root, err := os.OpenRoot(m.cfg.DataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return newError(CodeInternal, "", err)
	}
	defer root.Close()
	var errs []error
	for _, p := range threadPaths(repoName, id) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := root.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return newError(CodeInternal, "", err)
	}
	if cur != nil {
		m.mu.Lock()
		cur.removed = true
		if m.open[wkey] == cur {
			delete(m.open, wkey)
		}
		m.mu.Unlock()
	}
	m.log.Info("thread's workspace forgotten", "repo", repoName, "thread", id)
	return nil
}
