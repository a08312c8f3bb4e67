package slack

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

func TestMentionReachesReceiveStrippedWithAuthor(t *testing.T) {
	srv := slackfake.New(t)
	srv.AddUser(slackfake.User{ID: "U0ALICE", Name: "alice", RealName: "Alice Liddell", Email: "alice@example.com"})
	h := newRecorder()
	startSocket(t, srv, h)

	ts := srv.Mention("C0DEV", "U0ALICE", "!status", "")
	first, second := h.next(t), h.next(t)
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	for _, in := range []chat.Inbound{first, second} {
		want := chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: "C0DEV", Thread: ts}
		if in.Thread != want || in.MessageID != ts {
			t.Errorf("inbound thread %+v message %q, want %+v and %s", in.Thread, in.MessageID, want, ts)
		}
		if in.Text != "!status" || !in.Mention || in.DM {
			t.Errorf("inbound text %q mention %v dm %v, want \"!status\", true, false", in.Text, in.Mention, in.DM)
		}
		if a := in.Author; a.ID != "U0ALICE" || a.Name != "alice" || a.Email != "alice@example.com" {
			t.Errorf("author = %+v, want alice with her email", in.Author)
		}
		if in.Time.IsZero() || in.EventID == "" {
			t.Errorf("inbound time %v event %q, want both set", in.Time, in.EventID)
		}
	}
	if first.EventID == second.EventID {
		t.Errorf("app_mention and message both have event id %s, want different ids", first.EventID)
	}
	if got := h.Accepted(); len(got) != 1 {
		t.Errorf("accepted %d inputs, want 1 (app_mention and message are one mention)", len(got))
	}
	// The author was looked up once, then cached.
	if got := len(srv.CallsTo("users.info")); got != 1 {
		t.Errorf("users.info calls = %d, want 1", got)
	}
}

func TestMentionInsideThreadUsesThreadRoot(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithMessageBeforeMention())
	h := newRecorder()
	startSocket(t, srv, h)

	root := srv.UserMessage("C0DEV", "U0ALICE", "the build is red", "")
	if in := h.nextFor(t, root); in.Mention || in.Thread.Thread != root {
		t.Errorf("plain top-level message: mention %v thread %q, want false and its own ts %s", in.Mention, in.Thread.Thread, root)
	}
	ts := srv.Mention("C0DEV", "U0BOB", "<@"+srv.BotUserID()+"> can you look?", root)
	msg, mention := h.nextFor(t, ts), h.nextFor(t, ts)
	for _, in := range []chat.Inbound{msg, mention} {
		if in.Thread.Thread != root || in.Text != "can you look?" || !in.Mention {
			t.Errorf("mention in thread: thread %q text %q mention %v, want %s, \"can you look?\", true", in.Thread.Thread, in.Text, in.Mention, root)
		}
	}
	// The message event came first and already says Mention, so a bridge that
	// records it cannot mistake the app_mention for a duplicate of a non-mention.
	if got := h.Accepted(); len(got) != 2 || !got[1].Mention {
		t.Errorf("accepted = %+v, want the root and the mention (with Mention set)", got)
	}
}

