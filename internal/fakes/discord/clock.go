package discordfake

import (
	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	"strconv"
	"time"
)

// Clock tells the fake what time it is.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told, so a test can cross a
// rate-limit window or the interaction deadline without sleeping.
type ManualClock = clock.Manual

// NewManualClock returns a clock that reads start until advanced.
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }

// discordEpochMS is the first millisecond of 2015, the epoch of Discord snowflakes.
const discordEpochMS = 1420070400000

// nextIDLocked returns a fresh snowflake: the clock's milliseconds since the
// Discord epoch in the high bits, strictly increasing even when the clock
// stands still, so ids sort in creation order. Caller holds s.mu.
func (s *Server) nextIDLocked() string {
	ms := s.cfg.clock.Now().UnixMilli() - discordEpochMS
	if ms < 0 {
		ms = 0
	}
	id := uint64(ms) << 22
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return strconv.FormatUint(id, 10)
}

// parseSnowflake reads an id; malformed ids read as 0.
func parseSnowflake(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}

// snowflakeLess orders two snowflakes numerically.
func snowflakeLess(a, b string) bool { return parseSnowflake(a) < parseSnowflake(b) }
