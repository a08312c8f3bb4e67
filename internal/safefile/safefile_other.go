//go:build !linux

package safefile

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Elsewhere than Linux the root is an os.Root (which keeps every open inside
// it) and each component is looked at with Lstat first, so that no link is
// followed; the open's own descriptor is then checked by the caller.
type rootSys struct{ root *os.Root }

func (s *rootSys) open(dir string) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	s.root = r
	return nil
}

func (s *rootSys) close() error { return s.root.Close() }

func (s *rootSys) check(r *Root, name string, dir bool) error {
	if name == "." {
		return nil
	}
	parts := strings.Split(name, "/")
	for i := range parts {
		shown := path.Join(parts[:i+1]...)
		fi, err := s.root.Lstat(shown)
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		switch m := fi.Mode(); {
		case m&fs.ModeSymlink != 0:
			return r.symlink(name, shown)
		case last && dir && !m.IsDir():
			return r.refuse(name, "it is "+kind(m)+", not a folder")
		case last && !dir && !m.IsRegular():
			return r.notRegular(name, m)
		case !last && !m.IsDir():
			return &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
		}
	}
	return nil
}

func (s *rootSys) openFile(r *Root, name string) (*os.File, error) {
	if err := s.check(r, name, false); err != nil {
		return nil, err
	}
	return s.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

func (s *rootSys) readDir(r *Root, name string) ([]Entry, error) {
	if err := s.check(r, name, true); err != nil {
		return nil, err
	}
	f, err := OpenDirIn(s.root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return listDir(f, func(n string) (fs.FileMode, bool) {
		fi, err := s.root.Lstat(path.Join(name, n))
		if err != nil {
			return 0, false
		}
		return fi.Mode().Type(), true
	})
}
