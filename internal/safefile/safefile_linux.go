package safefile

import (
	"io/fs"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 is found missing (before Linux 5.6) or
// filtered (a seccomp profile that answers ENOSYS or EPERM): every open then
// walks the path one component at a time.
var noOpenat2 atomic.Bool

const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

type rootSys struct {
	fd  int // O_PATH descriptor of the root folder
	dev uint64
}

func (s *rootSys) open(dir string) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	s.fd, s.dev = fd, st.Dev
	return nil
}

func (s *rootSys) close() error { return unix.Close(s.fd) }

const readFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY

func (s *rootSys) openFile(r *Root, name string) (*os.File, error) {
	fd, err := s.openFD(r, name, readFlags)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openFD opens name beneath the root with flags. openat2 resolves the whole
// path in the kernel under the package's rules; when it refuses (a link, a
// mount, a non-folder on the way) the walk below runs to name the reason, and
// it follows nothing either.
func (s *rootSys) openFD(r *Root, name string, flags int) (int, error) {
	if !noOpenat2.Load() {
		fd, err := openat2(s.fd, name, flags)
		switch err {
		case nil:
			return fd, nil
		case unix.ENOSYS, unix.EPERM:
			noOpenat2.Store(true)
		case unix.ELOOP, unix.EXDEV, unix.ENOTDIR:
		default:
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	return s.walk(r, name, flags)
}

func openat2(dirfd int, name string, flags int) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags), Resolve: resolve}
	for {
		fd, err := unix.Openat2(dirfd, name, how)
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// walk opens name one component at a time with O_NOFOLLOW, checking each
// folder on the way by its descriptor: no link is followed, no mount crossed.
// The last component is looked at before it is opened, so that a device or
// link is refused without being opened; the caller checks the descriptor.
func (s *rootSys) walk(r *Root, name string, flags int) (int, error) {
	parts := strings.Split(name, "/")
	if name == "." {
		parts = nil
	}
	dfd := s.fd
	closeDir := func() {
		if dfd != s.fd {
			unix.Close(dfd)
		}
	}
	defer func() { closeDir() }()
	for i, p := range parts {
		shown := strings.Join(parts[:i+1], "/")
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, p, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		last := i == len(parts)-1
		mode := st.Mode & unix.S_IFMT
		switch {
		case mode == unix.S_IFLNK:
			return -1, r.symlink(name, shown)
		case mode == unix.S_IFDIR && st.Dev != s.dev:
			// Only a folder is compared: overlayfs reports a file's
			// device as the layer's, not the mount's.
			return -1, r.refuse(name, shown+" is on another file system; the bot reads only "+r.where+"'s own files")
		case last && flags&unix.O_DIRECTORY != 0 && mode != unix.S_IFDIR:
			return -1, r.refuse(name, "it is "+kind(fileMode(mode))+", not a folder")
		case last && flags&unix.O_DIRECTORY == 0 && mode != unix.S_IFREG:
			return -1, r.notRegular(name, fileMode(mode))
		case !last && mode != unix.S_IFDIR:
			return -1, &fs.PathError{Op: "open", Path: name, Err: unix.ENOTDIR}
		}
		f := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			f = flags | unix.O_NOFOLLOW
		}
		nfd, err := openat(dfd, p, f)
		if err == unix.ELOOP {
			return -1, r.symlink(name, shown)
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		if err := unix.Fstat(nfd, &st); err != nil || (!last && (st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != s.dev)) {
			unix.Close(nfd)
			return -1, r.refuse(name, shown+" changed while it was opened")
		}
		if last {
			return nfd, nil
		}
		closeDir()
		dfd = nfd
	}
	// The root itself.
	return openat(s.fd, ".", flags)
}

func fileMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFREG:
		return 0
	}
	return fs.ModeIrregular
}

func (s *rootSys) readDir(r *Root, name string) ([]Entry, error) {
	fd, err := s.openFD(r, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return listDir(f, func(n string) (fs.FileMode, bool) {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return 0, false
		}
		return fileMode(st.Mode), true
	})
}
