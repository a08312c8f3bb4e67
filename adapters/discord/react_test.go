package discord_test

import (
	"slices"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// TestReactionsFollowDiscordsLimit: Discord allows one reaction per 250 ms
// per channel, while discordgo's built-in limiter for reactions allows one
// per 200 ms and ignores the headers. Reactions in quick succession, each
// retried after a *chat.RateLimitError as the outbox does, must never reach
// Discord early.
func TestReactionsFollowDiscordsLimit(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t, discordfake.WithRateLimits(discordfake.DefaultRateLimits()))
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	m := fake.UserMessage(general, alice, "react to me")
	for _, step := range []struct {
		emoji string
		add   bool
	}{{"hourglass_flowing_sand", true}, {"hourglass_flowing_sand", false}, {"eyes", true}, {"arrow_right_hook", true}} {
		if err := untilNotLimited(t, func() error { return e.a.React(ctx, ref, m.ID, step.emoji, step.add) }); err != nil {
			t.Fatalf("React %s %v: %v", step.emoji, step.add, err)
		}
	}
	if n := fake.RateLimited(); n != 0 {
		t.Errorf("429 answers: got %d, want 0 (the adapter waits as Discord's headers say)", n)
	}
	var got []string
	for _, r := range fake.Reactions(general, m.ID) {
		got = append(got, r.Emoji)
	}
	if want := []string{"👀", "↪️"}; !slices.Equal(got, want) {
		t.Errorf("reactions: got %q, want %q", got, want)
	}
}

// The bot writes reactions and never reads them, so it identifies without
// the reaction intents (Discord would otherwise send an event for every
// reaction anyone adds in every channel it sees): exactly guilds, guild
// and direct messages, and message content.
func TestIntentsLeaveOutReactions(t *testing.T) {
	t.Parallel()
	want := discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsMessageContent | discordgo.IntentsDirectMessages
	if discord.Intents != want {
		t.Errorf("Intents = %b, want %b", discord.Intents, want)
	}
	if reactions := discordgo.IntentsGuildMessageReactions | discordgo.IntentsDirectMessageReactions; discord.Intents&reactions != 0 {
		t.Errorf("Intents %b ask for reaction events, which the bot never reads", discord.Intents)
	}
}
