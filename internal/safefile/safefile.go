// Package safefile is how the bot reads a file the agent could have written:
// anything under a thread's worktree or scratch folder. The bot runs outside
// the sandbox with all its rights, so such a read must never follow a path the
// agent chose, never block, and never take more memory than it asked for:
//
//   - a name is resolved beneath its root with no symbolic link at any
//     component (in the root or out of it), no magic link (/proc) and no mount
//     crossing;
//   - the open does not wait (O_NONBLOCK, before the type is known: a named
//     pipe returns at once), takes no controlling terminal and is not inherited
//     by children;
//   - only a regular file is read, as the open descriptor says (fstat), and
//     never more than the caller's cap;
//   - a folder is listed without following its entries.
//
// A file refused for any of these reasons is an *Error whose text is a
// sentence fit for the thread, naming the file as the caller named it.
//
// The helpers that take an *os.Root (OpenIn, OpenDirIn, ReadFileIn) are for
// the agent's own file tools, which may follow a symlink that stays in their
// root but must not block on a pipe or device either.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// MaxDirEntries is the most entries ReadDir returns: the first ones the
// system lists, sorted by name.
const MaxDirEntries = 1000

// Error is a file the bot refused to read. Its text is one sentence naming
// the file and why it was not read.
type Error struct {
	Path   string // as the caller named it, relative to the root
	Reason string // "it is a symbolic link; the bot reads only regular files of the worktree"
}

func (e *Error) Error() string { return e.Path + " was not read: " + e.Reason }

// Refused reports whether err (or an error it wraps) is a refusal, and which.
func Refused(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Root is a folder whose content the agent could have written.
type Root struct {
	dir    string
	where  string // how refusals name the folder: "the worktree"
	follow bool
	sys    rootSys
	budget int64 // the most ReadFile and ReadHead return in all; 0: no limit
	spent  int64
}

// Budget limits what ReadFile and ReadHead return in all, over every file of
// the root: a file that would pass it is refused unread.
func (r *Root) Budget(n int64) { r.budget, r.spent = n, 0 }

// take counts n bytes against the budget, or refuses name.
func (r *Root) take(name string, n int64) error {
	if r.budget <= 0 {
		return nil
	}
	if r.spent+n > r.budget {
		return r.refuse(name, "with it the files the bot read from "+r.where+" at once would pass "+Size(r.budget))
	}
	r.spent += n
	return nil
}

// OpenRoot opens dir for reading with every rule of the package. where names
// the folder in refusals ("the worktree", "the scratch folder"). dir itself is
// the caller's own path and may be reached through symlinks.
func OpenRoot(dir, where string) (*Root, error) {
	r := &Root{dir: dir, where: where}
	if err := r.sys.open(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// OpenFollowing opens an operator's folder: symbolic links in it are followed
// (an operator's skills folder may be a farm of links), but a file is still
// opened without waiting, read only if regular and never past the cap.
func OpenFollowing(dir, where string) *Root {
	return &Root{dir: dir, where: where, follow: true}
}

// Close releases the root.
func (r *Root) Close() error {
	if r.follow {
		return nil
	}
	return r.sys.close()
}

// Open opens the regular file name (a slash path relative to the root) for
// reading. A missing file is an error for which errors.Is(err,
// fs.ErrNotExist) holds; a refused one is an *Error.
func (r *Root) Open(name string) (*os.File, fs.FileInfo, error) {
	if !local(name) {
		return nil, nil, r.refuse(name, "it is not a path inside "+r.where)
	}
	var f *os.File
	var err error
	if r.follow {
		f, err = os.OpenFile(filepath.Join(r.dir, filepath.FromSlash(name)), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, nil, err
		}
	} else if f, err = r.sys.openFile(r, name); err != nil {
		return nil, nil, err
	}
	return regular(f, func(m fs.FileMode) error { return r.notRegular(name, m) })
}

// regular returns f and its information if it is a regular file, and
// otherwise closes it and returns refuse's error for its type.
func regular(f *os.File, refuse func(fs.FileMode) error) (*os.File, fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, refuse(fi.Mode())
	}
	return f, fi, nil
}

// ReadFile reads the regular file name whole, refusing one larger than max
// bytes without reading it.
func (r *Root) ReadFile(name string, max int64) ([]byte, error) {
	f, fi, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, r.tooLarge(name, max)
	}
	b, long, err := readCapped(f, fi.Size(), max)
	if err != nil {
		return nil, err
	}
	if long {
		return nil, r.tooLarge(name, max)
	}
	if err := r.take(name, int64(len(b))); err != nil {
		return nil, err
	}
	return b, nil
}

// ReadHead reads at most max bytes of the regular file name and says whether
// it holds more.
func (r *Root) ReadHead(name string, max int64) (data []byte, longer bool, err error) {
	f, fi, err := r.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if data, longer, err = readCapped(f, fi.Size(), max); err != nil {
		return nil, false, err
	}
	if err := r.take(name, int64(len(data))); err != nil {
		return nil, false, err
	}
	return data, longer, nil
}

// Entry is an entry of a listed folder.
type Entry struct {
	Name string
	// Type is the entry's own type (fs.ModeSymlink for a link), or, for a
	// root opened with OpenFollowing, the type of what it leads to.
	Type fs.FileMode
}

// IsDir reports whether the entry is a folder.
func (e Entry) IsDir() bool { return e.Type.IsDir() }

// ReadDir lists the folder name ("." for the root), sorted by name, at most
// MaxDirEntries of it, without following any entry.
func (r *Root) ReadDir(name string) ([]Entry, error) {
	if name != "." && !local(name) {
		return nil, r.refuse(name, "it is not a path inside "+r.where)
	}
	var out []Entry
	var err error
	if r.follow {
		out, err = readDirFollowing(filepath.Join(r.dir, filepath.FromSlash(name)))
	} else {
		out, err = r.sys.readDir(r, name)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func readDirFollowing(dir string) ([]Entry, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return listDir(f, func(n string) (fs.FileMode, bool) {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			fi, err = os.Lstat(filepath.Join(dir, n))
		}
		if err != nil {
			return 0, false
		}
		return fi.Mode().Type(), true
	})
}

// listDir lists up to MaxDirEntries names of the open folder f with their
// types (typeOf), leaving out a name typeOf cannot tell (removed since).
func listDir(f *os.File, typeOf func(name string) (fs.FileMode, bool)) ([]Entry, error) {
	names, err := f.Readdirnames(MaxDirEntries)
	if err != nil && err != io.EOF {
		return nil, err
	}
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		if t, ok := typeOf(n); ok {
			out = append(out, Entry{Name: n, Type: t})
		}
	}
	return out, nil
}

func (r *Root) refuse(name, reason string) error {
	if r.follow {
		name = filepath.Join(r.dir, filepath.FromSlash(name))
	}
	return &Error{Path: name, Reason: reason}
}

func (r *Root) onlyRegular() string { return "the bot reads only regular files of " + r.where }

func (r *Root) notRegular(name string, m fs.FileMode) error {
	return r.refuse(name, "it is "+kind(m)+"; "+r.onlyRegular())
}

func (r *Root) symlink(name, comp string) error {
	if comp == name {
		return r.refuse(name, "it is a symbolic link; "+r.onlyRegular())
	}
	return r.refuse(name, comp+" is a symbolic link; the bot follows no link in "+r.where)
}

func (r *Root) tooLarge(name string, max int64) error {
	return r.refuse(name, "it is larger than "+Size(max)+", the most the bot reads of it")
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file"
	}
}

