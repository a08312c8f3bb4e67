package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// /sessions on Discord, through Main on the fakes: alice opened eleven
// sessions and bob one; alice's /sessions in one of her threads, and in her
// DM with the bot, shows her ten newest, newest first, with the thread
// links, to her alone; bob's shows his one.
func TestDiscordSessionsListsTheAskersOwn(t *testing.T) {
	t.Parallel()
	e := newDiscordEnv(t, func(c *config.Config, _ *discordEnv) { c.Discord.AllowedRoles = nil })
	open := func(user, channel, tag string) string {
		e.scripts.add(tag, answerPrompt)
		id := e.fake.SlashCommand(channel, user, "code", map[string]any{"prompt": tag + ": look around", "repo": "app"})
		th, _ := e.threadOf(id)
		e.waitBot(th, "⏱")
		return th
	}
	// The threads open in two channels: Discord's budget for creating
	// threads is a channel's, and one channel would set the pace.
	var alice []string // newest first
	for i := range 11 {
		channel := dGeneral
		if i%2 == 1 {
			channel = discordfake.DefaultOtherChannelID
		}
		alice = append([]string{open(dAlice, channel, fmt.Sprintf("sess%d", i))}, alice...)
	}
	bob := open(dBob, dGeneral, "bobsess")
	link := func(th string) string { return "/" + th + ")" }

	// list runs /sessions as user in channel and returns what they were
	// shown: the interaction's answer, or its ephemeral followup.
	list := func(channel, user string) string {
		t.Helper()
		id := e.fake.SlashCommand(channel, user, "sessions", nil)
		var text string
		err := e.fake.WaitFor(e.ctx, func() bool {
			ia, _ := e.fake.Interaction(id)
			msgs := ia.Followups
			if ia.Original != nil {
				msgs = append(msgs, *ia.Original)
			}
			for _, m := range msgs {
				if strings.Contains(m.Content, "Your sessions") {
					text = m.Content
					return true
				}
			}
			return false
		})
		if err != nil {
			ia, _ := e.fake.Interaction(id)
			t.Fatalf("/sessions by %s in %s showed no list: %+v", user, channel, ia)
		}
		if ia, _ := e.fake.Interaction(id); !ia.Ephemeral {
			t.Errorf("/sessions by %s was answered for all to see", user)
		}
		return text
	}
	check := func(where, text string) {
		t.Helper()
		lines := strings.Split(text, "\n")[1:]
		if len(lines) != 10 {
			t.Fatalf("%s: %d sessions, want 10:\n%s", where, len(lines), text)
		}
		for i, l := range lines {
			if !strings.Contains(l, link(alice[i])) || !strings.Contains(l, "`app`") || !strings.Contains(l, "$0.00") {
				t.Errorf("%s: line %d = %q, want thread %s, its repository and cost", where, i, l, alice[i])
			}
		}
		if strings.Contains(text, link(alice[10])) || strings.Contains(text, link(bob)) {
			t.Errorf("%s shows alice's oldest or bob's session:\n%s", where, text)
		}
	}
	// In her newest thread: a command is activity too, so another thread
	// would move to the top.
	check("in a session thread", list(alice[0], dAlice))
	check("in a DM", list(e.fake.DMChannel(dAlice), dAlice))
	if got := list(bob, dBob); strings.Count(got, "\n") != 1 || !strings.Contains(got, link(bob)) {
		t.Errorf("bob's list = %q, want his one thread", got)
	}
	for _, th := range append(alice, bob) {
		if e.countBot(th, "Your sessions") > 0 {
			t.Errorf("the list was posted in thread %s for all to see", th)
		}
	}
}
