// Package schedule runs the configured schedules: at each firing of a
// schedule's five-field cron expression, in its time zone, it asks for the
// schedule's request to be opened (Config.Fire), once per firing whatever
// the number of replicas and restarts.
//
// Once: each firing is leased in storage (storage.FiringStore) to the
// runner that claims it, and recorded as done when Fire succeeded. A
// firing that fails, or whose runner died, is tried again (by any runner,
// once its lease lapsed) until the schedule's next firing is due. A
// firing missed while no runner ran is run at start when it is the
// schedule's latest (it is then less than one period late); earlier ones
// are not. A schedule that never fired before starts with its next firing.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones on machines without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// Spec is a schedule as configured.
type Spec struct {
	Name string
	// Cron is a standard five-field expression (minute hour day-of-month
	// month day-of-week), or a descriptor such as @daily or @hourly.
	Cron string
	// Timezone is an IANA zone name ("Europe/Paris"); "" is UTC.
	Timezone string
	// Platform and Channel are where its threads open; Repo is the
	// repository they work on ("" takes the channel's).
	Platform, Channel, Repo string
	// Prompt is the request of each firing.
	Prompt string
	// Keep makes every firing continue the schedule's own thread instead
	// of opening a new one.
	Keep bool
}

// Schedule is a parsed Spec.
type Schedule struct {
	Spec
	sched *cron.SpecSchedule // its Location is the schedule's time zone
}

// parser takes the standard five fields and the descriptors (@daily …).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func parseCron(expr, timezone string) (*cron.SpecSchedule, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, errors.New("the cron expression is empty")
	case strings.HasPrefix(expr, "@every"):
		return nil, fmt.Errorf("%q: @every is not a calendar schedule; use five fields (minute hour day month weekday)", expr)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, fmt.Errorf("%q: give the time zone as timezone, not in the expression", expr)
	}
	loc := time.UTC
	if timezone != "" {
		var err error
		if loc, err = time.LoadLocation(timezone); err != nil {
			return nil, fmt.Errorf("unknown time zone %q", timezone)
		}
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%q is not a calendar schedule", expr)
	}
	spec.Location = loc
	if spec.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%q never fires", expr)
	}
	return spec, nil
}

// Parse checks s and returns its Schedule.
func Parse(s Spec) (*Schedule, error) {
	if strings.TrimSpace(s.Name) == "" {
		return nil, errors.New("schedule: a name is required")
	}
	if strings.TrimSpace(s.Prompt) == "" {
		return nil, fmt.Errorf("schedule %s: the prompt is empty", s.Name)
	}
	if s.Platform == "" || s.Channel == "" {
		return nil, fmt.Errorf("schedule %s: a platform and a channel are required", s.Name)
	}
	spec, err := parseCron(s.Cron, s.Timezone)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", s.Name, err)
	}
	return &Schedule{Spec: s, sched: spec}, nil
}

// Next returns the schedule's first firing after t.
func (s *Schedule) Next(t time.Time) time.Time {
	return s.sched.Next(t)
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.sched.Location }

// maxLookBack bounds how far Prev looks for a firing: the cron library
// looks five years ahead.
const maxLookBack = 5 * 366 * 24 * time.Hour

// Prev returns the schedule's latest firing at or before t; false when it
// has none within five years.
func (s *Schedule) Prev(t time.Time) (time.Time, bool) {
	n1 := s.sched.Next(t)
	if n1.IsZero() {
		return time.Time{}, false
	}
	step := max(s.sched.Next(n1).Sub(n1), time.Minute)
	// Look back in windows that double, from about one period: the first
	// firing after the window's start that is not after t begins a walk
	// forward to the last such firing.
	for back := step; back <= 2*maxLookBack; back *= 2 {
		f := s.sched.Next(t.Add(-back))
		if f.IsZero() || f.After(t) {
			continue
		}
		for {
			g := s.sched.Next(f)
			if g.IsZero() || g.After(t) {
				return f, true
			}
			f = g
		}
	}
	return time.Time{}, false
}
