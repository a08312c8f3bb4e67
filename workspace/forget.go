package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// ThreadFilesSize returns the bytes of the regular files a thread's workspace
// of repository repo holds under dataDir — its worktree, scratch folder,
// thread repository and record — without changing anything (a missing
// dataDir is 0). Symbolic links are counted as links, never followed, and
// nothing outside dataDir is read.
func ThreadFilesSize(dataDir, repo string, key ThreadKey) (int64, error) {
	if err := checkRepoName(repo); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var total int64
	fsys := root.FS()
	for _, p := range threadPaths(repo, threadID(key)) {
		err := fs.WalkDir(fsys, filepath.ToSlash(p), func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					total += fi.Size()
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
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
