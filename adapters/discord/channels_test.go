package discord_test

import (
	"net/http"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// startWithThread starts the adapter and a thread people started in
// general, which the adapter has seen when it returns.
func startWithThread(t *testing.T) (*discordfake.Server, *env, *discordgo.Channel) {
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	m := fake.UserMessage(general, alice, "start a thread here")
	th, err := restSession(t, fake).MessageThreadStart(general, m.ID, "a thread", 60)
	if err != nil {
		t.Fatal(err)
	}
	e.barrier(t, th.ID)
	return fake, e, th
}

// ParentChannel names the channel a thread lives in, which an MCP server's
// channels list: from discordgo's state, else by asking Discord once (a
// thread the gateway never announced). A channel the state knows to be no
// thread is its own parent without a request, and one Discord does not know
// is its own (no server limited to a channel reaches it).
func TestParentChannel(t *testing.T) {
	t.Parallel()
	fake, e, th := startWithThread(t)
	ref := func(channel string) chat.ThreadRef {
		return chat.ThreadRef{Team: guild, Channel: channel, Thread: channel}
	}
	gets := func() int {
		n := 0
		for _, r := range fake.Requests() {
			if r.Method == http.MethodGet && r.Route == "GET /api/v9/channels/{channel}" {
				n++
			}
		}
		return n
	}
	ctx := ctxT(t)

	before := gets()
	if got := e.a.ParentChannel(ctx, ref(th.ID)); got != general {
		t.Errorf("ParentChannel(a thread in state) = %q, want %q", got, general)
	}
	if got := e.a.ParentChannel(ctx, ref(general)); got != general {
		t.Errorf("ParentChannel(a text channel) = %q, want itself", got)
	}
	if n := gets() - before; n != 0 {
		t.Errorf("%d channel look-ups for channels discordgo's state knows, want 0", n)
	}

	discord.ForgetChannel(e.a, th.ID)
	before = gets()
	if got := e.a.ParentChannel(ctx, ref(th.ID)); got != general {
		t.Errorf("ParentChannel(a thread the state does not know) = %q, want %q (asked of Discord)", got, general)
	}
	if n := gets() - before; n != 1 {
		t.Errorf("%d channel look-ups for a thread the state does not know, want 1", n)
	}
	if got := e.a.ParentChannel(ctx, ref("999999999999999999")); got != "999999999999999999" {
		t.Errorf("ParentChannel(an unknown channel) = %q, want itself", got)
	}
}

// A mention that may open a session in a thread people started names the
// thread's parent channel (Inbound.Parent), whose mapping and allowlist
// apply; /code in a text channel names that channel. A DM names none.
func TestInboundNamesTheParentChannel(t *testing.T) {
	t.Parallel()
	fake, e, th := startWithThread(t)
	mention := fake.UserMessage(th.ID, alice, "<@"+fake.BotUserID()+"> repo=web fix it")
	if in := e.h.inbound(t, mention.ID); !in.Mention || in.Parent != general || in.Repo != "" {
		t.Errorf("mention in a thread: Inbound %+v, want a mention with Parent %s and no Repo", in, general)
	}
	id := fake.SlashCommand(general, alice, "code", map[string]any{"prompt": "fix it", "repo": "web"})
	if in := e.h.inbound(t, id); in.Parent != general || in.Repo != "web" {
		t.Errorf("/code: Inbound %+v, want Parent %s and Repo web", in, general)
	}
	dm := fake.UserMessage(fake.DMChannel(alice), alice, "hello")
	if in := e.h.inbound(t, dm.ID); !in.DM || in.Parent != "" {
		t.Errorf("DM: Inbound %+v, want a DM without Parent", in)
	}
}
