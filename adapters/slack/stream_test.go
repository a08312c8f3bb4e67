package slack

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

func streaming(c *Config, _ *Options) { c.Streaming = true }

var streamKeyed = chat.PostKey{ID: "k1", Stream: true}

// appended is what the stream calls of message ts carried, in order.
func appended(srv *slackfake.Server, ts string) string {
	var b strings.Builder
	for _, c := range srv.Calls() {
		switch {
		case c.Method == "chat.startStream" && c.Error == "":
			b.WriteString(c.Params.Get("markdown_text"))
		case c.Method == "chat.appendStream" && c.Error == "" && c.Params.Get("ts") == ts:
			b.WriteString(c.Params.Get("markdown_text"))
		}
	}
	return b.String()
}

func lastText(srv *slackfake.Server, th chat.ThreadRef) string {
	msgs := srv.Messages(th.Channel, th.Thread)
	return msgs[len(msgs)-1].Text
}

// startStreamed starts a streaming adapter on srv and posts text as a
// stream to U0ALICE in a new thread of C0DEV.
func startStreamed(t *testing.T, srv *slackfake.Server, text string) (*Adapter, context.Context, chat.ThreadRef, string) {
	t.Helper()
	a := newAdapter(t, srv, streaming)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	a.noteAsker(th, "U0ALICE")
	id, err := a.PostOnce(ctx, th, text, streamKeyed)
	if err != nil {
		t.Fatal(err)
	}
	return a, ctx, th, id
}

// The person's mention reaches the bot through Run (which notes them as the
// stream's recipient); the status then streams: each edit that adds text
// is one append of what it adds, and the message ends whole and in order.
func TestStreamedStatusArrivesWholeAndInOrder(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	rec := newRecorder()
	a := startSocket(t, srv, rec, streaming)
	ctx := testContext(t)
	root := srv.Mention("C0DEV", "U0ALICE", "go", "")
	in := rec.nextFor(t, root)
	th := in.Thread

	id, err := a.PostOnce(ctx, th, "working…", streamKeyed)
	if err != nil {
		t.Fatal(err)
	}
	start := srv.CallsTo("chat.startStream")
	if len(start) != 1 || start[0].Params.Get("recipient_user_id") != "U0ALICE" || start[0].Params.Get("recipient_team_id") != srv.TeamID() {
		t.Fatalf("chat.startStream calls %+v, want one to U0ALICE of %s", start, srv.TeamID())
	}
	text := "working…"
	for _, word := range []string{"\n\nThe", " answer", " is", " 42 & <b>", " done."} {
		text += word
		if err := a.Edit(ctx, th, id, text); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(srv.CallsTo("chat.appendStream")); got != 5 {
		t.Errorf("chat.appendStream calls = %d, want 5 (one per edit)", got)
	}
	if got := len(srv.CallsTo("chat.update")); got != 0 {
		t.Errorf("chat.update calls = %d, want none while the text only grows", got)
	}
	want := streamBody(text)
	if got := appended(srv, id); got != want {
		t.Errorf("streamed pieces = %q, want %q", got, want)
	}
	if got := lastText(srv, th); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}

	// A change inside what is shown stops the stream and edits the message.
	if err := a.Edit(ctx, th, id, "✓ done\n\nThe answer is 42."); err != nil {
		t.Fatal(err)
	}
	if srv.StreamStops() != 1 || len(srv.CallsTo("chat.update")) != 1 {
		t.Errorf("after a rewrite: %d stops, %d updates, want 1 and 1", srv.StreamStops(), len(srv.CallsTo("chat.update")))
	}
	if got := lastText(srv, th); got != "✓ done\n\nThe answer is 42." {
		t.Errorf("message after the rewrite = %q", got)
	}
	if err := a.Edit(ctx, th, id, "✓ done\n\nThe answer is 42. More."); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.CallsTo("chat.appendStream")); got != 5 {
		t.Errorf("chat.appendStream calls after the stop = %d, want still 5", got)
	}
}

