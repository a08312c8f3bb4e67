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
	"os"
	"path/filepath"
	"sync"

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

// Floor is the machine-wide reserve: room kept on the filesystem of Path
// (the bot's data directory) for the bot's own writes, its database first.
// The room is held for real, by a file of Reserve bytes allocated in Path
// (BalloonName): whatever fills the disk, and however fast, the reserve is
// there to hand over. Once the free space falls under a margin the file is
// removed (the database has Reserve bytes again) and the floor is low until
// the free space is back above the reserve and its margins, when the file is
// allocated again. A Floor is safe for concurrent use.
type Floor struct {
	// Path is a directory on the filesystem to watch, where the reserve's
	// file is kept; nothing but the bot may write it.
	Path string
	// Reserve is the room kept in bytes; 0 keeps none.
	Reserve int64

	mu       sync.Mutex
	inflated bool // the reserve's file holds Reserve bytes
	looked   bool // an existing file was looked for
}

// BalloonName is the file in Floor.Path that holds the reserve.
const BalloonName = "disk-reserve"

// FloorState is what Check saw.
type FloorState struct {
	// Free is the free space on the filesystem (the reserve's file aside).
	Free int64
	// Room is what the agents may still take: the free space above the
	// margin kept before the reserve is handed over; 0 while Low.
	Room int64
	// Low says the reserve was handed over (or could never be set aside):
	// the agents' writes must stop.
	Low bool
}

// margin is the free space left when the reserve is handed over: enough that
// the bot notices before the disk is full.
func (f *Floor) margin() int64 { return min(f.Reserve/4, 64<<20) }

func (f *Floor) balloon() string { return filepath.Join(f.Path, BalloonName) }

// Check looks at the free space, hands the reserve over when the disk fills
// and sets it aside again when space returns. A nil Floor, or one without a
// Reserve, is never low. A filesystem that cannot be asked is not low (the
// error says why).
func (f *Floor) Check() (FloorState, error) {
	if f == nil || f.Reserve <= 0 {
		return FloorState{}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.looked {
		f.looked = true
		var st unix.Stat_t
		if err := unix.Lstat(f.balloon(), &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Blocks*512 >= f.Reserve {
			f.inflated = true
		}
	}
	free, err := Free(f.Path)
	if err != nil {
		return FloorState{}, err
	}
	if f.inflated && free < f.margin() {
		// The disk is filling: the reserve is the database's now.
		if err := os.Remove(f.balloon()); err == nil || errors.Is(err, os.ErrNotExist) {
			f.inflated = false
			if free, err = Free(f.Path); err != nil {
				return FloorState{}, err
			}
		}
	}
	if !f.inflated && free >= f.Reserve+2*f.margin() {
		if err := f.inflate(); err == nil {
			f.inflated = true
			if free, err = Free(f.Path); err != nil {
				return FloorState{}, err
			}
		}
	}
	if !f.inflated {
		return FloorState{Free: free, Low: true}, nil
	}
	return FloorState{Free: free, Room: max(free-f.margin(), 0)}, nil
}

// inflate allocates the reserve's file (blocks, not holes; zeros written
// where the filesystem cannot allocate).
func (f *Floor) inflate() error {
	fd, err := unix.Open(f.balloon(), unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	err = unix.Fallocate(fd, 0, 0, f.Reserve)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = writeZeros(fd, f.Reserve)
	}
	if err != nil {
		_ = unix.Ftruncate(fd, 0)
		os.Remove(f.balloon())
	}
	return err
}

func writeZeros(fd int, n int64) error {
	chunk := make([]byte, 1<<20)
	for n > 0 {
		w, err := unix.Write(fd, chunk[:min(n, int64(len(chunk)))])
		if err != nil {
			return err
		}
		n -= int64(w)
	}
	return unix.Fsync(fd)
}
