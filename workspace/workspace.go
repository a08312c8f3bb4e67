package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Workspace is one thread's checkout: a linked worktree of its repository's
// own repository on the thread's branch, plus a scratch folder outside the
// tree.
//
// Its methods may be called from any goroutine; operations on one thread's
// workspace are serialised with each other and with Open of that thread.
type Workspace struct {
	m      *Manager
	mirror *mirror
	// store is the thread's own repository (see ensureStore): the common
	// dir of its worktree.
	store  *mirror
	git    *gitRunner
	key    ThreadKey
	id     string
	branch string
	root   string
	// scratch is outside the git tree so downloads and tool output are
	// never committed.
	scratch string
	cache   string
	meta    string
	// admin is the worktree's admin dir in the store (see GitDir). It is
	// set with the thread lock held and read without it by GitDir.
	admin atomic.Pointer[string]

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

// CacheDir is the repository's build and package cache folder,
// <data_dir>/caches/<repo>: shared by every thread of the repository and no
// other, kept when a workspace is removed; "" when Config.NoCaches. The agent writes it (a sandbox
// shows it read-write); the bot never reads, runs or follows anything in it.
func (w *Workspace) CacheDir() string { return w.cache }

// Repo is the name of the workspace's repository.
func (w *Workspace) Repo() string { return w.mirror.repo.Name }

// DefaultBranch is the branch the thread's branch started from.
func (w *Workspace) DefaultBranch() string { return w.mirror.repo.DefaultBranch }

// Thread is the key of the thread the workspace belongs to.
func (w *Workspace) Thread() ThreadKey { return w.key }

// GitDir is the absolute path of the worktree's admin dir,
// <data_dir>/threads/<repo>/<id>.git/worktrees/<name>: its HEAD, index and
// per-worktree refs; Root's .git file points here. It is inside CommonDir.
// It can change when the bot has to register the worktree again (Open does
// so when the registration vanished), so read it per use rather than once.
func (w *Workspace) GitDir() string {
	if p := w.admin.Load(); p != nil {
		return *p
	}
	return ""
}

// CommonDir is the absolute path of the thread's own repository,
// <data_dir>/threads/<repo>/<id>.git: the thread's branch and commits, the
// remote's branches as last fetched, config, and GitDir. It borrows the
// remote's objects from the repository's shared mirror (see ensureStore).
func (w *Workspace) CommonDir() string { return w.store.dir }

// ReadOnlyGitPaths are the folders a sandbox shows read-only, at the same
// paths, so that git works in Root (status, diff, log): CommonDir, and the
// shared mirror's object store, which holds only what the remote has (its
// objects, and the bot's pushed commits). Nothing of other threads is in
// either.
func (w *Workspace) ReadOnlyGitPaths() []string {
	return []string{w.store.dir, filepath.Join(w.mirror.dir, "objects")}
}

func (w *Workspace) setAdmin(admin string) { w.admin.Store(&admin) }

// call is a git command in the thread's worktree, with its admin dir and
// the thread's repository named explicitly (see gitCall).
func (w *Workspace) call(args ...string) gitCall {
	return gitCall{dir: w.root, gitDir: w.GitDir(), commonDir: w.store.dir, workTree: w.root, args: args}
}

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
	// A handle its holders closed is forgotten by the Manager, which marks
	// only the workspaces it holds when it removes one: a forgotten handle
	// whose folder is gone was removed.
	forgotten := w.refs == 0 && w.m.open[w.wkey()] != w
	w.m.mu.Unlock()
	if !removed && forgotten {
		_, err := os.Lstat(w.root)
		removed = errors.Is(err, fs.ErrNotExist)
	}
	if removed {
		unlock()
		return nil, newError(CodeClosed, "This thread's workspace was removed; it is recreated on the next request.", nil)
	}
	return unlock, nil
}

// locate finds the worktree's admin dir from the repository's side, never from
// Root/.git, and reports whether Root is a folder of its own (not missing,
// not a symlink). admin is "" when no usable registration names Root.
func (w *Workspace) locate() (admin string, rootOK bool) {
	st, err := os.Lstat(w.root)
	rootOK = err == nil && st.IsDir() && !emptyButDotGit(w.root)
	admins := w.store.adminsFor(w.root, w.id)
	cur := w.GitDir()
	for _, a := range admins {
		if !usableAdmin(a) {
			continue
		}
		if a == cur {
			return a, rootOK
		}
		if admin == "" {
			admin = a
		}
	}
	return admin, rootOK
}

// emptyButDotGit reports whether dir holds nothing but (maybe) .git: a
// folder with no work in it to keep. Registering it as the worktree would
// show every file of the branch as deleted.
func emptyButDotGit(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(2)
	return len(names) == 0 || len(names) == 1 && names[0] == ".git"
}

