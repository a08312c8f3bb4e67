package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Workspace is one thread's checkout: a linked worktree of its repository's
// mirror on the thread's branch, plus a scratch folder outside the tree.
//
// Its methods may be called from any goroutine; operations on one thread's
// workspace are serialised with each other and with Open of that thread.
type Workspace struct {
	m      *Manager
	mirror *mirror
	git    *gitRunner
	key    ThreadKey
	id     string
	branch string
	root   string
	// scratch is outside the git tree so downloads and tool output are
	// never committed.
	scratch string
	meta    string

	// refs and removed are guarded by m.mu.
	refs    int
	removed bool
}

// Root is the folder of the checkout; the agent's tools work inside it.
func (w *Workspace) Root() string { return w.root }

// Branch is the thread's branch, e.g. "bot/slack-1712345678-123456-3fa9c2d1".
func (w *Workspace) Branch() string { return w.branch }

// ScratchDir is a folder for downloads and full tool output. It is outside
// the git tree (nothing in it is ever committed) and removed with the
// workspace.
func (w *Workspace) ScratchDir() string { return w.scratch }

// Repo is the name of the workspace's repository.
func (w *Workspace) Repo() string { return w.mirror.repo.Name }

// DefaultBranch is the branch the thread's branch started from.
func (w *Workspace) DefaultBranch() string { return w.mirror.repo.DefaultBranch }

// Thread is the key of the thread the workspace belongs to.
func (w *Workspace) Thread() ThreadKey { return w.key }

func (w *Workspace) wkey() string { return w.mirror.repo.Name + "/" + w.id }

// lock takes the thread lock and checks that the workspace still exists.
func (w *Workspace) lock() (unlock func(), err error) {
	if err := w.m.begin(); err != nil {
		return nil, err
	}
	unlockThread := w.m.lockThread(w.wkey())
	unlock = func() {
		unlockThread()
		w.m.ops.Done()
	}
	w.m.mu.Lock()
	removed := w.removed
	w.m.mu.Unlock()
	if removed {
		unlock()
		return nil, newError(CodeClosed, "This thread's workspace was removed; it is recreated on the next request.", nil)
	}
	return unlock, nil
}

// treeValid reports whether root is a linked worktree whose registration in
// the mirror still exists.
func (w *Workspace) treeValid() bool {
	b, err := os.ReadFile(filepath.Join(w.root, ".git"))
	if err != nil {
		return false
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return false
	}
	_, err = os.Stat(filepath.Join(gitdir, "HEAD"))
	return err == nil
}

func (w *Workspace) openRepo() (*git.Repository, error) {
	r, err := git.PlainOpenWithOptions(w.root, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, newError(CodeInternal, "", fmt.Errorf("open %s: %w", w.root, err))
	}
	return r, nil
}

// Changed reports whether the work tree differs from the branch's last
// commit: modified, added, deleted or new untracked (not ignored) files.
func (w *Workspace) Changed(ctx context.Context) (bool, error) {
	unlock, err := w.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	return w.changed(ctx)
}

// changed uses `git status`: go-git's Status hashes every file of the tree
// and is an order of magnitude slower on a few thousand files (see
// BenchmarkStatus).
func (w *Workspace) changed(ctx context.Context) (bool, error) {
	out, err := w.git.run(ctx, gitCall{dir: w.root, args: []string{"status", "--porcelain", "-z", "--untracked-files=normal"}})
	if err != nil {
		return false, newError(CodeInternal, "", err)
	}
	return out != "", nil
}

// CommitRequest describes the commit made after a run.
type CommitRequest struct {
	// Request is the user's request; its first line, trimmed to 72
	// characters, is the commit's subject.
	Request string
	// ThreadLink is a link to the chat thread; it is the commit's body.
	ThreadLink string
	// CoAuthor is the person who asked; a Co-authored-by trailer is added
	// when the email is known.
	CoAuthor Identity
}

// Commit stages every change in the work tree (new, modified and deleted
// files, honouring .gitignore) and commits it on the thread's branch as the
// bot. It returns the new commit's sha, or "" when there was nothing to
// commit.
func (w *Workspace) Commit(ctx context.Context, req CommitRequest) (string, error) {
	unlock, err := w.lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	return w.commit(ctx, CommitMessage(req))
}

