package console

import (
	"context"
	"strings"
	"testing"
)

// !stop typed while the answer streams, as the bridge shows it: the stop
// notice is posted, the status message drops its preview, then the partial
// answer is posted with its own "⏹ stopped". The partial answer shows once,
// and so does the stop.
func TestAStoppedAnswerShowsOnceWithOneStopNotice(t *testing.T) {
	for name, typed := range map[string]bool{"typed !stop": true, "Ctrl-C": false} {
		t.Run(name, func(t *testing.T) {
			a, out, ts := newTestAdapter()
			a.terminal = true
			ctx := context.Background()
			th := a.Thread()
			h := "⏳ working… · `repo` · `b`"
			id, _ := a.Post(ctx, th, h)
			a.Edit(ctx, th, id, h+"\n\nPartial answer ")
			a.Edit(ctx, th, id, h+"\n\nPartial answer so far")
			if typed {
				a.mu.Lock()
				a.r.typed()
				a.mu.Unlock()
			} else {
				a.print("^C (press Ctrl-C again to quit)\n")
			}
			a.Post(ctx, th, "⏹ stopped.")
			a.Edit(ctx, th, id, "✓ `repo` · `b`")
			a.Post(ctx, th, "Partial answer so far\n\n⏹ _stopped_\n\n_⏱ 285ms_")
			ts.fire()
			got := out.String()
			if n := strings.Count(got, "Partial answer so far"); n != 1 {
				t.Errorf("the partial answer shows %d times, want once:\n%s", n, got)
			}
			if n := strings.Count(got, "⏹"); n != 1 {
				t.Errorf("%d stop notices, want one:\n%s", n, got)
			}
			if !strings.Contains(got, "⏱ 285ms") {
				t.Errorf("the footer is missing:\n%s", got)
			}
		})
	}
}

// Quitting (a second Ctrl-C) while a run goes on: the notice of the run
// the shutdown cut off says the person quit, not that the bot restarts.
func TestQuittingSaysYouQuit(t *testing.T) {
	var ids, texts []string
	a, out, _ := newTestAdapter()
	a.h, a.ctx = recordingHandler{ids: &ids, texts: &texts}, context.Background()
	a.Interrupt()
	if quit := a.Interrupt(); !quit {
		t.Fatal("the second Ctrl-C did not quit")
	}
	a.Post(context.Background(), a.Thread(), "⚠️ This run was interrupted: the bot is restarting. Send a message to continue once it is back.")
	got := out.String()
	if strings.Contains(got, "restarting") || !strings.Contains(got, "stopped: you quit") {
		t.Fatalf("quitting is reported as:\n%s", got)
	}
}

// Ctrl-D while the answer streams: the shutdown adds its notice to the
// status message, then posts the partial answer and seals the status, in
// either order. The partial answer shows once, and one stop notice says
// the person quit.
func TestQuittingMidAnswerShowsItOnce(t *testing.T) {
	for name, postFirst := range map[string]bool{"answer first": true, "seal first": false} {
		t.Run(name, func(t *testing.T) {
			a, out, ts := newTestAdapter()
			a.terminal = true
			ctx := context.Background()
			th := a.Thread()
			h := "⏳ working… · `repo` · `b`"
			id, _ := a.Post(ctx, th, h)
			a.Edit(ctx, th, id, h+"\n\nPartial ")
			a.Edit(ctx, th, id, h+"\n\nPartial answer so far")
			a.mu.Lock()
			a.quitting = true // the end of input
			a.mu.Unlock()
			a.print("\n")
			note := "⚠️ This run was interrupted: the bot is restarting. Send a message to continue once it is back."
			a.Edit(ctx, th, id, h+"\n\nPartial answer so far\n\n"+note)
			answer := "Partial answer so far\n\n⏹ _stopped_\n\n⏱ 4.1s"
			if postFirst {
				a.Post(ctx, th, answer)
				a.Edit(ctx, th, id, "✓ `repo` · `b`\n\n"+note)
			} else {
				a.Edit(ctx, th, id, "✓ `repo` · `b`\n\n"+note)
				a.Post(ctx, th, answer)
			}
			ts.fire()
			got := out.String()
			if n := strings.Count(got, "Partial answer so far"); n != 1 {
				t.Errorf("the partial answer shows %d times, want once:\n%s", n, got)
			}
			if n := strings.Count(got, "⏹"); n != 1 || !strings.Contains(got, "stopped: you quit") {
				t.Errorf("want one stop notice, saying the person quit:\n%s", got)
			}
		})
	}
}

// The same as the bridge does it when the preview came in one piece: the
// status drops it, and the shutdown's notice (in the status) and the
// answer come in either order.
func TestQuittingWhenThePreviewCameInOnePiece(t *testing.T) {
	for name, noteFirst := range map[string]bool{"notice first": true, "answer first": false} {
		t.Run(name, func(t *testing.T) {
			a, out, ts := newTestAdapter()
			a.terminal = true
			ctx := context.Background()
			th := a.Thread()
			h := "⏳ working… · `repo` · `b`"
			id, _ := a.Post(ctx, th, h)
			a.Edit(ctx, th, id, h+"\n\nPartial answer so far")
			a.mu.Lock()
			a.quitting = true // the end of input
			a.mu.Unlock()
			a.print("\n")
			a.Edit(ctx, th, id, h)
			note := func() {
				a.Edit(ctx, th, id, "⚠️ This run was interrupted: the bot is restarting. Send a message to continue once it is back.")
			}
			if noteFirst {
				note()
			}
			a.Post(ctx, th, "Partial answer so far\n\n⏹ _stopped_\n\n_⏱ 4.0s_")
			if !noteFirst {
				note()
			}
			ts.fire()
			got := out.String()
			if n := strings.Count(got, "Partial answer so far"); n != 1 {
				t.Errorf("the partial answer shows %d times, want once:\n%s", n, got)
			}
			if n := strings.Count(got, "⏹"); n != 1 || !strings.Contains(got, "stopped: you quit") || !strings.Contains(got, "⏱ 4.0s") {
				t.Errorf("want one stop notice, saying the person quit, and the footer:\n%s", got)
			}
		})
	}
}

// The model writes a line that starts as a stop does ("⏹ stopped …")
// before the person stops the run: the bot's stop that follows still
// shows, once.
func TestAStopLineTheModelWroteHidesNoStop(t *testing.T) {
	a, out, ts := newTestAdapter()
	a.terminal = true
	ctx := context.Background()
	th := a.Thread()
	a.send(ctx, "do it")
	h := "⏳ working… · `repo` · `b`"
	id, _ := a.Post(ctx, th, h)
	a.Edit(ctx, th, id, h+"\n\nNothing to see\n⏹ stopped by nobody\nstill going")
	ts.fire()
	before := len(out.String())
	a.mu.Lock()
	a.r.typed()
	a.mu.Unlock()
	a.send(ctx, "!stop")
	a.Post(ctx, th, "⏹ stopped.")
	a.Edit(ctx, th, id, "✓ `repo` · `b`")
	a.Post(ctx, th, "Nothing to see\n⏹ stopped by nobody\nstill going\n\n⏹ _stopped_\n\n_⏱ 285ms_")
	ts.fire()
	after := out.String()[before:]
	if n := strings.Count(after, "⏹"); n != 1 {
		t.Errorf("after !stop, %d stop notices, want one:\n%s", n, after)
	}
}
