package storage

import (
	"errors"
	"fmt"
)

// The errors of the contract. Backends wrap them (test with errors.Is); an
// error names the operation ("storage: append entries: …") and never carries
// user content.
var (
	// ErrNotFound: the thread, session, run, … does not exist.
	ErrNotFound = errors.New("not found")
	// ErrDuplicateEntry: an entry with that session and seq is already stored.
	// The error is a *DuplicateEntryError.
	ErrDuplicateEntry = errors.New("duplicate entry")
	// ErrInvalidTransition: an inbound message cannot move to the asked state from
	// the one it is in (for example a delivered message cannot be dropped).
	ErrInvalidTransition = errors.New("invalid inbound state transition")
	// ErrRunEnded: the run was already finished or interrupted.
	ErrRunEnded = errors.New("run already ended")
	// ErrFull: the disk (or the database's page limit) is full; nothing was stored.
	ErrFull = errors.New("database or disk is full")
	// ErrReadOnly: the database cannot be written; nothing was stored.
	ErrReadOnly = errors.New("database is read-only")
	// ErrCorrupt: stored data is damaged (an integrity check found damage,
	// or a stored entry does not decode).
	ErrCorrupt = errors.New("database is corrupt")
	// ErrForeignDatabase: Open found a database (or schema) with tables that
	// threadsmith did not create; it is left as it was.
	ErrForeignDatabase = errors.New("not a threadsmith database")
	// ErrSchemaTooNew: the database was written by a newer threadsmith; Open
	// refuses it and leaves it as it was.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("database is closed")
	// ErrUnavailable: the database could not be reached, or the connection
	// was lost during the call (a restart, a network cut). A write may or
	// may not have happened; the same call may succeed later.
	ErrUnavailable = errors.New("database unavailable")
)

// DuplicateEntryError says which entry was already stored. No entry of the call
// that hit it was stored.
type DuplicateEntryError struct {
	SessionID string
	Seq       int64
}

func (e *DuplicateEntryError) Error() string {
	return fmt.Sprintf("duplicate entry: session %s already has seq %d", e.SessionID, e.Seq)
}

// Is makes errors.Is(err, ErrDuplicateEntry) hold.
func (e *DuplicateEntryError) Is(target error) bool { return target == ErrDuplicateEntry }
