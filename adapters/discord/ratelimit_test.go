package discord_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// Past the budget of the routes the adapter calls besides posts, edits and
// reactions, each call ends well: typing (a chat call) comes back as
// *chat.RateLimitError for the outbox, without sleeping; history reads and
// direct messages (the adapter's own calls) wait out Discord's 429 and
// succeed, and a note that had to wait is still a direct message, never a
// word in the channel. The second adapter stands for another process on the
// same token, whose discordgo has not seen the bucket: Discord answers it 429.
// discordgo sleeps in real time, so the windows are short.
func TestEveryRouteHandlesRateLimits(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	const window = 150 * time.Millisecond
	one := discordfake.Limit{Requests: 1, Window: window}
	fake := discordfake.New(t, discordfake.WithRateLimits(discordfake.RateLimits{
		Typing: one, MessageRead: one, DM: one, MessageCreate: discordfake.Limit{Requests: 10, Window: window},
	}))
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	a, err := discord.New(baseConfig(fake), discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := discord.New(baseConfig(fake), discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)

	if err := a.SetStatus(ctx, ref, "working"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var rl *chat.RateLimitError
	if err := a.SetStatus(ctx, ref, "working"); !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > window {
		t.Errorf("typing in a bucket discordgo knows is empty: %v, want a *chat.RateLimitError", err)
	}
	if err := b.SetStatus(ctx, ref, "working"); !errors.As(err, &rl) || rl.Global || rl.RetryAfter <= 0 || rl.RetryAfter > window {
		t.Errorf("typing answered 429: %v, want a route *chat.RateLimitError", err)
	}
	if d := time.Since(start); d >= window {
		t.Errorf("rate-limited typing took %v: the chat call slept", d)
	}
	if got := len(fake.Typing()); got != 1 {
		t.Errorf("typing indicators = %d, want 1", got)
	}

	fake.UserMessage(general, alice, "earlier")
	limited := fake.RateLimited()
	if _, err := a.History(ctx, ref, ""); err != nil {
		t.Fatalf("history: %v", err)
	}
	got, err := b.History(ctx, ref, "")
	if err != nil || len(got) != 1 || got[0].Text != "earlier" {
		t.Errorf("history read into a 429: %+v, %v, want alice's message after the wait", got, err)
	}
	if fake.RateLimited() == limited {
		t.Error("the second history read met no 429: the test did not exercise it")
	}

	limited = fake.RateLimited()
	to := chat.Inbound{Thread: ref, Author: chat.Author{ID: bob}}
	if err := a.Whisper(ctx, to, "first note"); err != nil {
		t.Fatalf("whisper: %v", err)
	}
	if err := b.Whisper(ctx, to, "second note"); err != nil {
		t.Fatalf("whisper into a 429: %v", err)
	}
	if fake.RateLimited() == limited {
		t.Error("the second DM met no 429: the test did not exercise it")
	}
	dm := fake.DMChannel(bob)
	if n := len(fake.Messages(dm)); n != 2 {
		t.Errorf("direct messages to bob = %d, want 2", n)
	}
	for _, m := range fake.Messages(general) {
		if m.AuthorBot {
			t.Errorf("the bot wrote in the channel: %q", m.Content)
		}
	}
}

// /code while the channel's thread-creation bucket is spent (by another
// process on the token: Discord answers 429) still opens its session: the
// interaction is answered within Discord's deadline, discordgo waits out the
// 429 on the thread and the webhook edits, and the starter message names the
// request.
func TestCodeOpensItsThreadThroughRateLimits(t *testing.T) {
	t.Parallel()
	const window = 150 * time.Millisecond
	one := discordfake.Limit{Requests: 1, Window: window}
	// The thread's window outlasts the webhook edits made before it.
	fake := discordfake.New(t, discordfake.WithRateLimits(discordfake.RateLimits{
		ThreadCreate: discordfake.Limit{Requests: 1, Window: 6 * window}, Interaction: one, Webhook: one, Members: one,
		Commands: discordfake.Limit{Requests: 2, Window: window},
	}))
	e := start(t, fake, baseConfig(fake))
	other := restSession(t, fake)
	m, err := other.ChannelMessageSend(general, "someone else's message")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.MessageThreadStart(general, m.ID, "theirs", 60); err != nil {
		t.Fatal(err)
	}
	limited := fake.RateLimited()
	id := fake.SlashCommand(general, alice, "code", map[string]any{"prompt": "fix the login bug"})
	in := e.h.inbound(t, id)
	ia, _ := fake.Interaction(id)
	if !ia.Responded || ia.Latency >= 3*time.Second {
		t.Errorf("answer: responded %v after %v, want within Discord's 3 s", ia.Responded, ia.Latency)
	}
	var th *discordfake.Channel
	for _, c := range fake.Threads() {
		if c.Name == "fix the login bug" {
			th = &c
		}
	}
	if th == nil || in.Thread.Channel != th.ID {
		t.Fatalf("threads %+v, inbound in %q: want the session's thread", fake.Threads(), in.Thread.Channel)
	}
	if ia.Original == nil || !strings.Contains(ia.Original.Content, "fix the login bug") {
		t.Errorf("starter message %+v, want the request", ia.Original)
	}
	if fake.RateLimited() == limited {
		t.Error("no 429 on the way: the test did not exercise the limits")
	}
}

// Threads opened at once in one channel (schedules firing together, several
// /code) share Discord's per-channel budget for starting threads: the
// adapter paces them on that budget, so every one opens and none meets a
// 429 (discordgo's own bucket for the route is per message).
func TestThreadsOpenedTogetherStayInTheChannelsBudget(t *testing.T) {
	t.Parallel()
	const window = 200 * time.Millisecond
	fake := discordfake.New(t, discordfake.WithRateLimits(discordfake.RateLimits{
		ThreadCreate:  discordfake.Limit{Requests: 2, Window: window},
		MessageCreate: discordfake.Limit{Requests: 50, Window: window},
	}))
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := e.a.OpenOnce(ctx, general, fmt.Sprintf("⏰ job %d", i), chat.PostKey{ID: fmt.Sprintf("o%023d", i)})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("OpenOnce: %v", err)
		}
	}
	if got := len(fake.Threads()); got != n {
		t.Errorf("threads = %d, want %d", got, n)
	}
	for _, r := range fake.Requests() {
		if r.Status == 429 {
			t.Errorf("429 on %s %s: want the starts paced", r.Method, r.Path)
		}
	}
}
