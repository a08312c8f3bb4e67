package slack

import (
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// Open posts at the channel's top level and the message's ts is the
// thread; an opening retried after a lost response finds its message
// instead of opening a second thread.
func TestOpenOnceOpensOneThread(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	srv.AddChannel(slackfake.Channel{ID: "C0DEV", Name: "dev"})
	a := newAdapter(t, srv)
	ctx := testContext(t)
	key := chat.PostKey{ID: "o0123456789abcdef012345", First: time.Now()}

	srv.LoseResponseNext("chat.postMessage")
	if _, err := a.OpenOnce(ctx, "C0DEV", "⏰ nightly\n> check the build", key); err == nil {
		t.Fatal("OpenOnce with a lost response succeeded, want the transport error")
	}
	key.Retry = true
	th, err := a.OpenOnce(ctx, "C0DEV", "⏰ nightly\n> check the build", key)
	must(t, err)
	top := srv.Messages("C0DEV", "")
	if len(top) != 1 || top[0].TS != th.Thread || top[0].ThreadTS != "" {
		t.Fatalf("top-level messages %+v, want one, the thread %s", top, th.Thread)
	}
	if want := (chat.ThreadRef{Platform: Platform, Team: srv.TeamID(), Channel: "C0DEV", Thread: top[0].TS}); th != want {
		t.Errorf("thread = %+v, want %+v", th, want)
	}
	if got := srv.CallsTo("chat.postMessage"); len(got) != 1 || got[0].Params.Get("thread_ts") != "" {
		t.Errorf("chat.postMessage calls %+v, want one without thread_ts", got)
	}

	other, err := a.Open(ctx, "C0DEV", "⏰ weekly")
	must(t, err)
	if other.Thread == th.Thread || len(srv.Messages("C0DEV", "")) != 2 {
		t.Errorf("a second Open = %+v, want a thread of its own", other)
	}
}

// The text of an opened thread comes from an issue or a schedule, which an
// attacker may write: its mentions, in any spelling, ping nobody.
func TestOpenPingsNobody(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	srv.AddChannel(slackfake.Channel{ID: "C0DEV", Name: "dev"})
	srv.AddUserGroup("S0ALL", "devs")
	a := newAdapter(t, srv)
	text := "issue: <!channel> <!here|here> @everyone <@U0ALICE> <!subteam^S0ALL> @devs"
	if _, err := a.Open(testContext(t), "C0DEV", text); err != nil {
		t.Fatal(err)
	}
	if len(srv.Messages("C0DEV", "")) != 1 {
		t.Fatal("Open posted no top-level message")
	}
	for _, n := range srv.Notices() {
		t.Errorf("the opened thread's message pings %+v", n.Mentioned)
	}
}
