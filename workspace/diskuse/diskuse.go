// Package diskuse measures how much disk a thread's files take (the bytes
// allocated to them and their number) and how much room is left on a
// filesystem. It is what a thread's disk quota and the machine-wide reserve
// are enforced with.
package diskuse

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// MaxDepth is the deepest directory Measure descends into (one open
// descriptor per level). A deeper tree is an error: its usage is not known.
const MaxDepth = 512

// Usage is what a set of trees takes on disk.
type Usage struct {
	// Bytes is the space allocated to every inode (st_blocks), as du counts
	// it: a sparse file's holes take none, a one-byte file a whole block.
	Bytes int64
	// Files counts the inodes below the roots: files, directories, symbolic
	// links and others; a hard-linked file counts once.
	Files int64
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage { return Usage{Bytes: u.Bytes + v.Bytes, Files: u.Files + v.Files} }

// ErrTooDeep is returned for a tree deeper than MaxDepth.
var ErrTooDeep = fmt.Errorf("a directory tree is more than %d levels deep", MaxDepth)

// Measure walks every root (directories, absolute paths) and adds up what
// their contents take. The roots themselves are not counted; a missing root
// counts nothing. Symbolic links are not followed and nothing outside the
// roots is visited, whatever the trees hold. Entries that vanish during the
// walk are skipped, so a tree changing under it is measured as it was at
// some point of the walk, entry by entry.
func Measure(ctx context.Context, roots ...string) (Usage, error) {
	m := walker{ctx: ctx, buf: make([]byte, 64<<10)}
	for _, root := range roots {
		fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return Usage{}, fmt.Errorf("diskuse: %s: %w", root, err)
		}
		err = m.dir(fd, 1)
		unix.Close(fd)
		if err != nil {
			return Usage{}, fmt.Errorf("diskuse: %s: %w", root, err)
		}
	}
	return m.u, nil
}

type inode struct{ dev, ino uint64 }

type walker struct {
	ctx   context.Context
	u     Usage
	buf   []byte
	links map[inode]struct{} // files with more than one link, counted once
	n     int
}

// dir adds the entries of the open directory fd, descending into its
// subdirectories. It reads the whole listing before descending, so that only
// one buffer is in use at a time.
func (m *walker) dir(fd int, depth int) error {
	if depth > MaxDepth {
		return ErrTooDeep
	}
	var subdirs []string
	for {
		n, err := unix.Getdents(fd, m.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		for off := 0; off < n; {
			reclen := int(binary.NativeEndian.Uint16(m.buf[off+16:]))
			name := direntName(m.buf[off+19 : off+reclen])
			off += reclen
			if name == "." || name == ".." {
				continue
			}
			if m.n++; m.n%1024 == 0 {
				if err := m.ctx.Err(); err != nil {
					return err
				}
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return err
			}
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				m.u.Files++
				m.u.Bytes += st.Blocks * 512
				subdirs = append(subdirs, name)
				continue
			}
			if st.Nlink > 1 {
				if m.links == nil {
					m.links = map[inode]struct{}{}
				}
				k := inode{uint64(st.Dev), st.Ino}
				if _, seen := m.links[k]; seen {
					continue
				}
				m.links[k] = struct{}{}
			}
			m.u.Files++
			m.u.Bytes += st.Blocks * 512
		}
	}
	for _, name := range subdirs {
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				continue // gone, or swapped for something else since the listing
			}
			return err
		}
		err = m.dir(sub, depth+1)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// direntName is the NUL-terminated name of a linux_dirent64.
func direntName(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Free is the room left for an unprivileged writer on the filesystem that
// holds path (statfs: available blocks times their size).
func Free(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("diskuse: %s: %w", path, err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// Floor is the machine-wide reserve: the room that must stay free on the
// filesystem of Path (the bot's data directory) for the bot's own writes,
// its database first.
type Floor struct {
	// Path is any path on the filesystem to watch.
	Path string
	// Reserve is the free space below which the agents' writes stop.
	Reserve int64
}

// Low reports whether the free space on the floor's filesystem is below its
// reserve, with the free space seen. A filesystem that cannot be asked is
// not low (the error says why).
func (f *Floor) Low() (free int64, low bool, err error) {
	if f == nil || f.Reserve <= 0 {
		return 0, false, nil
	}
	free, err = Free(f.Path)
	if err != nil {
		return 0, false, err
	}
	return free, free < f.Reserve, nil
}
