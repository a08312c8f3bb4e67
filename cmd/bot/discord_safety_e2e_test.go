package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// testDiscordHostileAnswer: an answer that names everyone it can, in every
// spelling, in a text longer than three Discord messages, pings nobody but
// alice (who asked), and every message holds at most 2,000 characters.
func testDiscordHostileAnswer(e *discordEnv) {
	t, fake := e.t, e.fake
	var b strings.Builder
	b.WriteString("Hey @everyone and @here, <@&" + discordfake.DevRoleID + "> <@" + dBob + "> <@!" + dBob + ">, and you <@" + dAlice + ">.\n\n```html\n")
	for i := 0; b.Len() < 6500; i++ {
		fmt.Fprintf(&b, "<p id=\"HOSTILE-%03d\">&amp; <@%s> @everyone</p>\n", i, dBob)
	}
	b.WriteString("```\nDone, <@" + dBob + ">.")
	answer := b.String()
	e.scripts.add("hotel", func(llmfake.Request) llmfake.Response { return llmfake.TextReply(answer) })
	th, _ := e.open("hotel: write the page")
	e.waitBot(th, "⏱")
	e.waitBot(th, "Done, <@"+dBob+">.")

	var shown strings.Builder
	for _, m := range fake.Messages(th) {
		if !m.AuthorBot {
			continue
		}
		if n := utf8.RuneCountInString(m.Content); n > 2000 {
			t.Errorf("message of %d characters, want at most 2000", n)
		}
		shown.WriteString(m.Content + "\n")
	}
	for i := 0; strings.Contains(answer, fmt.Sprintf("HOSTILE-%03d", i)); i++ {
		if !strings.Contains(shown.String(), fmt.Sprintf("HOSTILE-%03d", i)) {
			t.Fatalf("line %d of the answer is not in the thread", i)
		}
	}
	checkDiscordPingsAtMost(t, fake, dAlice)
}

// checkDiscordPingsAtMost fails for any message of the bot that would ping
// someone other than user.
func checkDiscordPingsAtMost(t *testing.T, fake *discordfake.Server, user string) {
	t.Helper()
	for _, n := range fake.Notices() {
		if n.Everyone || len(n.Roles) > 0 || len(n.Users) > 1 || (len(n.Users) == 1 && n.Users[0] != user) {
			t.Errorf("message %s in %s would ping %+v, want at most %s: %q", n.MessageID, n.ChannelID, n.Mentioned, user, n.Content)
		}
	}
}

// TestDiscordReconnectCatchesUpOnlyOnRecentThreads: with 500 sessions nobody
// wrote in for days, a new gateway session (READY after the old one was
// invalidated) reads the channel history of the thread in use only, not of
// every thread ever opened, and the message typed while no session existed
// still arrives.
func TestDiscordReconnectCatchesUpOnlyOnRecentThreads(t *testing.T) {
	t.Parallel()
	e := newDiscordEnv(t, func(cfg *config.Config, _ *discordEnv) {
		seedDormant(t, cfg.DataDir, 500, func(i int) storage.ThreadKey {
			id := fmt.Sprintf("15%017d", i)
			return storage.ThreadKey{Platform: "discord", Team: dGuild, Channel: id, Thread: id}
		})
	})
	fake := e.fake
	e.scripts.add("oscar", answerPrompt)
	th, _ := e.open("oscar: recent work")
	e.waitBot(th, "⏱")

	before := len(fake.Requests())
	readies := fake.Readies()
	fake.InvalidateSession(false)
	gap := "typed while the session was gone"
	fake.UserMessage(th, dAlice, gap)
	if err := fake.WaitForReady(e.ctx, readies+1); err != nil {
		t.Fatal(err)
	}
	e.waitBot(th, "answer to: "+gap)

	var read []string
	for _, r := range fake.Requests()[before:] {
		if r.Method == http.MethodGet && r.Route == "GET /api/v9/channels/{channel}/messages" {
			read = append(read, r.Path)
		}
	}
	if len(read) != 1 || !strings.Contains(read[0], "/channels/"+th+"/") {
		t.Errorf("channel history read on reconnect: %v, want one read, of %s (not of the 500 dormant threads)", read, th)
	}
	for _, r := range fake.Requests() {
		if r.Status == http.StatusTooManyRequests {
			t.Errorf("429 on %s %s: want none", r.Method, r.Path)
		}
	}
}
