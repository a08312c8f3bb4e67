package tools

import (
	"hash/crc64"
	"sync"
	"time"
)

// ReadTracker remembers which files the session has read, and what they held
// then, so that edit can refuse to change a file the model has not seen or that
// changed under it (another tool, a bash command, a person pushing to the branch).
// The content hash decides; size and mtime are kept for messages.
//
// write does not consult it: writing a whole file does not depend on its old
// content (pi allows it too). Successful writes and edits record the new content,
// so a model can edit what it just wrote without reading it back.
type ReadTracker struct {
	mu    sync.Mutex
	files map[string]fileStamp // by absolute path
}

type fileStamp struct {
	size  int64
	mtime time.Time
	sum   uint64
}

var crcTable = crc64.MakeTable(crc64.ECMA)

// NewReadTracker returns an empty tracker. Give one to all tools of a session.
func NewReadTracker() *ReadTracker {
	return &ReadTracker{files: make(map[string]fileStamp)}
}

func (r *ReadTracker) record(abs string, s fileStamp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[abs] = s
}

func (r *ReadTracker) lookup(abs string) (fileStamp, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.files[abs]
	return s, ok
}

func stampOf(content []byte, mtime time.Time) fileStamp {
	return fileStamp{size: int64(len(content)), mtime: mtime, sum: crc64.Checksum(content, crcTable)}
}
