package bridge

// Budgets (Config.Budget): what a person's requests may cost in a day (UTC)
// and what a thread may cost, in the currency of the models' prices. Spend
// is read from storage, so that it survives a restart and counts every
// replica's runs: a person's from AuthorSpend, a thread's from ThreadSpend.
// Input that would start a run is refused while a budget is used up
// (refuseOverBudget, on the owner); a run is stopped before its next model
// call once one is (the session's before-model-call hook, off the owner);
// !status shows what is left. A reply of a model without a price costs
// nothing here.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// Budget caps what the models cost, in the currency of their prices; 0 is
// no limit.
type Budget struct {
	// PerUserDaily caps what the runs one person started cost in a day
	// (UTC): a run counts whole on the day it ends.
	PerUserDaily float64
	// PerThread caps what one thread's runs cost, over all its sessions.
	PerThread float64
}

// on reports whether any budget is set.
func (b Budget) on() bool { return b.PerUserDaily > 0 || b.PerThread > 0 }

// spend is what a person spent today and what a thread cost.
type spend struct {
	user, thread float64
	// resetAt is when the person's day ends (midnight UTC).
	resetAt time.Time
}

// dayStart is the start of now's day, UTC.
func dayStart(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// spendOf reads what authorID (on platform) spent today and what the thread
// cost; an empty authorID spent nothing.
func (b *Bridge) spendOf(ctx context.Context, threadID int64, platform, authorID string) (spend, error) {
	now := b.cfg.Now()
	day := dayStart(now)
	s := spend{resetAt: day.Add(24 * time.Hour)}
	var errs []error
	if b.cfg.Budget.PerUserDaily > 0 && authorID != "" {
		u, err := b.cfg.Store.AuthorSpend(ctx, platform, authorID, day)
		s.user = u.Cost
		errs = append(errs, err)
	}
	if b.cfg.Budget.PerThread > 0 {
		u, err := b.cfg.Store.ThreadSpend(ctx, threadID)
		s.thread = u.Cost
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// overBudget says which budget s has used up, as the thread is told it
// ("your daily budget is used up: …"), or "" when none is.
func (b *Bridge) overBudget(s spend) string {
	bud := b.cfg.Budget
	now := b.cfg.Now()
	switch {
	case bud.PerUserDaily > 0 && s.user >= bud.PerUserDaily:
		return fmt.Sprintf("your daily budget is used up: %s of %s spent today; it resets at midnight UTC (in %s)",
			money(s.user), money(bud.PerUserDaily), untilReset(s.resetAt.Sub(now)))
	case bud.PerThread > 0 && s.thread >= bud.PerThread:
		return fmt.Sprintf("this thread's budget is used up: it cost %s of %s; it does not reset (a new thread has a budget of its own)",
			money(s.thread), money(bud.PerThread))
	}
	return ""
}

// budgetCheck reads the spend and says which budget is used up ("" for
// none). A spend it cannot read does not stop anyone: it is logged.
func (b *Bridge) budgetCheck(ctx context.Context, threadID int64, platform, authorID string) string {
	if !b.cfg.Budget.on() {
		return ""
	}
	s, err := b.spendOf(ctx, threadID, platform, authorID)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Error("reading the spend for the budgets; not enforced this time", "thread", threadID, "err", err)
		}
		return ""
	}
	return b.overBudget(s)
}

// refuseOverBudget refuses input that would start a run while its author's
// or the thread's budget is used up: the thread is told which, what was
// spent and when it resets, the input is dropped and nothing reaches the
// model. It reports whether it refused.
func (t *thread) refuseOverBudget(pi *pendingInput) bool {
	over := t.b.budgetCheck(t.b.ctx, t.rec.ID, t.ref.Platform, pi.in.Author.ID)
	if over == "" {
		return false
	}
	t.markInbound(pi.id, storage.InboundDropped, "over budget")
	text := "💸 Not started: " + over + "."
	if !t.endPendingStatus(text) {
		t.say(text)
	}
	return true
}

// budgetHook is the session's before-model-call hook: it stops the run
// before its next model call once the run's requester or the thread has
// used up a budget. It runs off the owner and asks it who the run is for.
func (t *thread) budgetHook(threadID int64, platform string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		st := t.askOwner(ctx)
		if st.context == "" {
			return nil // the thread ends: nothing more is called
		}
		if over := t.b.budgetCheck(ctx, threadID, platform, st.runAuthor); over != "" {
			return errors.New("⏹ stopped: " + over + ".")
		}
		return nil
	}
}

// budgetLines are !status's lines of what is left of the budgets, for
// authorID asking; none when no budget is set.
func (t *thread) budgetLines(ctx context.Context, authorID string) string {
	bud := t.b.cfg.Budget
	if !bud.on() {
		return ""
	}
	s, err := t.b.spendOf(ctx, t.rec.ID, t.ref.Platform, authorID)
	if err != nil {
		t.log.Warn("reading the spend for !status", "err", err)
		return "• Budget: cannot be read now\n"
	}
	var b strings.Builder
	if bud.PerUserDaily > 0 && authorID != "" {
		fmt.Fprintf(&b, "• Your budget today: %s left of %s (resets at midnight UTC, in %s)\n",
			money(max(bud.PerUserDaily-s.user, 0)), money(bud.PerUserDaily), untilReset(s.resetAt.Sub(t.b.cfg.Now())))
	}
	if bud.PerThread > 0 {
		fmt.Fprintf(&b, "• Thread budget: %s left of %s\n", money(max(bud.PerThread-s.thread, 0)), money(bud.PerThread))
	}
	if t.sess != nil && t.b.modelInfo(t.sess.ModelName()).Price.zero() {
		fmt.Fprintf(&b, "• `%s` has no price: its replies cost nothing against the budgets\n", t.sess.ModelName())
	}
	return b.String()
}

// money shows an amount in the prices' currency: cents, or four decimals
// below one.
func money(v float64) string {
	if v == 0 || v >= 1 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// untilReset shows the time to a reset to the minute ("3h12m", "45m").
func untilReset(d time.Duration) string {
	d = d.Round(time.Minute)
	if d < time.Minute {
		return "less than a minute"
	}
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}
