package console

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
)

// timers is a fake time.AfterFunc: fire runs the pending ones.
type timers struct{ pending []*fakeTimer }

type fakeTimer struct {
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { s := !t.stopped; t.stopped = true; return s }

func (ts *timers) after(_ time.Duration, f func()) interface{ Stop() bool } {
	t := &fakeTimer{f: f}
	ts.pending = append(ts.pending, t)
	return t
}

func (ts *timers) fire() {
	p := ts.pending
	ts.pending = nil
	for _, t := range p {
		if !t.stopped {
			t.f()
		}
	}
}

func newTestAdapter() (*Adapter, *bytes.Buffer, *timers) {
	out := &bytes.Buffer{}
	ts := &timers{}
	a := New(Options{Out: out, Thread: NewThread(time.Unix(0, 0)), AfterFunc: ts.after})
	return a, out, ts
}

// A run as the bridge shows it: the status message with its working line,
// tool lines that turn ✓, a streamed preview; then the status loses the
// working line and the preview, and the answer is posted with the footer.
func TestTheLogShowsEachLineOnceAndStreamsText(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	header := "⏳ working… · `app` · `bot/console-x`"
	id, _ := a.Post(ctx, th, header)
	edit := func(text string) {
		t.Helper()
		if err := a.Edit(ctx, th, id, text); err != nil {
			t.Fatal(err)
		}
	}
	edit(header + "\n\n⏳ `ls`")
	edit(header + "\n\n✓ `ls` 3ms")
	edit(header + "\n\n✓ `ls` 3ms\n\nThe repo")
	if got := out.String(); !strings.HasSuffix(got, "bot> The repo") {
		t.Fatalf("streamed text is not written as it arrives:\n%s", got)
	}
	edit(header + "\n\n✓ `ls` 3ms\n\nThe repository has")
	// The run ends: the status keeps its tool line, the answer is posted.
	edit("✓ `ls` 3ms")
	a.Post(ctx, th, "The repository has a README.\n\n⏱ 1.2s · 100 in / 20 out")
	ts.fire()

	want := "bot> " + header + "\n" +
		"bot> ⏳ `ls`\n" +
		"bot> ✓ `ls` 3ms\n" +
		"bot> The repository has a README.\n" +
		"bot> ⏱ 1.2s · 100 in / 20 out\n"
	if got := out.String(); got != want {
		t.Fatalf("console shows\n%s\nwant\n%s", got, want)
	}

	// The next run's status starts with the same working line: shown again.
	out.Reset()
	a.Post(ctx, th, header)
	ts.fire()
	if got := out.String(); got != "bot> "+header+"\n" {
		t.Fatalf("the next run's status shows %q", got)
	}
}

// A run without tools: the sealed status gets a new line of its own, which
// follows the answer rather than cutting the streamed line in two.
func TestAnAnswerWithoutToolsReadsAsOnePiece(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	header := "⏳ working… · `app` · `b`"
	id, _ := a.Post(ctx, th, header)
	a.Edit(ctx, th, id, header+"\n\nLine one.\nLine tw")
	a.Edit(ctx, th, id, "✓ `app` · `b`")
	a.Post(ctx, th, "Line one.\nLine two.\n\n⏱ 2s")
	ts.fire()
	want := "bot> " + header + "\n" +
		"bot> Line one.\n" +
		"bot> Line two.\n" +
		"bot> ✓ `app` · `b`\n" +
		"bot> ⏱ 2s\n"
	if got := out.String(); got != want {
		t.Fatalf("console shows\n%s\nwant\n%s", got, want)
	}
}

// A pause in the stream ends the line (so typing does not start on it);
// more text goes on below, marked as a continuation.
func TestAPauseEndsTheStreamedLine(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	id, _ := a.Post(ctx, th, "Thinking about")
	ts.fire()
	a.Edit(ctx, th, id, "Thinking about it.")
	ts.fire()
	if got, want := out.String(), "bot> Thinking about\nbot> … it.\n"; got != want {
		t.Fatalf("console shows %q, want %q", got, want)
	}
}

func TestInputIDsAreUniqueAcrossProcesses(t *testing.T) {
	var ids []string
	h := recordingHandler{ids: &ids}
	for _, prefix := range []string{"p1", "p2"} {
		a := New(Options{Out: &bytes.Buffer{}, InputPrefix: prefix})
		a.h, a.ctx = h, context.Background()
		a.send(context.Background(), "hello")
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("event ids %v: the same first line of two processes must differ", ids)
	}
}

func TestCtrlCStopsThenQuits(t *testing.T) {
	var ids []string
	var texts []string
	a, out, _ := newTestAdapter()
	a.h, a.ctx = recordingHandler{ids: &ids, texts: &texts}, context.Background()
	if quit := a.Interrupt(); quit {
		t.Fatal("the first Ctrl-C quit")
	}
	if len(texts) != 1 || texts[0] != "!stop" {
		t.Fatalf("the first Ctrl-C sent %v, want !stop", texts)
	}
	if !strings.Contains(out.String(), "Ctrl-C again to quit") {
		t.Fatalf("no hint: %q", out.String())
	}
	a.Post(context.Background(), a.Thread(), "⏹ stopped.")
	if quit := a.Interrupt(); !quit {
		t.Fatal("the second Ctrl-C did not quit")
	}
	if got := out.String(); !strings.HasSuffix(got, "bot> ⏹ stopped.\nquitting…\n") {
		t.Fatalf("quitting is not said on a line of its own: %q", got)
	}
}

type recordingHandler struct {
	ids, texts *[]string
}

func (h recordingHandler) Receive(_ context.Context, in chat.Inbound) (chat.Receipt, error) {
	*h.ids = append(*h.ids, in.EventID)
	if h.texts != nil {
		*h.texts = append(*h.texts, in.Text)
	}
	return chat.Accepted, nil
}

func (recordingHandler) Describe(chat.Inbound) (string, string, error) { return "", "", nil }

func (recordingHandler) ActiveThreads(context.Context) ([]chat.ThreadCursor, error) { return nil, nil }

// Narration streamed before a tool call becomes a line of its own above the
// tool line: it is finished in place, not printed twice.
func TestNarrationBeforeAToolIsFinishedInPlace(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	id, _ := a.Post(ctx, th, "⏳ working…")
	a.Edit(ctx, th, id, "⏳ working…\n\nI'll look")
	a.Edit(ctx, th, id, "⏳ working…\n\nI'll look around.\n\n⏳ `ls`")
	ts.fire()
	if got, want := out.String(), "bot> ⏳ working…\nbot> I'll look around.\nbot> ⏳ `ls`\n"; got != want {
		t.Fatalf("console shows %q, want %q", got, want)
	}
}

// The outbox may send the answer before the status edit that drops the
// preview: the answer still finishes the streamed line in place.
func TestAnAnswerPostedBeforeThePreviewLeaves(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	id, _ := a.Post(ctx, th, "⏳ working…\n\nHel")
	a.Edit(ctx, th, id, "⏳ working…\n\nHello wor")
	a.Post(ctx, th, "Hello world.\n\n⏱ 1s")
	a.Edit(ctx, th, id, "✓ done")
	ts.fire()
	// Another run: its working line shows again.
	a.Post(ctx, th, "⏳ working…")
	ts.fire()
	want := "bot> ⏳ working…\nbot> Hello world.\nbot> ⏱ 1s\nbot> ✓ done\nbot> ⏳ working…\n"
	if got := out.String(); got != want {
		t.Fatalf("console shows\n%s\nwant\n%s", got, want)
	}
}

// The bridge seals the status message and posts the answer as two steps of
// its outbox (the answer is stored first), so a quiet moment can come in
// between; the answer the preview showed is not printed again for it,
// whether the pause came before the seal or after it.
func TestAQuietMomentBeforeTheAnswerPrintsItOnce(t *testing.T) {
	header := "⏳ working… · `repo` · `b`"
	seal := "✓ `repo` · `b`"
	for name, pauses := range map[string][]bool{
		"after the seal":            {false, true},
		"before and after the seal": {true, true},
	} {
		t.Run(name, func(t *testing.T) {
			a, out, ts := newTestAdapter()
			ctx := context.Background()
			th := a.Thread()
			id, _ := a.Post(ctx, th, header)
			a.Edit(ctx, th, id, header+"\n\nA slow answer")
			a.Edit(ctx, th, id, header+"\n\nA slow answer that streams.")
			if pauses[0] {
				ts.fire()
			}
			a.Edit(ctx, th, id, seal)
			if pauses[1] {
				ts.fire()
			}
			a.Post(ctx, th, "A slow answer that streams.\n\n⏱ 7s")
			ts.fire()
			if got := out.String(); strings.Count(got, "A slow answer") != 1 || !strings.Contains(got, "bot> "+seal+"\n") || !strings.HasSuffix(got, "bot> ⏱ 7s\n") {
				t.Fatalf("console shows\n%s", got)
			}
		})
	}
}

// An answer longer than the preview it had when the line was ended goes on
// below, like streamed text after a pause, instead of starting again.
func TestAnAnswerLongerThanItsEndedPreviewGoesOn(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	id, _ := a.Post(ctx, th, "⏳ working…")
	a.Edit(ctx, th, id, "⏳ working…\n\nHello wor")
	a.Edit(ctx, th, id, "✓ done")
	ts.fire()
	a.Post(ctx, th, "Hello world.\n\n⏱ 1s")
	ts.fire()
	want := "bot> ⏳ working…\nbot> Hello wor\nbot> ✓ done\nbot> …ld.\nbot> ⏱ 1s\n"
	if got := out.String(); got != want {
		t.Fatalf("console shows\n%s\nwant\n%s", got, want)
	}
}

// The answer posted before the status edit drops the preview, after a quiet
// moment ended the preview's line (the bridge stores the answer before it
// posts it): it is not printed again.
func TestAnAnswerPostedAfterAQuietMomentBeforeThePreviewLeaves(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	id, _ := a.Post(ctx, th, "⏳ working…")
	a.Edit(ctx, th, id, "⏳ working…\n\nThis is ")
	a.Edit(ctx, th, id, "⏳ working…\n\nThis is slow. ")
	ts.fire()
	a.Post(ctx, th, "This is slow.\n\n⏱ 7s")
	a.Edit(ctx, th, id, "✓ done")
	ts.fire()
	want := "bot> ⏳ working…\nbot> This is slow.\nbot> ⏱ 7s\nbot> ✓ done\n"
	if got := out.String(); got != want {
		t.Fatalf("console shows\n%s\nwant\n%s", got, want)
	}
}

// Ctrl-C in the middle of a streamed answer, as the bridge shows it (seen
// by hand): the hint ends the preview's line, the preview grows once more,
// "⏹ stopped." is posted, then the partial answer, then the status seal.
// The partial answer is not printed again below the stop notice.
func TestAnAnswerStoppedMidStreamIsPrintedOnce(t *testing.T) {
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	h := "⏳ working… · `repo` · `b`"
	id, _ := a.Post(ctx, th, h)
	a.Edit(ctx, th, id, h+"\n\nThis is ")
	a.Edit(ctx, th, id, h+"\n\nThis is a slow answer ")
	a.print("^C (press Ctrl-C again to quit)\n")
	a.Edit(ctx, th, id, h+"\n\nThis is a slow answer that ")
	a.Post(ctx, th, "⏹ stopped.")
	a.Post(ctx, th, "This is a slow answer that\n\n⏹ _stopped_\n\n⏱ 2s")
	a.Edit(ctx, th, id, "✓ `repo` · `b`")
	ts.fire()
	got := out.String()
	if n := strings.Count(got, "bot> This is a slow answer that\n"); n != 1 {
		t.Fatalf("the partial answer shows %d times, want once:\n%s", n, got)
	}
	// The stop is said once: the answer's own stop line is not printed.
	if strings.Contains(got, "⏹ _stopped_") {
		t.Errorf("the stop is said twice:\n%s", got)
	}
	for _, want := range []string{"bot> ⏹ stopped.\n", "bot> ⏱ 2s\n", "bot> ✓ `repo` · `b`\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("console lacks %q:\n%s", want, got)
		}
	}
}

// Once its answer is posted (or its seal carried the preview), the status
// message is no one's preview: a later post that repeats its lines is
// printed whole, not taken for the answer again.
func TestAPostAfterTheAnswerIsNotTakenForItsPreview(t *testing.T) {
	for name, c := range map[string]struct {
		sealed bool
		next   string
	}{
		"the answer posted":  {false, "Hello world."},
		"the preview sealed": {true, "✓ done"},
	} {
		t.Run(name, func(t *testing.T) {
			a, out, ts := newTestAdapter()
			ctx := context.Background()
			th := a.Thread()
			id, _ := a.Post(ctx, th, "⏳ working…\n\nHel")
			a.Edit(ctx, th, id, "⏳ working…\n\nHello world.")
			want := "bot> ⏳ working…\nbot> Hello world.\n"
			if c.sealed {
				a.Edit(ctx, th, id, "✓ done")
				ts.fire()
				want += "bot> ✓ done\n"
			}
			a.Post(ctx, th, "Hello world.")
			ts.fire()
			a.Post(ctx, th, c.next)
			ts.fire()
			want += "bot> " + c.next + "\n"
			if got := out.String(); got != want {
				t.Fatalf("console shows\n%s\nwant\n%s", got, want)
			}
		})
	}
}