// local reports whether name is a relative slash path that stays below its
// root lexically (no "..", not absolute, not empty).
func local(name string) bool {
	return name != "" && name != "." && filepath.IsLocal(filepath.FromSlash(name)) && !strings.Contains(name, "\x00")
}

// readCapped reads at most max bytes of f (whose size was size when opened)
// and reports whether it holds more: a file that grew is cut, never read
// past max+1.
func readCapped(f io.Reader, size, max int64) ([]byte, bool, error) {
	if max < 0 {
		max = 0
	}
	buf := make([]byte, 0, min(size, max)+1)
	b, err := readAllInto(io.LimitReader(f, max+1), buf)
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > max {
		return b[:max], true, nil
	}
	return b, false, nil
}

func readAllInto(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Size formats a byte count for people: 512 bytes, 64 KB, 50 MB.
func Size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<10)), ".0") + " KB"
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MB"
	}
}

// OpenIn opens name in an os.Root for reading if it is a regular file. The
// root may follow a symlink that stays inside it; the open does not wait on
// a named pipe and takes no controlling terminal, and anything but a regular
// file is refused (an *Error, Path as given).
func OpenIn(r *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	return regular(f, func(m fs.FileMode) error {
		return &Error{Path: name, Reason: "it is " + kind(m) + "; only regular files are read"}
	})
}

// OpenDirIn opens the folder name in an os.Root without waiting: a named pipe
// or anything else that is not a folder fails at once (syscall.ENOTDIR).
func OpenDirIn(r *os.Root, name string) (*os.File, error) {
	return r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY|syscall.O_NOCTTY, 0)
}

// ReadFileIn reads the regular file name of an os.Root whole, refusing one
// larger than max bytes.
func ReadFileIn(r *os.Root, name string, max int64) ([]byte, error) {
	f, fi, err := OpenIn(r, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, long, err := readCapped(f, fi.Size(), max)
	if err != nil {
		return nil, err
	}
	if long {
		return nil, &Error{Path: name, Reason: "it is larger than " + Size(max) + ", the most read of it"}
	}
	return b, nil
}
