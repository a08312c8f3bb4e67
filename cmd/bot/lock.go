package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// lockName is the file in data_dir that one bot at a time holds locked.
const lockName = "threadsmith.lock"

// dataDirLock is the exclusive hold a running bot has on its data_dir: two
// bots on one database would each report the other's runs as interrupted,
// replay the same queued input and push the same branches.
type dataDirLock struct{ f *os.File }

// errDataDirInUse is the error of a second bot on a data_dir.
var errDataDirInUse = errors.New("data_dir is in use")

// dataDirInUse says which data_dir is in use and by whom.
type dataDirInUse struct {
	dir    string
	holder string // "another threadsmith (pid N)", or "another process"
}

func (e *dataDirInUse) Error() string {
	return fmt.Sprintf("%v: %s is used by %s; one bot per data_dir: stop that one, or give this one another data_dir", errDataDirInUse, e.dir, e.holder)
}

func (e *dataDirInUse) Is(target error) bool { return target == errDataDirInUse }

// lockDataDir takes dir's lock or says who holds it. The lock is a flock on
// <dir>/threadsmith.lock: the kernel releases it when the holder exits, kill
// -9 included, so a crash never leaves a stale lock behind (the file stays,
// and means nothing while unlocked). The holder writes its pid into the
// file for the next one's error message.
func lockDataDir(dir string) (*dataDirLock, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	if err := flockOwn(f, path); err != nil {
		holder := "another process"
		if pid := lockHolder(path); pid > 0 {
			holder = fmt.Sprintf("another threadsmith (pid %d)", pid)
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &dataDirInUse{dir: dir, holder: holder}
		}
		return nil, fmt.Errorf("data_dir %s: locking %s: %w", dir, path, err)
	}
	// Only the holder writes, so a reader sees the holder's pid (or, for an
	// instant, an empty file).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataDirLock{f: f}, nil
}

// ownLockWait bounds how long lockDataDir waits for a lock this process
// held last.
const ownLockWait = 2 * time.Second

// flockOwn takes f's lock. A lock this process released a moment ago (a bot
// stopped and started again in one process) may still be held by a child
// of it forked at that instant, which keeps a copy of the descriptor until
// it execs: when the file names this process as the holder, it tries again
// for a moment before giving up.
func flockOwn(f *os.File, path string) error {
	deadline := time.Now().Add(ownLockWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) || lockHolder(path) != os.Getpid() || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockHolder is the pid the lock file names, 0 if none.
func lockHolder(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// release lets the next bot have the data_dir.
func (l *dataDirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor drops the flock
	l.f = nil
	return err
}

// peekDataDirLock takes dir's lock, as lockDataDir does, without creating
// the lock file: it is there whenever a bot runs, and a missing one means
// no bot holds the folder (the lock returned then holds nothing).
func peekDataDirLock(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, lockName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return &dataDirLock{}, nil
	}
	return lockDataDir(dir)
}