func (w *Workspace) commit(ctx context.Context, msg string) (string, error) {
	if err := w.checkOnBranch(ctx); err != nil {
		return "", err
	}
	// Staging with the CLI: go-git's AddWithOptions{All: true} runs a full
	// go-git status first (see changed).
	if _, err := w.git.run(ctx, gitCall{dir: w.root, args: []string{"add", "--all"}}); err != nil {
		return "", newError(CodeInternal, "", err)
	}
	_, err := w.git.run(ctx, gitCall{dir: w.root, args: []string{"diff", "--cached", "--quiet"}})
	switch {
	case err == nil:
		return "", nil // nothing staged
	case exitStatus(err) != 1:
		return "", newError(CodeInternal, "", err)
	}

	repo, err := w.openRepo()
	if err != nil {
		return "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", newError(CodeInternal, "", err)
	}
	sig := &object.Signature{Name: w.m.cfg.Author.Name, Email: w.m.cfg.Author.Email, When: w.m.cfg.Now()}
	w.mirror.admin.RLock()
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	w.mirror.admin.RUnlock()
	if err != nil {
		return "", newError(CodeInternal, "", err)
	}
	return h.String(), nil
}

// checkOnBranch fails when someone (the agent's bash, say) switched the
// worktree to another branch or detached HEAD: committing there would put
// the work where no push takes it.
func (w *Workspace) checkOnBranch(ctx context.Context) error {
	head, err := w.git.run(ctx, gitCall{dir: w.root, args: []string{"symbolic-ref", "--quiet", "HEAD"}})
	head = strings.TrimSpace(head)
	if err != nil && exitStatus(err) != 1 {
		return newError(CodeInternal, "", err)
	}
	if head != "refs/heads/"+w.branch {
		on := strings.TrimPrefix(head, "refs/heads/")
		if on == "" {
			on = "a detached HEAD"
		}
		return newError(CodeWrongBranch, fmt.Sprintf(
			"The workspace is on %s instead of the thread's branch %s; switch back with `git checkout %s`.", on, w.branch, w.branch), nil)
	}
	return nil
}

// CommitMessage builds the message of the commit after a run: subject from
// the request's first non-empty line (at most 72 characters), the thread
// link as body, and a Co-authored-by trailer when the requester's email is
// known.
func CommitMessage(req CommitRequest) string {
	var b strings.Builder
	b.WriteString(Subject(req.Request))
	if link := oneLine(req.ThreadLink); link != "" {
		b.WriteString("\n\n" + link)
	}
	if email := oneLine(req.CoAuthor.Email); email != "" && !strings.ContainsAny(email, "<> ") {
		name := oneLine(strings.NewReplacer("<", "", ">", "").Replace(req.CoAuthor.Name))
		if name == "" {
			name, _, _ = strings.Cut(email, "@")
		}
		b.WriteString("\n\nCo-authored-by: " + name + " <" + email + ">")
	}
	return b.String() + "\n"
}

const maxSubject = 72

// Subject returns the first non-empty line of text, trimmed to 72
// characters (the last one an ellipsis when cut).
func Subject(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) <= maxSubject {
			return line
		}
		r := []rune(line)[:maxSubject-1]
		return strings.TrimRight(string(r), " ") + "…"
	}
	return "Changes requested in a chat thread"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Close releases the workspace after a run and records the time, from which
// the idle TTL counts. The workspace stays on disk.
func (w *Workspace) Close() error {
	unlock := w.m.lockThread(w.wkey())
	defer unlock()
	w.m.mu.Lock()
	if w.refs > 0 {
		w.refs--
	}
	removed := w.removed
	w.m.mu.Unlock()
	if removed {
		return nil
	}
	return w.m.touch(w)
}

// Remove deletes the workspace's folder and scratch folder now. Uncommitted
// changes are first committed locally (not pushed) so nothing is lost; the
// branch stays, and the next Open of the thread recreates the folder from it.
func (w *Workspace) Remove(ctx context.Context) error {
	unlock, err := w.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return w.remove(ctx, "removed")
}

func (w *Workspace) remove(ctx context.Context, why string) error {
	if w.treeValid() {
		dirty, err := w.changed(ctx)
		if err != nil {
			return err
		}
		if dirty {
			if _, err := w.commit(ctx, "WIP: uncommitted changes saved when the workspace was "+why+"\n"); err != nil {
				return err
			}
		}
	}
	mr := w.mirror
	mr.admin.Lock()
	_, err := mr.git.run(ctx, gitCall{dir: mr.dir, args: []string{"worktree", "remove", "--force", w.root}})
	if err != nil {
		// Unregistered or half-made: delete the folder, then drop any
		// registration pointing at it.
		err = os.RemoveAll(w.root)
		if err == nil {
			_, err = mr.git.run(ctx, gitCall{dir: mr.dir, args: []string{"worktree", "prune"}})
		}
	}
	mr.admin.Unlock()
	if err != nil {
		return newError(CodeInternal, "", err)
	}
	if err := os.RemoveAll(w.scratch); err != nil {
		return newError(CodeInternal, "", err)
	}
	w.m.mu.Lock()
	w.removed = true
	if w.m.open[w.wkey()] == w {
		delete(w.m.open, w.wkey())
	}
	w.m.mu.Unlock()
	return nil
}