// The model writes mentions into an answer that streams, whole or split
// across edits: none of them notifies anyone, and no append (nor the stream as a whole) passes
// 4,000 characters after escaping; text that would is edited in instead,
// cut as every message is.
func TestStreamedTextStaysInertAndWithinLimits(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a, ctx, th, id := startStreamed(t, srv, "working…")
	text := "working…"
	for _, attack := range []string{" <!channel>", " <!here|here>", " @channel @here @everyone", " <@U0BOB>", " <!subteam^S0OPS>", " &lt;!channel&gt;", " <!chan", "nel>", " <@U0B", "OB>"} {
		text += attack
		if err := a.Edit(ctx, th, id, text); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(srv.CallsTo("chat.appendStream")); got == 0 {
		t.Fatal("no chat.appendStream call: the attack did not stream")
	}
	for i := 0; i < 30; i++ {
		text += " " + strings.Repeat("<", 100)
		if err := a.Edit(ctx, th, id, text); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Notices(); len(n) != 0 {
		t.Errorf("notices = %+v, want none", n)
	}
	for _, c := range srv.CallsTo("chat.appendStream") {
		if n := utf8.RuneCountInString(c.Params.Get("markdown_text")); n > maxTextRunes {
			t.Errorf("an append of %d characters, want at most %d", n, maxTextRunes)
		}
	}
	if n := utf8.RuneCountInString(appended(srv, id)); n > maxTextRunes {
		t.Errorf("the stream carried %d characters, want at most %d", n, maxTextRunes)
	}
	if srv.StreamStops() != 1 {
		t.Errorf("stream stops = %d, want 1 (once past the limit)", srv.StreamStops())
	}
	if got := lastText(srv, th); !strings.HasSuffix(got, truncatedNotice) {
		t.Errorf("message past the limit ends %q, want the truncation notice", got[max(0, len(got)-80):])
	}
}

// A workspace without streaming: the first refusal sends it to edited
// messages for good, said once at INFO, never a WARN.
func TestStreamingRefusedFallsBackToEdits(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho(), slackfake.WithoutStreaming("not_allowed"))
	var logs bytes.Buffer
	a := newAdapter(t, srv, streaming, func(_ *Config, o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx := testContext(t)
	for _, ch := range []string{"C0DEV", "C0OPS", "C0DEV"} {
		th := thread(srv, ch)
		a.noteAsker(th, "U0ALICE")
		id, err := a.PostOnce(ctx, th, "working…", streamKeyed)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Edit(ctx, th, id, "working… more"); err != nil {
			t.Fatal(err)
		}
		if got := lastText(srv, th); got != "working… more" {
			t.Errorf("message in %s = %q, want the edited text", ch, got)
		}
	}
	if got := len(srv.CallsTo("chat.startStream")); got != 1 {
		t.Errorf("chat.startStream calls = %d, want 1 (remembered for the workspace)", got)
	}
	if got := len(srv.CallsTo("chat.update")); got != 3 {
		t.Errorf("chat.update calls = %d, want 3", got)
	}
	if strings.Count(logs.String(), "streaming refused") != 1 || strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("logs:\n%s\nwant one INFO line about the refusal and no WARN", logs.String())
	}
}

// A rate-limited append adds nothing; the next edit's append carries
// everything not shown yet, so no text is lost.
func TestRateLimitedAppendLosesNoText(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a, ctx, th, id := startStreamed(t, srv, "one")
	srv.RateLimitNext("chat.appendStream", 30*time.Second)
	err := a.Edit(ctx, th, id, "one two")
	if _, ok := errors.AsType[*chat.RateLimitError](err); !ok {
		t.Fatalf("Edit during a rate limit = %v, want a *chat.RateLimitError", err)
	}
	if err := a.Edit(ctx, th, id, "one two three"); err != nil {
		t.Fatal(err)
	}
	if got := lastText(srv, th); got != "one two three" {
		t.Errorf("message = %q, want %q", got, "one two three")
	}
	if got := srv.CallsTo("chat.appendStream"); got[len(got)-1].Params.Get("markdown_text") != " two three" {
		t.Errorf("last append = %q, want %q", got[len(got)-1].Params.Get("markdown_text"), " two three")
	}
}

// A stream Slack ended on its own (message_not_in_streaming_state, as after
// a long pause between appends) is edited instead: the message shows the
// whole text, and later edits are edits.
func TestStreamEndedBySlackFallsBackToEdits(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a, ctx, th, id := startStreamed(t, srv, "one")
	srv.FailNext("chat.appendStream", "message_not_in_streaming_state")
	if err := a.Edit(ctx, th, id, "one two"); err != nil {
		t.Fatalf("Edit after Slack ended the stream: %v, want the message edited", err)
	}
	if got := lastText(srv, th); got != "one two" {
		t.Errorf("message = %q, want %q", got, "one two")
	}
	if err := a.Edit(ctx, th, id, "one two three"); err != nil {
		t.Fatal(err)
	}
	if got, n := lastText(srv, th), len(srv.CallsTo("chat.appendStream")); got != "one two three" || n != 1 {
		t.Errorf("message = %q after %d appends, want %q after the one refused", got, n, "one two three")
	}
	if a.Streaming(th, id) {
		t.Error("the message still counts as streamed")
	}
}
