package console

import (
	"context"
	"strings"
	"testing"
)

// Ctrl-D while a preview that came in one piece is shown, as the bridge's
// shutdown does it: the status drops the preview, gains the shutdown's
// notice, then is replaced by the notice alone, and the partial answer is
// posted; quiet moments may come between any two steps. The partial answer
// shows once.
func TestQuittingWhenTheNoticeReplacesTheStatus(t *testing.T) {
	const note = "⚠️ This run was interrupted: the bot is restarting. Send a message to continue once it is back."
	h := "⏳ working… · `001` · `b`"
	for fires := 0; fires < 32; fires++ {
		a, out, ts := newTestAdapter()
		a.terminal = true
		ctx := context.Background()
		th := a.Thread()
		f := func(bit int) {
			if fires&(1<<bit) != 0 {
				ts.fire()
			}
		}
		id, _ := a.Post(ctx, th, h)
		f(0)
		a.Edit(ctx, th, id, h+"\n\nPartial answer so far")
		f(1)
		a.mu.Lock()
		a.quitting = true
		a.mu.Unlock()
		a.print("\n")
		f(2)
		a.Edit(ctx, th, id, h)
		f(3)
		a.Edit(ctx, th, id, h+"\n\n"+note)
		a.Edit(ctx, th, id, note)
		f(4)
		a.Post(ctx, th, "Partial answer so far\n\n⏹ _stopped_\n\n_⏱ 4.0s · 0 in_")
		ts.fire()
		got := out.String()
		if n := strings.Count(got, "Partial answer so far"); n != 1 {
			t.Errorf("fires %05b: the partial answer shows %d times, want once:\n%s", fires, n, got)
		}
	}
}

// A run's status is sealed after its answer was posted, and the next run's
// status, which starts with the same working line, follows at once: it is
// shown, not taken for the answer repeating the sealed status's header.
func TestTheNextRunsStatusShowsAfterALateSeal(t *testing.T) {
	a, out, ts := newTestAdapter()
	a.terminal = true
	ctx := context.Background()
	th := a.Thread()
	h := "⏳ working… · `001` · `b`"
	id, _ := a.Post(ctx, th, h)
	a.Edit(ctx, th, id, h+"\n\nheld answer")
	a.Post(ctx, th, "held answer")
	a.Edit(ctx, th, id, h)
	a.Post(ctx, th, "steered: going left\n\n_⏱ 707ms_")
	a.Edit(ctx, th, id, "✓ `001` · `b`")
	a.mu.Lock()
	a.r.typed()
	a.mu.Unlock()
	before := out.Len()
	a.Post(ctx, th, h)
	ts.fire()
	if got := out.String()[before:]; !strings.Contains(got, "bot> "+h) {
		t.Fatalf("the next run's status is not shown: %q\nwhole log:\n%s", got, out.String())
	}
}