// openRepo opens the worktree with go-git on explicit storage: the admin
// dir for per-worktree files, the store for the rest, the mirror's objects
// as its alternate. PlainOpen would read Root/.git and the admin dir's
// commondir file, both writable by the agent.
func (w *Workspace) openRepo() (*git.Repository, error) {
	if err := w.git.enforceConfig(w.store.dir); err != nil {
		return nil, err
	}
	admin := w.GitDir()
	if admin == "" {
		return nil, newError(CodeInternal, "", fmt.Errorf("worktree %s has no admin dir", w.root))
	}
	// The storage file systems are go-git's default (as PlainOpen's):
	// go-git renames its temporary object files by absolute path, which a
	// bound file system would resolve inside the admin dir. Only the work
	// tree, the agent's, gets one that does not follow symlinks out.
	fs := dotgit.NewRepositoryFilesystem(osfs.New(admin), osfs.New(w.store.dir))
	objects := cache.NewObjectLRUDefault()
	st := borrowingStorage{
		// The alternates file holds an absolute path (the bot's): resolved
		// from /, not inside the admin dir.
		Storage: filesystem.NewStorageWithOptions(fs, objects, filesystem.Options{AlternatesFS: osfs.New("/")}),
		shared:  filesystem.NewObjectStorage(dotgit.New(osfs.New(w.mirror.dir)), objects),
	}
	r, err := git.Open(st, osfs.New(w.root, osfs.WithBoundOS()))
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

// changed uses `git status`: go-git's Status hashes every file of the tree,
// which costs more on a few thousand files (BenchmarkStatus; the figures are
// in BENCHMARKS.md).
func (w *Workspace) changed(ctx context.Context) (bool, error) {
	// --ignore-submodules=dirty: a nested repository's commit counts, but
	// git does not run `git status` inside it (with its config) to see
	// whether its files changed; the flag outranks .gitmodules.
	out, err := w.git.run(ctx, w.call("status", "--porcelain", "-z", "--untracked-files=normal", "--ignore-submodules=dirty"))
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
	res, err := w.CommitWork(ctx, req)
	return res.SHA, err
}

// CommitResult is what CommitWork did.
type CommitResult struct {
	// SHA is the new commit, or "" when there was nothing to commit.
	SHA string
	// Nested are the untracked nested repositories met while staging and
	// what was done with each (see Nested); the thread should hear of them.
	Nested []Nested
}

// CommitWork is Commit, also telling what was done with nested
// repositories.
func (w *Workspace) CommitWork(ctx context.Context, req CommitRequest) (CommitResult, error) {
	unlock, err := w.lock()
	if err != nil {
		return CommitResult{}, err
	}
	defer unlock()
	return w.commit(ctx, CommitMessage(req))
}

func (w *Workspace) commit(ctx context.Context, msg string) (CommitResult, error) {
	var res CommitResult
	if err := w.checkOnBranch(ctx); err != nil {
		return res, err
	}
	// Staging with the CLI: go-git's AddWithOptions{All: true} runs a full
	// go-git status first (see changed).
	nested, err := w.stage(ctx, nil)
	if err != nil {
		return res, err
	}
	res.Nested = nested
	// Index against HEAD only: git looks at no work tree, nested or not, so
	// a changed submodule commit counts whatever .gitmodules says.
	_, err = w.git.run(ctx, w.call("diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv", "--ignore-submodules=none"))
	switch {
	case err == nil:
		return res, nil // nothing staged
	case exitStatus(err) != 1:
		return res, newError(CodeInternal, "", err)
	}

	repo, err := w.openRepo()
	if err != nil {
		return res, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return res, newError(CodeInternal, "", err)
	}
	sig := &object.Signature{Name: w.m.cfg.Author.Name, Email: w.m.cfg.Author.Email, When: w.m.cfg.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return res, newError(CodeInternal, "", err)
	}
	res.SHA = h.String()
	return res, nil
}

// checkOnBranch fails when someone (the agent's bash, say) switched the
// worktree to another branch or detached HEAD: committing there would put
// the work where no push takes it.
func (w *Workspace) checkOnBranch(ctx context.Context) error {
	head, err := w.git.run(ctx, w.call("symbolic-ref", "--quiet", "HEAD"))
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
// the idle TTL counts. The workspace stays on disk; once no one holds it,
// the Manager forgets it (the next Open finds it on disk), so that what it
// keeps in memory does not grow with the threads it has served.
func (w *Workspace) Close() error {
	unlock := w.m.lockThread(w.wkey())
	defer unlock()
	w.m.mu.Lock()
	if w.refs > 0 {
		w.refs--
	}
	if w.refs == 0 && w.m.open[w.wkey()] == w {
		delete(w.m.open, w.wkey())
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
	admin, rootOK := w.locate()
	if rootOK {
		// Save uncommitted work on the branch first; a folder whose
		// registration vanished is registered again to do so.
		if admin == "" {
			if err := w.m.adopt(ctx, w); err != nil {
				return err
			}
		} else {
			w.setAdmin(admin)
		}
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
	// Removed by hand rather than with `git worktree remove`, which reads
	// Root/.git and refuses when it does not point back.
	err := os.RemoveAll(w.root)
	for _, a := range w.store.adminsFor(w.root, w.id) {
		if rerr := os.RemoveAll(a); err == nil {
			err = rerr
		}
	}
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

// borrowingStorage is a thread's repository for go-git, which does not look
// in an alternate object store when it checks whether an object exists: it
// would write every tree of the first commit again into the thread's
// repository (hundreds of objects in a large repository) and reopen the
// mirror's pack index for every object it reads from there. The mirror's
// objects are looked up first, in one object storage opened once, then the
// thread's own.
type borrowingStorage struct {
	*filesystem.Storage
	shared *filesystem.ObjectStorage
}

func (s borrowingStorage) HasEncodedObject(h plumbing.Hash) error {
	if err := s.Storage.HasEncodedObject(h); err != plumbing.ErrObjectNotFound {
		return err
	}
	return s.shared.HasEncodedObject(h)
}

func (s borrowingStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, err := s.shared.EncodedObject(t, h); err == nil {
		return o, nil
	}
	return s.Storage.EncodedObject(t, h)
}