func TestSameMentionThreeWaysRunsOnce(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	startSocket(t, srv, h)
	ctx := testContext(t)

	ts := srv.Mention("C0DEV", "U0ALICE", "fix it", "")
	a, b := h.next(t), h.next(t)
	if err := srv.WaitAllAcked(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Redeliver(a.EventID)
	c := h.nextFor(t, ts)
	if c.EventID != a.EventID || a.EventID == b.EventID {
		t.Errorf("event ids %s, %s, redelivery %s: want two ids and the redelivery repeating the first", a.EventID, b.EventID, c.EventID)
	}
	for _, in := range []chat.Inbound{a, b, c} {
		if in.Thread.Channel != "C0DEV" || in.MessageID != ts {
			t.Errorf("delivery reached Receive as (%s, %s), want (C0DEV, %s)", in.Thread.Channel, in.MessageID, ts)
		}
	}
	ds := srv.DeliveriesFor("C0DEV", ts)
	if len(ds) != 3 {
		t.Fatalf("deliveries = %+v, want three", ds)
	}
	if _, err := srv.WaitAck(ctx, ds[2].ID); err != nil { // a duplicate is acknowledged too
		t.Fatal(err)
	}
	if got := len(h.Accepted()); got != 1 {
		t.Errorf("a de-duplicating handler accepted %d, want 1", got)
	}
	if ds[2].RetryAttempt != 1 || ds[2].EventID != a.EventID {
		t.Errorf("third delivery %+v, want the redelivery of %s", ds[2], a.EventID)
	}
}

func TestNonInputIgnoredButAcked(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	r := startSocket(t, srv, h)
	ctx := testContext(t)

	root := srv.UserMessage("C0DEV", "U0ALICE", "original", "")
	h.nextFor(t, root)
	srv.EditMessage("C0DEV", root, "edited")
	reply := srv.UserMessage("C0DEV", "U0BOB", "reply", root)
	h.nextFor(t, reply)
	srv.DeleteMessage("C0DEV", reply)
	srv.ChannelJoin("C0DEV", "U0CAROL")
	srv.BotMessage("C0DEV", "B0OTHER", "beep <@"+srv.BotUserID()+">", root)
	own, err := r.Post(ctx, chat.ThreadRef{Platform: "slack", Channel: "C0DEV", Thread: root}, "my own words")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Edit(ctx, chat.ThreadRef{Platform: "slack", Channel: "C0DEV", Thread: root}, own, "my own edit"); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitAllAcked(ctx); err != nil {
		t.Fatal(err)
	}
	// Every event was delivered and acknowledged; only the two messages reached Receive.
	var types []string
	for _, d := range srv.Deliveries() {
		types = append(types, d.EventType+"/"+d.SubType)
	}
	wantTypes := []string{"message/", "message/message_changed", "message/", "message/message_deleted", "message/channel_join", "message/bot_message", "message/", "message/message_changed"}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("deliveries %v, want %v", types, wantTypes)
	}
	var got []string
	for _, in := range h.Calls() {
		got = append(got, in.MessageID)
	}
	if !slices.Equal(got, []string{root, reply}) {
		t.Errorf("Receive got messages %v, want only %v", got, []string{root, reply})
	}
}

func TestFileShareKeepsAttachments(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	startSocket(t, srv, h)

	root := srv.Mention("C0DEV", "U0ALICE", "look", "")
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	ts, f := srv.ShareFile("C0DEV", "U0ALICE", root, "screen.png", "image/png", png)
	in := h.nextFor(t, ts)
	want := []chat.Attachment{{Name: "screen.png", MimeType: "image/png", Size: int64(len(png)), URL: f.URLPrivate}}
	if !slices.Equal(in.Attachments, want) || in.Thread.Thread != root {
		t.Errorf("file share inbound: attachments %+v thread %s, want %+v in %s", in.Attachments, in.Thread.Thread, want, root)
	}
}

func TestDirectMessages(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	startSocket(t, srv, h)

	dm, ts := srv.DM("U0ALICE", "hello there")
	in := h.nextFor(t, ts)
	want := chat.ThreadRef{Platform: "slack", Team: "", Channel: dm, Thread: ts}
	if in.Thread != want || !in.Mention || !in.DM || in.Text != "hello there" {
		t.Errorf("top-level DM: %+v, want thread %+v, Mention and DM set", in, want)
	}
	reply := srv.UserMessage(dm, "U0ALICE", "and more", ts)
	in = h.nextFor(t, reply)
	if in.Thread != want || !in.Mention || !in.DM {
		t.Errorf("reply in a DM thread: %+v, want thread %+v, Mention and DM set", in, want)
	}
}

