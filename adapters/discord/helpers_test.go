package discord_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

const (
	guild   = discordfake.DefaultGuildID
	general = discordfake.DefaultChannelID
	alice   = discordfake.AliceID
	bob     = discordfake.BobID
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 10 * time.Second

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// baseConfig is the adapter's configuration for a fake.
func baseConfig(fake *discordfake.Server) discord.Config {
	return discord.Config{Token: fake.Token(), APIURL: fake.URL()}
}

// recorder is the chat.Handler of these tests: it records every Receive and
// behaves like the bridge where the adapter can tell (de-duplication by event
// id, sessions opened by mentions, cursors for ActiveThreads).
type recorder struct {
	a *discord.Adapter

	mu       sync.Mutex
	changed  chan struct{}
	received []chat.Inbound
	accepted map[string]bool
	sessions map[string]*cursor
	active   int              // ActiveThreads calls
	closed   []chat.ThreadRef // CloseThread calls

	fail   func(chat.Inbound) bool // Receive fails
	refuse func(chat.Inbound) bool // Receive whispers and refuses
	block  chan struct{}           // Receive of the text "block" waits for it to close
}

type cursor struct {
	ref      chat.ThreadRef
	lastSeen string
}

var knownRepos = []string{"app", "web"}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}), accepted: map[string]bool{}, sessions: map[string]*cursor{}}
}

