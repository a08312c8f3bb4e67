package workspace

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// NestedHow is what staging did with a nested repository.
type NestedHow int

const (
	// NestedLinked: recorded as a link to the nested repository's
	// checked-out commit (a gitlink, as a submodule is), not its files.
	NestedLinked NestedHow = iota
	// NestedAsFiles: the nested repository had no commit; its files were
	// recorded as ordinary files of the branch, its .git left out. From
	// then on git treats the folder as an ordinary one. (One without a
	// commit and without files is not reported: there is nothing to record.)
	NestedAsFiles
	// NestedSkipped: not recorded at all: its .git is not a folder (a file
	// or symlink naming a repository elsewhere), or its refs are not its
	// own (see ownRefsOnly).
	NestedSkipped
)

// Nested is an untracked folder that git takes for a repository of its own
// (`git init`, `cargo new`, a clone, a planted .git file), and what staging
// did with it.
type Nested struct {
	// Path is relative to Root, with / separators. The agent chose it:
	// untrusted text (any character but NUL, line breaks included).
	Path string
	How  NestedHow
}

// stage records the work tree in the index as `git add --all` would: new,
// modified and deleted files, honouring .gitignore. env may name another
// index (GIT_INDEX_FILE). Untracked nested repositories are handled one by
// one and returned: one with a commit is recorded as that commit (a
// gitlink, what `git add` does), one without a commit (which `git add`
// refuses, failing the whole commit) as its files, and one whose .git is not
// a folder (a file or symlink pointing elsewhere) is left out.
//
// Not `git add --all` itself: for every submodule in the index whose commit
// did not change, it runs `git status` inside the nested repository to see
// whether its files did, and that git reads the nested repository's own
// config, which the agent wrote (a filter driver runs a command, say).
// ls-files and update-index read a nested repository's HEAD in-process and
// start no git there.
func (w *Workspace) stage(ctx context.Context, env []string) ([]Nested, error) {
	lsChanged := w.call("ls-files", "-z", "--modified", "--deleted")
	lsChanged.env = env
	changed, err := w.git.run(ctx, lsChanged)
	if err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	lsNew := w.call("ls-files", "-z", "--others", "--exclude-standard")
	lsNew.env = env
	untracked, err := w.git.run(ctx, lsNew)
	if err != nil {
		return nil, newError(CodeInternal, "", err)
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
	var nested []string
	for p := range strings.SplitSeq(untracked, "\x00") {
		// A nested repository is listed as "dir/".
		if dir, ok := strings.CutSuffix(p, "/"); ok && dir != "" {
			nested = append(nested, dir)
		} else if p != "" {
			paths.WriteString(p + "\x00")
		}
	}
	if err := w.updateIndex(ctx, env, paths.Bytes()); err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	var done []Nested
	for _, dir := range nested {
		n, err := w.stageNested(ctx, env, dir)
		if err != nil {
			return nil, err
		}
		done = append(done, n...)
	}
	return done, nil
}

// updateIndex adds, updates or removes the NUL-terminated paths.
func (w *Workspace) updateIndex(ctx context.Context, env []string, paths []byte) error {
	if len(paths) == 0 {
		return nil
	}
	// --replace: a path may turn from file into folder or back.
	update := w.call("update-index", "--add", "--remove", "--replace", "-z", "--stdin")
	update.env, update.stdin = env, paths
	_, err := w.git.run(ctx, update)
	return err
}

// stageNested records the untracked nested repository dir (relative to
// Root). Only a real .git folder whose refs are its own is looked at, and
// only by git in-process (update-index reads its HEAD); a .git file or
// symlink, a commondir file or linked refs could name any repository on the
// machine, so such a folder is left out unread.
func (w *Workspace) stageNested(ctx context.Context, env []string, dir string) ([]Nested, error) {
	if !ownRefsOnly(filepath.Join(w.root, filepath.FromSlash(dir), ".git")) {
		return []Nested{{Path: dir, How: NestedSkipped}}, nil
	}
	// With a commit checked out, update-index records it as a gitlink;
	// without one it refuses the folder ("is a directory").
	if err := w.updateIndex(ctx, env, []byte(dir+"\x00")); err == nil {
		return []Nested{{Path: dir, How: NestedLinked}}, nil
	} else if exitStatus(err) != 128 {
		return nil, newError(CodeInternal, "", err)
	}
	files, inner, err := w.listNestedFiles(ctx, dir)
	if err != nil {
		return nil, err
	}
	var paths bytes.Buffer
	for _, f := range files {
		paths.WriteString(dir + "/" + f + "\x00")
	}
	if err := w.updateIndex(ctx, env, paths.Bytes()); err != nil {
		return nil, newError(CodeInternal, "", err)
	}
	var done []Nested
	if len(files) > 0 {
		done = append(done, Nested{Path: dir, How: NestedAsFiles})
	}
	for _, in := range inner {
		n, err := w.stageNested(ctx, env, dir+"/"+in)
		if err != nil {
			return nil, err
		}
		done = append(done, n...)
	}
	return done, nil
}

// ownRefsOnly reports whether dotgit is a folder whose HEAD git resolves
// from files inside it: no commondir file (which names another repository's
// refs), and HEAD, packed-refs and everything under refs/ and reftable/
// neither symlinks nor special files. Otherwise git, reading its HEAD for a
// gitlink, could record a commit of any repository the bot can read, another
// thread's included.
func ownRefsOnly(dotgit string) bool {
	if st, err := os.Lstat(dotgit); err != nil || !st.IsDir() {
		return false
	}
	if _, err := os.Lstat(filepath.Join(dotgit, "commondir")); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	for _, name := range []string{"HEAD", "packed-refs"} {
		st, err := os.Lstat(filepath.Join(dotgit, name))
		if name == "HEAD" && err != nil || err == nil && !st.Mode().IsRegular() {
			return false
		}
	}
	for _, name := range []string{"refs", "reftable"} {
		ok := true
		filepath.WalkDir(filepath.Join(dotgit, name), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !d.Type().IsRegular() {
				ok = false
				return filepath.SkipAll
			}
			return nil
		})
		if !ok {
			return false
		}
	}
	return true
}

// listNestedFiles lists the files of the nested repository dir that are not
// ignored (by its own .gitignore files and the thread's info/exclude),
// relative to dir, with git looking at dir as the work tree and an empty
// index, so that nothing in the thread's index hides them. Repositories
// nested in it again are returned apart.
func (w *Workspace) listNestedFiles(ctx context.Context, dir string) (files, inner []string, err error) {
	empty, err := os.CreateTemp(w.GitDir(), "threadsmith-nested-index-")
	if err != nil {
		return nil, nil, newError(CodeInternal, "", err)
	}
	// A missing index file is an empty index; an empty file is a corrupt one.
	empty.Close()
	if err := os.Remove(empty.Name()); err != nil {
		return nil, nil, newError(CodeInternal, "", err)
	}
	sub := filepath.Join(w.root, filepath.FromSlash(dir))
	c := w.call("ls-files", "-z", "--others", "--exclude-standard")
	c.dir, c.workTree = sub, sub
	c.env = []string{"GIT_INDEX_FILE=" + empty.Name()}
	out, err := w.git.run(ctx, c)
	os.Remove(empty.Name())
	if err != nil {
		return nil, nil, newError(CodeInternal, "", err)
	}
	for p := range strings.SplitSeq(out, "\x00") {
		if d, ok := strings.CutSuffix(p, "/"); ok && d != "" {
			inner = append(inner, d)
		} else if p != "" {
			files = append(files, p)
		}
	}
	return files, inner, nil
}
