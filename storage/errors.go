package storage

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

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
	// ErrNotDatabase: the file is not a SQLite database, or its structure is damaged.
	ErrNotDatabase = errors.New("not a SQLite database, or a damaged one")
	// ErrCorrupt: the integrity check found damage.
	ErrCorrupt = errors.New("database is corrupt")
	// ErrForeignDatabase: the file is a SQLite database that threadsmith did not create.
	ErrForeignDatabase = errors.New("not a threadsmith database")
	// ErrSchemaTooNew: the file was written by a newer threadsmith.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("database is closed")
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

// Primary SQLite result codes this package reacts to. The driver reports
// extended codes; the primary code is the low byte.
const (
	codeConstraint = sqlite3.SQLITE_CONSTRAINT
	codeFull       = sqlite3.SQLITE_FULL
	codeReadOnly   = sqlite3.SQLITE_READONLY
	codeNotADB     = sqlite3.SQLITE_NOTADB
	codeCorrupt    = sqlite3.SQLITE_CORRUPT
	codeBusy       = sqlite3.SQLITE_BUSY
)

// Extended codes, compared whole.
const (
	codePrimaryKey = sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	codeForeignKey = sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
)

// isExtCode reports whether err carries the SQLite extended result code.
func isExtCode(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == code
}

// isCode reports whether err carries the SQLite primary result code.
func isCode(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == code
}

// wrapCode adds ErrFull or ErrReadOnly to errors that mean them, so callers can
// test with errors.Is without knowing SQLite.
func wrapCode(err error) error {
	switch {
	case err == nil:
		return nil
	case isCode(err, codeFull) && !errors.Is(err, ErrFull):
		return codeError{ErrFull, err}
	case isCode(err, codeReadOnly) && !errors.Is(err, ErrReadOnly):
		return codeError{ErrReadOnly, err}
	}
	return err
}

// codeError is a driver error that also matches one of this package's
// sentinels; its text is the driver's, which already says the same.
type codeError struct{ sentinel, err error }

func (e codeError) Error() string   { return e.err.Error() }
func (e codeError) Unwrap() []error { return []error{e.sentinel, e.err} }

// opError wraps an error of operation op ("append entries", …).
func opError(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("storage: %s: %w", op, wrapCode(err))
}
