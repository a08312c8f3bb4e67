package bridge

// The configured schedules (package schedule): their firings open threads
// through Open, and !schedules lists them.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/schedule"
)

// scheduleAuthorID is the author id of a schedule's requests.
const scheduleAuthorID = "schedule"

// runSchedules fires the configured schedules until ctx ends.
func (b *Bridge) runSchedules(ctx context.Context) {
	owner := b.cfg.Lease.Owner
	if owner == "" {
		owner = "threadsmith"
	}
	schedule.Run(ctx, schedule.Config{
		Schedules: b.cfg.Schedules,
		Store:     b.cfg.Store,
		Owner:     owner,
		Fire:      b.fireSchedule,
		Clock:     b.cfg.ScheduleClock,
		Logger:    b.cfg.Logger,
	})
}

// fireSchedule opens s's firing at `at`: a thread of its own, or with
// thread: keep the schedule's thread, whose request is s's prompt. The
// delivery is the firing, so a firing opened again opens nothing new.
func (b *Bridge) fireSchedule(ctx context.Context, s *schedule.Schedule, at time.Time) error {
	req := OpenRequest{
		Platform: s.Platform, Channel: s.Channel, Repo: s.Repo,
		Title:    "⏰ " + s.Name,
		Text:     s.Prompt,
		Author:   chat.Author{ID: scheduleAuthorID, Name: "schedule " + s.Name},
		Origin:   "schedule " + s.Name,
		Delivery: fmt.Sprintf("schedule/%s/%d", s.Name, at.Unix()),
	}
	if s.Keep {
		req.Thread = "schedule/" + s.Name
	}
	_, err := b.Open(ctx, req)
	return err
}

// schedulesCommand answers !schedules.
func (t *thread) schedulesCommand(commandCall) { t.say(t.b.schedulesText()) }

// schedulesText lists the schedules with their next firing.
func (b *Bridge) schedulesText() string {
	if len(b.cfg.Schedules) == 0 {
		return "⏰ No schedules are configured."
	}
	now := b.cfg.Now()
	var sb strings.Builder
	sb.WriteString("⏰ *Schedules*:")
	for _, s := range b.cfg.Schedules {
		next := s.Next(now).In(s.Location())
		where := s.Platform + " " + s.Channel
		if s.Repo != "" {
			where += " · `" + s.Repo + "`"
		}
		thread := "a new thread each time"
		if s.Keep {
			thread = "its own thread"
		}
		fmt.Fprintf(&sb, "\n• *%s* `%s` (%s) · %s · %s · next %s", s.Name, s.Cron, s.Location(), where, thread, next.Format("Mon 2 Jan 15:04 MST"))
	}
	return sb.String()
}
