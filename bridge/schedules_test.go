package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/clock"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/schedule"
)

// withSchedules gives a rig's bridge schedules on clk.
func withSchedules(clk *clock.Manual, specs ...schedule.Spec) rigOption {
	return func(c *Config, _ *Platform) {
		for _, sp := range specs {
			s, err := schedule.Parse(sp)
			if err != nil {
				panic(err)
			}
			c.Schedules = append(c.Schedules, s)
		}
		c.ScheduleClock = clk
	}
}

// waitTimers waits until n schedule runners wait on clk.
func (r *rig) waitTimers(clk *clock.Manual, n int) {
	r.tb.Helper()
	r.waitUntil("the schedules to wait for their time", func() bool { return clk.Waiting() >= n })
}

// Two bridges on one store (replicas), each running the schedules: each
// firing opens one thread, on one of them, and its request runs once.
func TestScheduleFiresOncePerReplicaSet(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 3, 2, 8, 59, 0, 0, time.UTC))
	spec := schedule.Spec{Name: "nightly", Cron: "0 9 * * *", Platform: "test", Channel: "C-ops", Prompt: "check the build"}
	a := newRig(t, leased("replica-a"), withSchedules(clk, spec))
	b := newRig(t, replicaOf(a, "replica-b"), withSchedules(clk, spec))
	a.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("green") })
	openings := func() int { return len(a.chat.Openings()) + len(b.chat.Openings()) }

	for day := 1; day <= 2; day++ {
		a.waitTimers(clk, 2)
		if day == 1 {
			clk.Advance(time.Minute) // 09:00
		} else {
			clk.Advance(24 * time.Hour)
		}
		a.waitUntil("the firing's thread", func() bool { return openings() == day })
		a.waitUntil("the firing's run", func() bool { return len(a.llm.Requests()) == day })
	}
	a.waitTimers(clk, 2) // both runners are past the second firing
	a.flush()
	b.flush()
	if n := openings(); n != 2 {
		t.Errorf("%d threads opened for two firings on two replicas, want 2", n)
	}
	if n := len(a.llm.Requests()); n != 2 {
		t.Errorf("%d model requests for two firings, want 2", n)
	}
}

// With thread: keep every firing continues the schedule's own thread; and
// !schedules lists the schedules with their next firing.
func TestScheduleKeepContinuesItsThread(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 3, 2, 8, 59, 0, 0, time.UTC))
	r := newRig(t, withSchedules(clk,
		schedule.Spec{Name: "standup", Cron: "0 9 * * 1-5", Timezone: "Europe/Paris", Platform: "test", Channel: "C-ops", Prompt: "what changed since yesterday?", Keep: true}),
		func(c *Config, _ *Platform) { c.Now = clk.Now })
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("not much") })

	// Monday 09:00 in Paris (08:00 UTC) passed before the schedule was
	// added: its first firing is Tuesday's.
	r.waitTimers(clk, 1)
	clk.Advance(23*time.Hour + time.Minute) // Tuesday 08:00 UTC, 09:00 in Paris
	r.waitUntil("the first firing's thread", func() bool { return len(r.chat.Openings()) == 1 })
	th := r.chat.Openings()[0]
	r.waitRuns(th, 1)
	r.waitTimers(clk, 1)
	clk.Advance(24 * time.Hour)
	r.waitRuns(th, 2)
	if n := len(r.chat.Openings()); n != 1 {
		t.Errorf("%d threads opened by a schedule with thread: keep, want 1", n)
	}
	if got := userTexts(r.lastRequest()); len(got) != 2 {
		t.Errorf("the second firing's request has user messages %q, want both firings'", got)
	}

	r.say(th, alice, "!schedules", false)
	r.waitText(th, "*standup* `0 9 * * 1-5` (Europe/Paris) · test C-ops · its own thread · next Thu 5 Mar 09:00 CET")
	if tr := r.chat.Transcript(th); strings.Count(tr, "*standup*") != 1 {
		t.Errorf("!schedules answered %d times:\n%s", strings.Count(tr, "*standup*"), tr)
	}
}

// !schedules in a thread the bridge has no record of (a DM, a channel
// thread that is no session) lists the schedules, not the asker's sessions.
func TestSchedulesAnsweredWhereNoThreadIs(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 3, 2, 8, 59, 0, 0, time.UTC))
	r := newRig(t, withSchedules(clk,
		schedule.Spec{Name: "standup", Cron: "0 9 * * 1-5", Timezone: "Europe/Paris", Platform: "test", Channel: "C-ops", Prompt: "what changed?"}),
		func(c *Config, _ *Platform) { c.Now = clk.Now })
	th := testThread("83.1")
	r.say(th, alice, "!schedules", false)
	r.waitText(th, "*standup* `0 9 * * 1-5`")
	if tr := r.chat.Transcript(th); strings.Contains(tr, "sessions") {
		t.Errorf("!schedules outside a thread answered with the sessions list:\n%s", tr)
	}
	if _, err := r.thread(th); err == nil {
		t.Errorf("!schedules outside a thread made one")
	}
}
