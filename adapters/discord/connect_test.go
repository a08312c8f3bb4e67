package discord_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// TestGlobalCommands: without guild_ids the commands are registered globally,
// replacing whatever was registered before.
func TestGlobalCommands(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	if _, err := restSession(t, fake).ApplicationCommandCreate(fake.ApplicationID(), "",
		&discordgo.ApplicationCommand{Name: "old", Description: "gone"}); err != nil {
		t.Fatal(err)
	}
	start(t, fake, baseConfig(fake))
	cmds, err := fake.WaitForCommandOverwrite(ctxT(t), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := commandNames(cmds), tableNames(); !slices.Equal(got, want) {
		t.Errorf("global commands: got %v, want %v", got, want)
	}
	if n := fake.CommandOverwrites(discordfake.DefaultGuildID); n != 0 {
		t.Errorf("guild overwrites without guild_ids: got %d, want 0", n)
	}
}

// runUntilError runs an adapter that is expected to fail on its own.
func runUntilError(t *testing.T, cfg discord.Config) error {
	t.Helper()
	a, err := discord.New(cfg, discord.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	err = a.Run(ctx, newRecorder())
	if ctx.Err() != nil {
		t.Fatalf("Run kept retrying for %v, want it to fail at once", waitTimeout)
	}
	return err
}

// TestDisallowedIntent: a bot whose MESSAGE_CONTENT intent is off in the
// developer portal gets close 4014, and Run says how to fix it.
func TestDisallowedIntent(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t, discordfake.WithDisabledPrivilegedIntents(discordfake.IntentMessageContent))
	err := runUntilError(t, baseConfig(fake))
	if err == nil || !strings.Contains(err.Error(), "MESSAGE_CONTENT") || !strings.Contains(err.Error(), "Developer Portal") {
		t.Errorf("Run: got %v, want an error telling to enable the MESSAGE_CONTENT intent in the Developer Portal", err)
	}
	if got := fake.Intents(); got&discordfake.IntentMessageContent == 0 {
		t.Errorf("identify intents: got %b, want MESSAGE_CONTENT requested", got)
	}
}

// TestBadToken: a rejected token (close 4004) ends Run with an error naming
// the key, without the token.
func TestBadToken(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	cfg := baseConfig(fake)
	cfg.Token = "not-the-token"
	err := runUntilError(t, cfg)
	if err == nil || !strings.Contains(err.Error(), "discord.token") || strings.Contains(err.Error(), cfg.Token) {
		t.Errorf("Run: got %v, want an error naming discord.token and not quoting it", err)
	}
}

// TestRateLimits: the chat-facing calls never wait on their own: a bucket
// discordgo knows to be empty, a 429 and a global 429 all come back as
// *chat.RateLimitError. No gateway is needed for REST.
func TestRateLimits(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	const window = 5 * time.Second
	fake := discordfake.New(t, discordfake.WithRateLimits(discordfake.RateLimits{
		MessageEdit: discordfake.Limit{Requests: 2, Window: window},
	}))
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	a, err := discord.New(baseConfig(fake), discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	id, err := a.Post(ctx, ref, "v0")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"v1", "v2"} {
		if err := a.Edit(ctx, ref, id, text); err != nil {
			t.Fatalf("edit %s: %v", text, err)
		}
	}
	start := time.Now()
	err = a.Edit(ctx, ref, id, "v3")
	rl, ok := chat.IsRateLimit(err)
	if !ok || rl.Global || rl.RetryAfter <= 0 || rl.RetryAfter > window {
		t.Fatalf("third edit in the window: got %v, want a route *chat.RateLimitError with 0 < RetryAfter ≤ %v", err, window)
	}
	if time.Since(start) > time.Second || fake.RateLimited() != 0 {
		t.Errorf("third edit: took %v with %d 429s, want an immediate answer without a request", time.Since(start), fake.RateLimited())
	}

	// Another process's requests emptied the bucket: Discord answers 429.
	b, err := discord.New(baseConfig(fake), discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Edit(ctx, ref, id, "v3")
	if rl, ok := chat.IsRateLimit(err); !ok || rl.Global || rl.RetryAfter <= 0 || rl.RetryAfter > window {
		t.Errorf("edit on a bucket Discord says is full: got %v, want a route *chat.RateLimitError", err)
	}
	if fake.RateLimited() != 1 {
		t.Errorf("429s: got %d, want 1", fake.RateLimited())
	}
	if m, _ := fake.Message(id); m.Content != "v2" {
		t.Errorf("message after refused edits: got %q, want %q", m.Content, "v2")
	}

	global := discordfake.New(t, discordfake.WithRateLimits(discordfake.RateLimits{
		Global: discordfake.Limit{Requests: 2, Window: window},
	}))
	g, err := discord.New(baseConfig(global), discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := g.Post(ctx, ref, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	err = g.SetStatus(ctx, chat.ThreadRef{Platform: "discord", Team: guild, Channel: discordfake.DefaultOtherChannelID}, "working")
	if rl, ok := chat.IsRateLimit(err); !ok || !rl.Global || rl.RetryAfter <= 0 || rl.RetryAfter > window {
		t.Errorf("request over the global limit: got %v, want a global *chat.RateLimitError", err)
	}
}

// TestAPIURL: discord.api_url replaces https://discord.com/ for REST, path
// prefix included (a proxy), and the bot token goes along.
func TestAPIURL(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths, auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "42", "channel_id": "7", "content": "x"})
	}))
	defer srv.Close()
	a, err := discord.New(discord.Config{Token: "tok", APIURL: srv.URL + "/proxy/discord"}, discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := chat.ThreadRef{Platform: "discord", Team: "1", Channel: "7", Thread: "7"}
	if id, err := a.Post(ctxT(t), ref, "x"); err != nil || id != "42" {
		t.Fatalf("Post through the proxy: got %q, %v", id, err)
	}
	if err := a.React(ctxT(t), ref, "42", "eyes", true); err != nil {
		t.Fatalf("React through the proxy: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/proxy/discord/api/v9/channels/7/messages", "/proxy/discord/api/v9/channels/7/messages/42/reactions/%F0%9F%91%80/@me"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths: got %q, want %q", paths, want)
	}
	if auths[0] != "Bot tok" {
		t.Errorf("Authorization: got %q, want %q", auths[0], "Bot tok")
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  discord.Config
		want string
	}{
		{"no token", discord.Config{}, "discord.token"},
		{"bad api_url", discord.Config{Token: "t", APIURL: "ftp://x/"}, "discord.api_url"},
	} {
		if _, err := discord.New(c.cfg, discord.Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %s", c.name, err, c.want)
		}
	}
}