func TestReceiveErrorIsNotAcknowledged(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithRedelivery(50*time.Millisecond))
	h := newRecorder()
	failed := 0
	h.setFail(func(chat.Inbound) error {
		if failed < 1 {
			failed++
			return errStore
		}
		return nil
	})
	startSocket(t, srv, h)

	ts := srv.UserMessage("C0DEV", "U0ALICE", "store this", "")
	first := h.nextFor(t, ts)
	second := h.nextFor(t, ts)
	if first.EventID != second.EventID {
		t.Errorf("redelivery event id %s, want %s", second.EventID, first.EventID)
	}
	ack, err := srv.WaitEventAck(testContext(t), first.EventID)
	if err != nil {
		t.Fatal(err)
	}
	ds := srv.DeliveriesFor("C0DEV", ts)
	if len(ds) < 2 || ds[0].Acked || !ds[1].Acked || ack.DeliveryID != ds[1].ID {
		t.Errorf("deliveries %+v, ack of %s: want the first unacknowledged and the retry acknowledged", ds, ack.DeliveryID)
	}
	if got := len(h.Accepted()); got != 1 {
		t.Errorf("accepted %d, want 1", got)
	}
}

// TestThreadOrderAndIndependence: a thread's messages reach Receive one at a
// time in order, and a thread whose Receive is slow holds up no other thread.
func TestThreadOrderAndIndependence(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	release := make(chan struct{})
	h.block = func(in chat.Inbound) {
		if in.Text == "slow" {
			<-release
		}
	}
	startSocket(t, srv, h)
	ctx := testContext(t)

	rootA := srv.UserMessage("C0DEV", "U0ALICE", "slow", "")
	var wantA []string
	for i := range 20 {
		wantA = append(wantA, srv.UserMessage("C0DEV", "U0ALICE", fmt.Sprint("a", i), rootA))
	}
	other := srv.UserMessage("C0OPS", "U0BOB", "other thread", "")
	in := h.next(t)
	if in.MessageID != other {
		t.Fatalf("first Receive to return was %s (%q), want the other thread's %s while thread A is blocked", in.MessageID, in.Text, other)
	}
	if _, err := srv.WaitEventAck(ctx, srv.DeliveriesFor("C0OPS", other)[0].EventID); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := srv.WaitAllAcked(ctx); err != nil {
		t.Fatal(err)
	}
	var gotA []string
	for _, in := range h.Calls() {
		if in.Thread.Thread == rootA && in.MessageID != rootA {
			gotA = append(gotA, in.MessageID)
		}
	}
	if !slices.Equal(gotA, wantA) {
		t.Errorf("thread A reached Receive in order %v, want %v", gotA, wantA)
	}
}

func TestReconnectCatchesUpOnActiveThreads(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	startSocket(t, srv, h)
	ctx := testContext(t)

	root := srv.Mention("C0DEV", "U0ALICE", "start", "")
	h.nextFor(t, root)
	seen := srv.UserMessage("C0DEV", "U0ALICE", "seen before the gap", root)
	h.nextFor(t, seen)
	if err := srv.WaitAllAcked(ctx); err != nil {
		t.Fatal(err)
	}
	thread := chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
	h.setActive(chat.ThreadCursor{Thread: thread, LastSeen: seen},
		chat.ThreadCursor{Thread: chat.ThreadRef{Platform: "discord", Channel: "123", Thread: "123"}})

	end := srv.Outage()
	if _, err := srv.WaitCalls(ctx, "apps.connections.open", 2); err != nil {
		t.Fatal(err)
	}
	gap1 := srv.UserMessage("C0DEV", "U0BOB", "typed during the gap", root)
	srv.BotMessage("C0DEV", "B0OTHER", "a bot during the gap", root)
	gap2 := srv.UserMessage("C0DEV", "U0ALICE", "<@"+srv.BotUserID()+"> also during the gap", root)
	end()

	a, b := h.next(t), h.next(t)
	for i, want := range []struct {
		ts, text string
		mention  bool
	}{{gap1, "typed during the gap", false}, {gap2, "also during the gap", true}} {
		in := []chat.Inbound{a, b}[i]
		if in.MessageID != want.ts || in.Text != want.text || in.Thread != thread || in.Mention != want.mention {
			t.Errorf("catch-up %d = %+v, want %s %q in %+v mention %v", i, in, want.ts, want.text, thread, want.mention)
		}
		if in.EventID != "replies/C0DEV/"+want.ts {
			t.Errorf("catch-up event id %q, want replies/C0DEV/%s", in.EventID, want.ts)
		}
	}
	if d := srv.DeliveriesFor("C0DEV", gap1); len(d) != 1 || !d[0].Lost {
		t.Errorf("deliveries of the gap message %+v, want one, lost", d)
	}
	calls := srv.CallsTo("conversations.replies")
	if len(calls) != 1 || calls[0].Params.Get("oldest") != seen || calls[0].Params.Get("ts") != root {
		t.Errorf("conversations.replies calls %+v, want one for %s after %s (and none for the discord thread)", calls, root, seen)
	}
	// Nothing was caught up on the first connection.
	h.mu.Lock()
	activeCalls := h.activeCalls
	h.mu.Unlock()
	if activeCalls != 1 {
		t.Errorf("ActiveThreads called %d times, want 1 (after the reconnect only)", activeCalls)
	}
}

