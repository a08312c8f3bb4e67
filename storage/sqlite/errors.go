package sqlite

import (
	"errors"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// ErrNotDatabase: the file is not a SQLite database, or its structure is
// damaged; Open leaves it as it was.
var ErrNotDatabase = errors.New("not a SQLite database, or a damaged one")

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
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code() == code
}

// isCode reports whether err carries the SQLite primary result code.
func isCode(err error, code int) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code()&0xff == code
}

// wrapCode adds ErrFull or ErrReadOnly to errors that mean them, so callers can
// test with errors.Is without knowing SQLite.
func wrapCode(err error) error {
	switch {
	case err == nil:
		return nil
	case isCode(err, codeFull) && !errors.Is(err, storage.ErrFull):
		return backend.Sentinel(storage.ErrFull, err)
	case isCode(err, codeReadOnly) && !errors.Is(err, storage.ErrReadOnly):
		return backend.Sentinel(storage.ErrReadOnly, err)
	}
	return err
}

// opError wraps an error of operation op ("append entries", …).
func opError(op string, err error) error {
	return backend.OpError(op, wrapCode(err))
}
