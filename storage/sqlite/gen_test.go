package sqlite_test

import (
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
)

// genEntries returns n realistic entries (see sessiongen.Entries).
func genEntries(seed uint64, n int) []transcript.Entry { return sessiongen.Entries(seed, n) }