func (h *recorder) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *recorder) Receive(ctx context.Context, in chat.Inbound) (chat.Receipt, error) {
	h.mu.Lock()
	h.received = append(h.received, in)
	h.notifyLocked()
	fail, refuse, block := h.fail, h.refuse, h.block
	h.mu.Unlock()
	if fail != nil && fail(in) {
		return 0, errors.New("database is locked")
	}
	if block != nil && in.Text == "block" {
		select {
		case <-block:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if refuse != nil && refuse(in) {
		if err := h.a.Whisper(ctx, in, "not for you"); err != nil {
			return 0, err
		}
		return chat.Refused, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.notifyLocked()
	if h.accepted[in.EventID] {
		return chat.Duplicate, nil
	}
	s := h.sessions[in.Thread.Key()]
	if s == nil && !in.Mention {
		return chat.Ignored, nil
	}
	if s == nil {
		s = &cursor{ref: in.Thread}
		h.sessions[in.Thread.Key()] = s
	}
	h.accepted[in.EventID] = true
	if in.MessageID != "" && snowflakeAfter(in.MessageID, s.lastSeen) {
		s.lastSeen = in.MessageID
	}
	return chat.Accepted, nil
}

func snowflakeAfter(x, y string) bool {
	return len(x) > len(y) || (len(x) == len(y) && x > y)
}

func (h *recorder) Describe(in chat.Inbound) (string, string, error) {
	repo, thread := in.Repo, in.Thread
	if repo == "" {
		repo = "app"
	}
	if !slices.Contains(knownRepos, repo) {
		return "", "", fmt.Errorf("unknown repository %q; known repositories: %s", repo, strings.Join(knownRepos, ", "))
	}
	return repo, "bot/discord-" + thread.Thread, nil
}

func (h *recorder) ActiveThreads(context.Context) ([]chat.ThreadCursor, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.notifyLocked()
	h.active++
	var out []chat.ThreadCursor
	for _, s := range h.sessions {
		out = append(out, chat.ThreadCursor{Thread: s.ref, LastSeen: s.lastSeen})
	}
	return out, nil
}

func (h *recorder) CloseThread(_ context.Context, thread chat.ThreadRef) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	defer h.notifyLocked()
	h.closed = append(h.closed, thread)
	delete(h.sessions, thread.Key())
	return nil
}

func (h *recorder) set(f func(h *recorder)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// waitFor waits until cond (called with h locked) holds.
func (h *recorder) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		h.mu.Lock()
		ok := cond()
		ch := h.changed
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// inbound waits for the first Receive of the event and returns it.
func (h *recorder) inbound(t testing.TB, eventID string) chat.Inbound {
	t.Helper()
	var in chat.Inbound
	h.waitFor(t, "Receive of event "+eventID, func() bool {
		i := slices.IndexFunc(h.received, func(x chat.Inbound) bool { return x.EventID == eventID })
		if i >= 0 {
			in = h.received[i]
		}
		return i >= 0
	})
	return in
}

// count is how many Receive calls matched.
func (h *recorder) count(match func(chat.Inbound) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, in := range h.received {
		if match(in) {
			n++
		}
	}
	return n
}

func (h *recorder) activeCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.active
}

// env is a running adapter on a fake Discord.
type env struct {
	fake *discordfake.Server
	a    *discord.Adapter
	h    *recorder
}

// start runs an adapter against fake until the test ends, and waits for READY.
func start(t *testing.T, fake *discordfake.Server, cfg discord.Config) *env {
	t.Helper()
	a, err := discord.New(cfg, discord.Options{Logger: testLogger(t), Commands: bridge.Commands()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	discord.SetReceiveRetry(a, time.Millisecond, time.Millisecond, time.Millisecond)
	h := newRecorder()
	h.a = a
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run after its context ended: got %v, want nil", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("Run did not return within %v of its context ending", waitTimeout)
		}
	})
	if err := fake.WaitForReady(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	return &env{fake: fake, a: a, h: h}
}

// barrier sends a message in a session thread and waits until the adapter
// delivered it: everything dispatched before it has been processed, since
// the adapter processes events in order.
func (e *env) barrier(t testing.TB, thread string) {
	t.Helper()
	m := e.fake.UserMessage(thread, alice, "barrier")
	e.h.inbound(t, m.ID)
}

// untilNotLimited calls f again after each *chat.RateLimitError, waiting the
// time Discord asked for, as the outbox does.
func untilNotLimited(t testing.TB, f func() error) error {
	t.Helper()
	for range 20 {
		err := f()
		rl, limited := chat.IsRateLimit(err)
		if !limited {
			return err
		}
		select {
		case <-time.After(rl.RetryAfter):
		case <-ctxT(t).Done():
			return err
		}
	}
	return errors.New("still rate limited after 20 tries")
}

// restSession is a plain discordgo REST session on the fake, for arranging
// state behind the adapter's back.
func restSession(t testing.TB, fake *discordfake.Server) *discordgo.Session {
	t.Helper()
	s, err := discordgo.New("Bot " + fake.Token())
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(fake.URL())
	s.Client = &http.Client{Transport: rewriteTo{base: base}}
	return s
}

type rewriteTo struct{ base *url.URL }

func (rw rewriteTo) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rw.base.Scheme, rw.base.Host, rw.base.Host
	return http.DefaultTransport.RoundTrip(r)
}

func commandNames(cmds []discordfake.Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	return out
}

// tableNames are the names of the slash commands: /code, then the
// bridge's table.
func tableNames() []string {
	var out []string
	for _, c := range discord.Commands(bridge.Commands()) {
		out = append(out, c.Name)
	}
	return out
}

// checkCommandsAreTheTable fails t unless the registered commands are /code
// and then the bridge's table, each as the table says it: name,
// description, and its argument as one string option.
func checkCommandsAreTheTable(t *testing.T, cmds []discordfake.Command) {
	t.Helper()
	table := bridge.Commands()
	if len(cmds) != 1+len(table) || cmds[0].Name != "code" {
		t.Fatalf("registered commands %v, want /code and the %d of the bridge's table", commandNames(cmds), len(table))
	}
	for i, spec := range table {
		c := cmds[1+i]
		type option struct {
			typ               int
			name, description string
			required          bool
		}
		var want []option
		if a := spec.Arg; a != nil {
			want = []option{{int(discordgo.ApplicationCommandOptionString), a.Name, a.Description, a.Required}}
		}
		var got []option
		for _, o := range c.Options {
			got = append(got, option{o.Type, o.Name, o.Description, o.Required})
		}
		if c.Name != spec.Name || c.Description != spec.Description || !slices.Equal(got, want) {
			t.Errorf("registered command %d: got /%s %q %+v, want the table's /%s %q %+v", 1+i, c.Name, c.Description, got, spec.Name, spec.Description, want)
		}
	}
}