func TestDisconnectFrameTriggersCatchUp(t *testing.T) {
	// Slack delivers again an event it saw no acknowledgement for; so does
	// the fake here. Without it, an acknowledgement lost around the
	// reconnect left one event unacknowledged for good (this failed under
	// load in two full-package runs; the cause was not pinned down).
	srv := slackfake.New(t, slackfake.WithRedelivery(500*time.Millisecond))
	h := newRecorder()
	startSocket(t, srv, h)
	root := srv.Mention("C0DEV", "U0ALICE", "start", "")
	h.nextFor(t, root)
	h.setActive(chat.ThreadCursor{Thread: chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: "C0DEV", Thread: root}, LastSeen: root})

	srv.Disconnect("refresh_requested")
	select {
	case <-h.activeCh:
	case <-time.After(waitTimeout):
		t.Fatal("no ActiveThreads call after a reconnect")
	}
	// Events go on over the new connection.
	after := srv.UserMessage("C0DEV", "U0BOB", "after refresh", root)
	h.nextFor(t, after)
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.Connections()); got != 2 {
		t.Errorf("connections = %d, want 2", got)
	}
}

func TestRunFailsOnBadTokens(t *testing.T) {
	srv := slackfake.New(t)
	for _, tc := range []struct {
		name   string
		mutate func(*Config, *Options)
		want   string
	}{
		{"bot token", func(c *Config, _ *Options) { c.BotToken = "xoxb-wrong" }, "invalid_auth"},
		{"app token", func(c *Config, _ *Options) { c.AppToken = "xapp-wrong" }, "invalid_auth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdapter(t, srv, tc.mutate)
			err := a.Run(testContext(t), newRecorder())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want an error saying %s", err, tc.want)
			}
			if strings.Contains(fmt.Sprint(err), "xoxb-") || strings.Contains(fmt.Sprint(err), "xapp-") {
				t.Errorf("Run's error %q contains a token", err)
			}
		})
	}
}

func TestNewRejectsIncompleteConfig(t *testing.T) {
	base := Config{BotToken: "xoxb-1", AppToken: "xapp-1", Listen: ":3000"}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		key    string
	}{
		{"no bot token", func(c *Config) { c.BotToken = "" }, "slack.bot_token"},
		{"socket without app token", func(c *Config) { c.AppToken = "" }, "slack.app_token"},
		{"http without secret", func(c *Config) { c.Mode = ModeHTTP }, "slack.signing_secret"},
		{"bad mode", func(c *Config) { c.Mode = "carrier-pigeon" }, "slack.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mutate(&cfg)
			if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("New = %v, want an error naming %s", err, tc.key)
			}
		})
	}
}

// TestRunStopsCleanly: Run returns when its context ends, with every goroutine
// it started (slack-go's and idle HTTP connections included) gone.
func TestRunStopsCleanly(t *testing.T) {
	srv := slackfake.New(t)
	before := ourGoroutines()
	h := newRecorder()
	a := newAdapter(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	if err := srv.WaitConnections(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		srv.Mention(fmt.Sprintf("C0LEAK%d", i), "U0ALICE", "hi", "")
	}
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if n := len(newGoroutines(before)); n < 3 {
		t.Fatalf("%d adapter goroutines found while running, want several: the leak check would prove nothing", n)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v after cancel, want nil", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after cancel")
	}
	// A closed socket's goroutines end a moment after the close, and nothing
	// signals a goroutine's exit: poll, bounded, as goleak does.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitTimeout)
	for {
		left := newGoroutines(before)
		if len(left) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d goroutines left after Run returned, want 0:\n%s", len(left), strings.Join(left, "\n\n"))
		}
	}
}

