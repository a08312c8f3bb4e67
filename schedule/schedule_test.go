package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, s Spec) *Schedule {
	t.Helper()
	if s.Platform == "" {
		s.Platform, s.Channel = "slack", "C1"
	}
	if s.Prompt == "" {
		s.Prompt = "check"
	}
	if s.Name == "" {
		s.Name = "n"
	}
	sc, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%+v): %v", s, err)
	}
	return sc
}

func TestPrevAndNext(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		cron, tz   string
		t          time.Time
		prev, next time.Time
	}{
		{"0 9 * * *", "", utc("2026-03-04T10:00:00Z"), utc("2026-03-04T09:00:00Z"), utc("2026-03-05T09:00:00Z")},
		// At the very time of a firing, that firing is the latest.
		{"0 9 * * *", "", utc("2026-03-04T09:00:00Z"), utc("2026-03-04T09:00:00Z"), utc("2026-03-05T09:00:00Z")},
		{"*/15 * * * *", "", utc("2026-03-04T10:07:30Z"), utc("2026-03-04T10:00:00Z"), utc("2026-03-04T10:15:00Z")},
		// Weekdays: on Monday before nine the latest is Friday's.
		{"0 9 * * 1-5", "", utc("2026-03-09T08:00:00Z"), utc("2026-03-06T09:00:00Z"), utc("2026-03-09T09:00:00Z")},
		{"@monthly", "", utc("2026-03-04T00:00:00Z"), utc("2026-03-01T00:00:00Z"), utc("2026-04-01T00:00:00Z")},
		{"0 0 29 2 *", "", utc("2026-03-04T00:00:00Z"), utc("2024-02-29T00:00:00Z"), utc("2028-02-29T00:00:00Z")},
		// The time zone's nine o'clock, summer time included.
		{"0 9 * * *", "Europe/Paris", utc("2026-07-01T12:00:00Z"), time.Date(2026, 7, 1, 9, 0, 0, 0, paris), time.Date(2026, 7, 2, 9, 0, 0, 0, paris)},
	} {
		s := mustParse(t, Spec{Cron: tc.cron, Timezone: tc.tz})
		prev, ok := s.Prev(tc.t)
		if !ok || !prev.Equal(tc.prev) {
			t.Errorf("%q in %q: Prev(%v) = %v, %v; want %v", tc.cron, tc.tz, tc.t, prev, ok, tc.prev)
		}
		if next := s.Next(tc.t); !next.Equal(tc.next) {
			t.Errorf("%q in %q: Next(%v) = %v; want %v", tc.cron, tc.tz, tc.t, next, tc.next)
		}
	}
}

func TestParseRefusesWithAReason(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "a", Cron: "0 9 * *", Platform: "slack", Channel: "C1", Prompt: "x"}, "expected exactly 5 fields"},
		{Spec{Name: "a", Cron: "61 9 * * *", Platform: "slack", Channel: "C1", Prompt: "x"}, "above maximum"},
		{Spec{Name: "a", Cron: "@every 1h", Platform: "slack", Channel: "C1", Prompt: "x"}, "@every is not a calendar schedule"},
		{Spec{Name: "a", Cron: "TZ=UTC 0 9 * * *", Platform: "slack", Channel: "C1", Prompt: "x"}, "as timezone"},
		{Spec{Name: "a", Cron: "0 9 * * *", Timezone: "Mars/Olympus", Platform: "slack", Channel: "C1", Prompt: "x"}, "unknown time zone"},
		{Spec{Name: "a", Cron: "0 9 30 2 *", Platform: "slack", Channel: "C1", Prompt: "x"}, "never fires"},
		{Spec{Name: "a", Cron: "0 9 * * *", Platform: "slack", Channel: "C1", Prompt: " "}, "prompt is empty"},
		{Spec{Name: "", Cron: "0 9 * * *", Platform: "slack", Channel: "C1", Prompt: "x"}, "name is required"},
	} {
		if _, err := Parse(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%+v) = %v, want an error saying %q", tc.spec, err, tc.want)
		}
	}
}
