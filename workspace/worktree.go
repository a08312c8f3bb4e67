package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A linked worktree has two halves: the folder (Root), whose .git file
// names the admin dir, and the admin dir, threads/<repo>/<id>.git/worktrees/<name>
// (HEAD, index, and a gitdir file naming <Root>/.git). The folder is the
// agent's to write, so the bot finds and checks the admin dir from the
// repository's side only and never reads the .git file; it rewrites that file
// for the agent's own git when it is wrong.

// lockReason is the content of the admin dir's locked file: a locked
// worktree is never pruned or removed by git, only by the bot.
const lockReason = "threadsmith: removed by the bot only\n"

// worktreesDir holds the repository's worktree admin dirs (a thread's
// store; the mirror's only in the layout migrate undoes).
func (m *mirror) worktreesDir() string { return filepath.Join(m.dir, "worktrees") }

// adminsFor lists the admin dirs registered for the worktree folder root of
// thread id, in name order. `git worktree add` names an admin dir after the
// folder's base name, with a number appended when that name is taken, and
// writes root/.git into its gitdir file.
func (m *mirror) adminsFor(root, id string) []string {
	entries, err := os.ReadDir(m.worktreesDir())
	if err != nil {
		return nil
	}
	want := filepath.Join(root, ".git")
	var found []string
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), id)
		if !ok || strings.Trim(suffix, "0123456789") != "" || !e.IsDir() {
			continue // not this thread's, or a symlink
		}
		dir := filepath.Join(m.worktreesDir(), e.Name())
		if target, ok := adminTarget(dir); ok && target == want {
			found = append(found, dir)
		}
	}
	return found
}

// adminTarget reads the gitdir file of an admin dir: the path of the .git
// file of its worktree.
func adminTarget(admin string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return "", false
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(admin, p)
	}
	return filepath.Clean(p), true
}

// usableAdmin reports whether admin can serve the bot's git: a real
// directory with a HEAD.
func usableAdmin(admin string) bool {
	st, err := os.Lstat(admin)
	if err != nil || !st.IsDir() {
		return false
	}
	st, err = os.Lstat(filepath.Join(admin, "HEAD"))
	return err == nil && st.Mode().IsRegular()
}

// pruneStale removes the admin dirs whose worktree folder no longer exists
// (or that do not say where it is), as `git worktree prune` would, but
// judging only by the folder: a folder whose .git file was deleted keeps
// its registration and its index. Callers hold m.admin exclusively.
func (m *mirror) pruneStale() error {
	entries, err := os.ReadDir(m.worktreesDir())
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return newError(CodeInternal, "", err)
	}
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(m.worktreesDir(), e.Name())
		if target, ok := adminTarget(dir); ok {
			if _, err := os.Lstat(filepath.Dir(target)); err == nil || !os.IsNotExist(err) {
				continue
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return newError(CodeInternal, "", err)
	}
	return nil
}

// register makes a new admin dir for the existing folder root on branch,
// as `git worktree add --no-checkout` would, without touching the folder's
// files (except its .git file). The caller builds the index. Callers hold
// m.admin exclusively.
func (m *mirror) register(root, id, branch string) (string, error) {
	if err := os.MkdirAll(m.worktreesDir(), 0o755); err != nil {
		return "", err
	}
	var admin string
	for n := 0; ; n++ {
		name := id
		if n > 0 {
			name = fmt.Sprint(id, n)
		}
		admin = filepath.Join(m.worktreesDir(), name)
		err := os.Mkdir(admin, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) || n > 1000 {
			return "", err
		}
	}
	files := map[string]string{
		"HEAD":      "ref: refs/heads/" + branch + "\n",
		"commondir": "../..\n",
		"gitdir":    filepath.Join(root, ".git") + "\n",
		"locked":    lockReason,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(admin, name), []byte(content), 0o644); err != nil {
			os.RemoveAll(admin)
			return "", err
		}
	}
	return admin, nil
}

// dotGitContent is what a worktree's .git file says: where its admin dir is.
func dotGitContent(admin string) string { return "gitdir: " + admin + "\n" }

// repairDotGit points root/.git at admin again if anything else is there
// (a missing file, other content, a symlink, a directory). The bot's own git
// never reads it; the agent's git in the worktree needs it. A directory
// there is deleted: git never commits a path named .git, so nothing in it
// was ever going to be kept.
func repairDotGit(root, admin string) (bool, error) {
	p := filepath.Join(root, ".git")
	want := dotGitContent(admin)
	st, err := os.Lstat(p)
	switch {
	case err == nil && st.Mode().IsRegular():
		if b, err := os.ReadFile(p); err == nil && string(b) == want {
			return false, nil
		}
	case err == nil && st.IsDir():
		if err := os.RemoveAll(p); err != nil {
			return false, err
		}
	case err != nil && !os.IsNotExist(err):
		return false, err
	}
	return true, writeFileAtomic(p, []byte(want), 0o644)
}
