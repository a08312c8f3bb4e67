package discord_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// twoShardWorld is the default guild and a second guild that Discord's
// formula ((guild_id >> 22) % 2) puts on the other shard of two.
func twoShardWorld(t *testing.T) (a, b discordfake.Guild, shardOfA int) {
	t.Helper()
	a = discordfake.DefaultGuild()
	id, err := strconv.ParseUint(a.ID, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	shardOfA = int((id >> 22) % 2)
	// A conversation lives in a thread (top-level chatter is not input).
	a.Channels = append(a.Channels, discordfake.Channel{ID: strconv.FormatUint(id+200, 10), Name: "work", Type: discordfake.ChannelTypePublicThread, ParentID: discordfake.DefaultChannelID})
	b = discordfake.DefaultGuild()
	b.ID = strconv.FormatUint(id+1<<22, 10)
	b.Name = "other guild"
	parent := strconv.FormatUint(id+1<<22+100, 10)
	b.Channels = []discordfake.Channel{{ID: parent, Name: "general"}, {ID: strconv.FormatUint(id+1<<22+200, 10), Name: "work", Type: discordfake.ChannelTypePublicThread, ParentID: parent}}
	b.Roles = []discordfake.Role{{ID: b.ID, Name: "@everyone", Permissions: discordfake.DefaultPermissions}, {ID: discordfake.DevRoleID, Name: "dev"}}
	return a, b, shardOfA
}

// Two replicas, one shard each: each gets the messages of its own guild and
// none of the other's, so a thread has one receiver.
func TestShardsSplitGuildsBetweenReplicas(t *testing.T) {
	t.Parallel()
	ga, gb, shardOfA := twoShardWorld(t)
	fake := discordfake.New(t, discordfake.WithGuilds(ga, gb))
	envs := make([]*env, 2)
	for shard := range 2 {
		cfg := baseConfig(fake)
		cfg.ShardID, cfg.ShardCount = shard, 2
		envs[shard] = start(t, fake, cfg)
	}
	if err := fake.WaitForReady(ctxT(t), 2); err != nil {
		t.Fatal(err)
	}
	onA, onB := envs[shardOfA].h, envs[1-shardOfA].h
	chanA, chanB := ga.Channels[len(ga.Channels)-1].ID, gb.Channels[1].ID
	bot := "<@" + fake.BotUserID() + "> "
	fake.UserMessage(chanA, alice, bot+"first A")
	fake.UserMessage(chanB, alice, bot+"first B")
	// A gateway session's dispatches are in order: once each replica has
	// its own last message, it has had every message meant for it.
	fake.UserMessage(chanA, alice, bot+"last A")
	fake.UserMessage(chanB, alice, bot+"last B")
	for _, c := range []struct {
		h          *recorder
		own, other string
	}{{onA, "A", "B"}, {onB, "B", "A"}} {
		c.h.waitFor(t, "last "+c.own, func() bool {
			for _, in := range c.h.received {
				if in.Text == "last "+c.own {
					return true
				}
			}
			return false
		})
		if n := c.h.count(func(in chat.Inbound) bool { return strings.HasSuffix(in.Text, " "+c.other) }); n != 0 {
			t.Errorf("the replica of guild %s received %d message(s) of guild %s", c.own, n, c.other)
		}
		if n := c.h.count(func(in chat.Inbound) bool { return strings.HasSuffix(in.Text, " "+c.own) }); n != 2 {
			t.Errorf("the replica of guild %s received %d of its 2 messages", c.own, n)
		}
	}
}

// orderedThreads is a recorder whose ActiveThreads lists threads in a fixed
// order, so that a test knows which catch-up read comes last.
type orderedThreads struct {
	*recorder
	order []chat.ThreadRef
}

func (o orderedThreads) ActiveThreads(ctx context.Context) ([]chat.ThreadCursor, error) {
	var out []chat.ThreadCursor
	for _, ref := range o.order {
		out = append(out, chat.ThreadCursor{Thread: ref, LastSeen: "1"})
	}
	return out, nil
}

// A replica catches up only the threads of its own shard's guilds: another
// replica's connection does that for the rest.
func TestShardCatchUpSkipsOtherShardsGuilds(t *testing.T) {
	t.Parallel()
	ga, gb, shardOfA := twoShardWorld(t)
	fake := discordfake.New(t, discordfake.WithGuilds(ga, gb))
	cfg := baseConfig(fake)
	cfg.ShardID, cfg.ShardCount = shardOfA, 2
	a, err := discord.New(cfg, discord.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := newRecorder()
	h.a = a
	chanA, chanB := ga.Channels[len(ga.Channels)-1].ID, gb.Channels[1].ID
	// B's thread first: by the time A's is read, B's would have been.
	handler := orderedThreads{recorder: h, order: []chat.ThreadRef{
		{Platform: discord.Platform, Team: gb.ID, Channel: chanB, Thread: chanB},
		{Platform: discord.Platform, Team: ga.ID, Channel: chanA, Thread: chanA},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, handler) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Error("Run did not return after its context ended")
		}
	}()
	reads := func(ch string) func(discordfake.Request) bool {
		return func(r discordfake.Request) bool {
			return r.Method == "GET" && r.Path == "/api/v9/channels/"+ch+"/messages"
		}
	}
	if _, err := fake.WaitForRequest(ctxT(t), reads(chanA)); err != nil {
		t.Fatalf("the thread of the replica's own guild was not caught up: %v", err)
	}
	for _, r := range fake.Requests() {
		if reads(chanB)(r) {
			t.Errorf("the other shard's thread was read at catch-up: %s %s", r.Method, r.Path)
		}
	}
}