// ourGoroutines returns, by goroutine id, the stacks of goroutines of this
// package, of slack-go, and of HTTP client connections.
func ourGoroutines() map[string]string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "ourGoroutines") || strings.Contains(g, "fakes/slack") {
			continue
		}
		if strings.Contains(g, "adapters/slack.") || strings.Contains(g, "slack-go/slack") || strings.Contains(g, "net/http.(*persistConn)") {
			id, _, _ := strings.Cut(g, " [")
			out[id] = g
		}
	}
	return out
}

// newGoroutines returns the stacks of our goroutines that were not in before.
func newGoroutines(before map[string]string) []string {
	var out []string
	for id, g := range ourGoroutines() {
		if _, ok := before[id]; !ok {
			out = append(out, g)
		}
	}
	return out
}

func TestUnknownAuthorStillDelivered(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	startSocket(t, srv, h)
	srv.FailNext("users.info", "user_not_found")

	ts := srv.UserMessage("C0DEV", "U0GHOST", "boo", "")
	in := h.nextFor(t, ts)
	if in.Author.ID != "U0GHOST" || in.Author.Name != "" {
		t.Errorf("author = %+v, want the id alone when users.info fails", in.Author)
	}
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	// The failure is remembered for a while: the next message does not ask again.
	ts2 := srv.UserMessage("C0DEV", "U0GHOST", "boo again", "")
	h.nextFor(t, ts2)
	if got := len(srv.CallsTo("users.info")); got != 1 {
		t.Errorf("users.info calls = %d, want 1 (a failed lookup is cached briefly)", got)
	}
}

// A thread whose channel is gone is closed after a reconnect: later
// reconnects do not ask for it again.
func TestCatchUpClosesThreadsThatAreGone(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	startSocket(t, srv, h)
	root := srv.Mention("C0DEV", "U0ALICE", "start", "")
	h.nextFor(t, root)
	gone := chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: "C0DELETED", Thread: "1600000000.000100"}
	live := chat.ThreadRef{Platform: "slack", Team: srv.TeamID(), Channel: "C0DEV", Thread: root}
	h.setActive(chat.ThreadCursor{Thread: gone, LastSeen: gone.Thread}, chat.ThreadCursor{Thread: live, LastSeen: root})

	srv.Disconnect("refresh_requested")
	select {
	case got := <-h.closedCh:
		if got != gone {
			t.Errorf("closed %+v, want %+v", got, gone)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the thread in the deleted channel was not closed")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.closed) != 1 {
		t.Errorf("closed %+v, want only the gone thread", h.closed)
	}
}

// Slack's escaping comes off once, in the adapter: the handler gets what the
// person typed (both the app_mention and the message event), a mention of
// another person as @name, and "&lt;" typed literally stays "&lt;".
func TestInboundTextIsWhatThePersonTyped(t *testing.T) {
	srv := slackfake.New(t)
	srv.AddUser(slackfake.User{ID: "U0BOB", Name: "bob"})
	h := newRecorder()
	startSocket(t, srv, h)

	// Typed: <b>"'& &lt; &amp;lt; ask @bob
	ts := srv.Mention("C0DEV", "U0ALICE", `&lt;b&gt;"'&amp; &amp;lt; &amp;amp;lt; ask <@U0BOB>`, "")
	const want = `<b>"'& &lt; &amp;lt; ask @bob`
	for _, in := range []chat.Inbound{h.nextFor(t, ts), h.nextFor(t, ts)} {
		if in.Text != want || !in.Mention {
			t.Errorf("inbound text %q (mention %v), want %q", in.Text, in.Mention, want)
		}
	}
	// A follow-up in the thread, by the message event alone.
	ts2 := srv.UserMessage("C0DEV", "U0ALICE", "a &amp;&amp; b &gt; c", ts)
	if in := h.nextFor(t, ts2); in.Text != "a && b > c" {
		t.Errorf("follow-up text %q, want %q", in.Text, "a && b > c")
	}
}
