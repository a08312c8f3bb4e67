package discord_test

import (
	"testing"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// Open posts in the channel and starts a thread from the message; an
// opening retried after a lost response (of the post, or of the thread's
// start) ends with one message and one thread.
func TestOpenOnceOpensOneThread(t *testing.T) {
	t.Parallel()
	for _, lost := range []string{
		"POST /api/v9/channels/{channel}/messages",
		"POST /api/v9/channels/{channel}/messages/{message}/threads",
	} {
		t.Run(lost, func(t *testing.T) {
			fake := discordfake.New(t)
			e := start(t, fake, baseConfig(fake))
			ctx := ctxT(t)
			key := chat.PostKey{ID: "o0123456789abcdef012345"}
			fake.LoseResponseNext(lost)
			if _, err := e.a.OpenOnce(ctx, general, "⏰ nightly\n> check the build", key); err == nil {
				t.Fatal("OpenOnce with a lost response succeeded, want the transport error")
			}
			key.Retry = true
			th, err := e.a.OpenOnce(ctx, general, "⏰ nightly\n> check the build", key)
			if err != nil {
				t.Fatal(err)
			}
			var starters []string
			for _, m := range fake.Messages(general) {
				if m.Content == "⏰ nightly\n> check the build" {
					starters = append(starters, m.ID)
				}
			}
			threads := fake.Threads()
			if len(starters) != 1 || len(threads) != 1 || threads[0].ID != starters[0] {
				t.Fatalf("starters %v, threads %+v; want one message and one thread on it", starters, threads)
			}
			if want := (chat.ThreadRef{Platform: "discord", Team: guild, Channel: threads[0].ID, Thread: threads[0].ID}); th != want {
				t.Errorf("thread = %+v, want %+v", th, want)
			}
			if threads[0].Name != "⏰ nightly" {
				t.Errorf("the thread is named %q, want its title", threads[0].Name)
			}
		})
	}
}

// The text of an opened thread comes from an issue or a schedule, which an
// attacker may write: it pings nobody, not even the person the bot last
// answered in that channel.
func TestOpenPingsNobody(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	discord.SetRequester(e.a, general, discordfake.AliceID)
	text := "issue: <@" + discordfake.AliceID + "> @everyone <@&1>"
	if _, err := e.a.Open(ctxT(t), general, text); err != nil {
		t.Fatal(err)
	}
	for _, n := range fake.Notices() {
		t.Errorf("the opened thread's message pings %+v", n.Mentioned)
	}
}
