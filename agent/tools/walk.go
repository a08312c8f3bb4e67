package tools

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/threadsmith/threadsmith/internal/safefile"
	"golang.org/x/sys/unix"
)

// dirHandle is an open directory of a walk, shared by the walker and the grep
// workers that open files in it, and closed by whoever lets go of it last.
//
// Everything below the walk's start is opened with openat relative to its
// directory's descriptor, one name at a time, with O_NOFOLLOW: no symbolic
// link is ever followed, so the walk cannot leave the tree even if a folder is
// swapped for a link while it runs (the guarantee os.Root gives, at the cost of
// one system call per name rather than several).
type dirHandle struct {
	f    *os.File
	fd   int
	refs atomic.Int32
}

func newDirHandle(f *os.File) *dirHandle {
	h := &dirHandle{f: f, fd: int(f.Fd())}
	h.refs.Store(1)
	return h
}

func (h *dirHandle) acquire() *dirHandle { h.refs.Add(1); return h }

func (h *dirHandle) release() {
	if h.refs.Add(-1) == 0 {
		h.f.Close()
	}
}

// openDir opens the subfolder name of h without following a link.
func (h *dirHandle) openDir(name string) (*dirHandle, error) {
	fd, err := openat(h.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return newDirHandle(os.NewFile(uintptr(fd), name)), nil
}

// readFile reads the regular file name of h into buf (grown as needed) without
// following a link; files over max bytes are not read (tooBig). O_NONBLOCK keeps
// a FIFO swapped in from blocking the open.
func (h *dirHandle) readFile(name string, buf []byte, max int64) (data, newBuf []byte, tooBig bool, err error) {
	fd, err := openat(h.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK)
	if err != nil {
		return nil, buf, false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, buf, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, buf, false, unix.EINVAL
	}
	if st.Size > max {
		return nil, buf, true, nil
	}
	size := int(st.Size)
	if cap(buf) < size {
		buf = make([]byte, size, size+size/4)
	}
	buf = buf[:size]
	n := 0
	for n < size {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, buf, false, err
		}
		if m == 0 {
			break // the file shrank
		}
		n += m
	}
	return buf[:n], buf, false, nil
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// walkEntry is a file or directory met by a walk.
type walkEntry struct {
	rel   string // slash path from the area's root
	name  string
	isDir bool
	dir   *dirHandle // the directory holding it; acquire to keep it past visit
}

// visitFunc sees each entry in walk order; for a directory it says whether to
// descend. Returning false for a file means nothing.
type visitFunc func(e walkEntry) bool

// walkTree visits the tree under start (a canonical directory target) depth
// first, entries of a directory in byte order, so the order is deterministic.
// It never follows symbolic links, skips .git, FIFOs, devices and sockets, and,
// in the repository, honours .gitignore files (the root's, nested ones, and
// those of start's parents) and .git/info/exclude. It stops early when ctx ends.
func walkTree(ctx context.Context, start target, visit visitFunc) error {
	f, err := safefile.OpenDirIn(start.area.fs, start.rel)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		return unix.ENOTDIR
	}
	h := newDirHandle(f)
	defer h.release()
	var patterns []gitignore.Pattern
	var parts []string
	if start.rel != "." {
		parts = strings.Split(start.rel, "/")
	}
	if start.area.isRepo {
		patterns = readIgnore(start.area.fs, ".git/info/exclude", nil)
		for i := range parts {
			dir := strings.Join(parts[:i], "/")
			if dir == "" {
				dir = "."
			}
			patterns = append(patterns, readIgnore(start.area.fs, path.Join(dir, ".gitignore"), parts[:i])...)
		}
	}
	w := &walker{ctx: ctx, visit: visit, ignore: start.area.isRepo}
	w.dir(h, start.rel, parts, patterns)
	return ctx.Err()
}

type walker struct {
	ctx    context.Context
	visit  visitFunc
	ignore bool
}

func (w *walker) dir(h *dirHandle, rel string, parts []string, patterns []gitignore.Pattern) {
	if w.ctx.Err() != nil {
		return
	}
	entries, _ := h.f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if w.ignore {
		for _, e := range entries {
			if e.Name() == ".gitignore" && e.Type().IsRegular() {
				data, _, _, err := h.readFile(".gitignore", nil, maxIgnoreBytes)
				if err == nil {
					patterns = append(patterns[:len(patterns):len(patterns)], parseIgnore(data, parts)...)
				}
				break
			}
		}
	}
	matcher := gitignore.NewMatcher(patterns)
	for _, e := range entries {
		if w.ctx.Err() != nil {
			return
		}
		name := e.Name()
		typ := e.Type()
		if strings.EqualFold(name, ".git") || typ&fs.ModeSymlink != 0 {
			continue
		}
		isDir := typ.IsDir()
		if !isDir && !typ.IsRegular() {
			continue
		}
		childParts := append(parts[:len(parts):len(parts)], name)
		if w.ignore && len(patterns) > 0 && matcher.Match(childParts, isDir) {
			continue
		}
		childRel := name
		if rel != "." {
			childRel = rel + "/" + name
		}
		descend := w.visit(walkEntry{rel: childRel, name: name, isDir: isDir, dir: h})
		if !isDir || !descend {
			continue
		}
		sh, err := h.openDir(name)
		if err != nil {
			continue
		}
		w.dir(sh, childRel, childParts, patterns)
		sh.release()
	}
}

// maxIgnoreBytes is the largest ignore file read.
const maxIgnoreBytes = 1 << 20

// readIgnore parses one ignore file of the area; domain is the folder it
// applies to. The file is the agent's to write: a pipe or device there is
// not waited on, and one over maxIgnoreBytes is not read.
func readIgnore(r *os.Root, name string, domain []string) []gitignore.Pattern {
	data, err := safefile.ReadFileIn(r, name, maxIgnoreBytes)
	if err != nil {
		return nil
	}
	return parseIgnore(data, domain)
}

func parseIgnore(data []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}
