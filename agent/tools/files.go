package tools

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/threadsmith/threadsmith/internal/safefile"
)

// openRegular opens a target for reading and refuses anything but a regular
// file: a directory gets a pointer to ls, and a FIFO or device would block or
// never end. safefile.OpenIn keeps the open itself from hanging on a FIFO
// swapped in after the check and checks the opened file's own type.
func openRegular(t target, input string) (*os.File, fs.FileInfo, error) {
	fi, err := t.area.fs.Stat(t.rel)
	if err != nil {
		return nil, nil, notFound(input, err)
	}
	if err := checkRegular(fi, input); err != nil {
		return nil, nil, err
	}
	f, fi, err := safefile.OpenIn(t.area.fs, t.rel)
	if _, ok := safefile.Refused(err); ok {
		return nil, nil, &pathError{"path " + quoted(input) + " is not a regular file"}
	}
	if err != nil {
		return nil, nil, notFound(input, err)
	}
	return f, fi, nil
}

func checkRegular(fi fs.FileInfo, input string) error {
	switch {
	case fi.IsDir():
		return &pathError{"path " + quoted(input) + " is a directory; use ls to list it"}
	case !fi.Mode().IsRegular():
		return &pathError{"path " + quoted(input) + " is not a regular file"}
	}
	return nil
}

func notFound(input string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &pathError{"file not found: " + quoted(input)}
	}
	return &pathError{"cannot open " + quoted(input) + ": " + describeFSError(err)}
}

// readAllCtx reads a whole file of known size, giving up when ctx ends.
func readAllCtx(ctx context.Context, f *os.File, size int64) ([]byte, error) {
	buf := make([]byte, 0, size+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), len(buf)+1<<20)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
