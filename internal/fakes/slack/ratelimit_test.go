package slackfake_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slack-go/slack"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

func retryAfter(t *testing.T, err error) time.Duration {
	t.Helper()
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) {
		t.Fatalf("error %v (%T), want *slack.RateLimitedError", err, err)
	}
	return rl.RetryAfter
}

func rateLimitedServer(t *testing.T, l slackfake.RateLimits) (*slackfake.Server, *slackfake.ManualClock) {
	clock := slackfake.NewManualClock(time.Unix(1_700_000_000, 0))
	srv := slackfake.New(t, slackfake.WithClock(clock.Now), slackfake.WithRateLimits(l), slackfake.WithoutBotEcho())
	srv.AddChannel(slackfake.Channel{ID: "C0ONE"})
	srv.AddChannel(slackfake.Channel{ID: "C0TWO"})
	return srv, clock
}

func TestPostMessagePerChannelLimit(t *testing.T) {
	srv, clock := rateLimitedServer(t, slackfake.SlackRateLimits())
	api := newAPI(srv)
	post := func(ch string) error {
		_, _, err := api.PostMessage(ch, slack.MsgOptionText("hi", false))
		return err
	}
	for i := range 5 {
		if err := post("C0ONE"); err != nil {
			t.Fatalf("post %d of the burst: %v", i, err)
		}
	}
	if got := retryAfter(t, post("C0ONE")); got != time.Second {
		t.Errorf("Retry-After = %v, want 1s", got)
	}
	if err := post("C0TWO"); err != nil {
		t.Errorf("post in another channel: %v, want ok (limits are per channel)", err)
	}
	clock.Advance(time.Second)
	if err := post("C0ONE"); err != nil {
		t.Errorf("post a second later: %v, want ok", err)
	}
	// Grace: a token 30 ms short still passes with 50 ms of grace.
	clock.Advance(time.Second - 30*time.Millisecond)
	if err := post("C0ONE"); err != nil {
		t.Errorf("post 30 ms early: %v, want ok within the grace", err)
	}
	if got := srv.RateLimited(); got != 1 {
		t.Errorf("RateLimited() = %d, want 1", got)
	}
	calls := srv.CallsTo("chat.postMessage")
	if got := calls[5]; got.Status != 429 || got.Error != "ratelimited" {
		t.Errorf("sixth call recorded status %d error %q, want 429 ratelimited", got.Status, got.Error)
	}
	if got := len(srv.Messages("C0ONE", "")); got != 7 {
		t.Errorf("stored %d messages in C0ONE, want 7 (the limited post not stored)", got)
	}
}

func TestUpdateLimits(t *testing.T) {
	srv, clock := rateLimitedServer(t, slackfake.SlackRateLimits())
	api := newAPI(srv)
	var tss []string
	for i := range 51 {
		ch := fmt.Sprintf("C0M%02d", i)
		srv.AddChannel(slackfake.Channel{ID: ch})
		_, ts, err := api.PostMessage(ch, slack.MsgOptionText("x", false))
		if err != nil {
			t.Fatal(err)
		}
		tss = append(tss, ts)
	}
	update := func(i int) error {
		_, _, _, err := api.UpdateMessage(fmt.Sprintf("C0M%02d", i), tss[i], slack.MsgOptionText("y", false))
		return err
	}
	// Per message: one a second.
	if err := update(0); err != nil {
		t.Fatal(err)
	}
	if got := retryAfter(t, update(0)); got != time.Second {
		t.Errorf("second update of one message: Retry-After %v, want 1s", got)
	}
	// Per workspace: 50 a minute. 49 more messages exhaust the burst.
	for i := 1; i < 50; i++ {
		if err := update(i); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	if got := retryAfter(t, update(50)); got != 2*time.Second {
		t.Errorf("51st update in a minute: Retry-After %v, want 2s (1.2 s rounded up)", got)
	}
	clock.Advance(1200 * time.Millisecond)
	if err := update(50); err != nil {
		t.Errorf("update after one workspace token refilled: %v", err)
	}
	if got := srv.RateLimited(); got != 2 {
		t.Errorf("RateLimited() = %d, want 2", got)
	}
}

func TestRateLimitOKFalseStyleAndInjection(t *testing.T) {
	l := slackfake.SlackRateLimits()
	l.Style = slackfake.RateLimitOKFalse
	l.PostMessagePerChannel.Burst = 1
	srv, _ := rateLimitedServer(t, l)
	api := newAPI(srv)
	if _, _, err := api.PostMessage("C0ONE", slack.MsgOptionText("a", false)); err != nil {
		t.Fatal(err)
	}
	_, _, err := api.PostMessage("C0ONE", slack.MsgOptionText("b", false))
	if slackError(err) != "ratelimited" {
		t.Errorf("limited post in ok:false style: %v, want slack error ratelimited", err)
	}
	if c := srv.CallsTo("chat.postMessage")[1]; c.Status != 200 {
		t.Errorf("ok:false style answered HTTP %d, want 200", c.Status)
	}

	srv429 := slackfake.New(t)
	srv429.AddChannel(slackfake.Channel{ID: "C0ONE"})
	srv429.RateLimitNext("chat.postMessage", 2500*time.Millisecond)
	_, _, err = newAPI(srv429).PostMessage("C0ONE", slack.MsgOptionText("c", false))
	if got := retryAfter(t, err); got != 3*time.Second {
		t.Errorf("injected rate limit Retry-After %v, want 3s", got)
	}
	if srv.RateLimited() != 1 || srv429.RateLimited() != 1 {
		t.Errorf("RateLimited() = %d and %d, want 1 and 1", srv.RateLimited(), srv429.RateLimited())
	}
}
