package discordfake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// protocolErrors collects what discordgo logs when it cannot decode what the
// fake sent: any entry means the fake spoke something discordgo does not.
var protocolErrors struct {
	sync.Mutex
	list []string
}

func TestMain(m *testing.M) {
	discordgo.Logger = func(level, caller int, format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		low := strings.ToLower(msg)
		if strings.Contains(low, "unmarshal") || strings.Contains(low, "decoding") || strings.Contains(low, "uncompressing") {
			protocolErrors.Lock()
			protocolErrors.list = append(protocolErrors.list, msg)
			protocolErrors.Unlock()
		}
	}
	os.Exit(m.Run())
}

func checkProtocolErrors(t *testing.T) {
	t.Helper()
	protocolErrors.Lock()
	defer protocolErrors.Unlock()
	if len(protocolErrors.list) > 0 {
		t.Errorf("discordgo could not decode the fake's payloads: got %q, want none", protocolErrors.list)
	}
}

// rewrite sends requests for https://discord.com to the fake, the way the
// adapter redirects discordgo's fixed endpoints.
type rewrite struct {
	base *url.URL
	next http.RoundTripper
}

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != "discord.com" {
		return rw.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rw.base.Scheme, rw.base.Host, rw.base.Host
	return rw.next.RoundTrip(r)
}

func clientFor(t testing.TB, fake *discordfake.Server) *http.Client {
	t.Helper()
	base, err := url.Parse(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: rewrite{base: base, next: http.DefaultTransport}}
}

// restSession is a discordgo session for REST only: it never opens the
// gateway, so it needs no Close (which sleeps a second).
func restSession(t testing.TB, fake *discordfake.Server, token string) *discordgo.Session {
	t.Helper()
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		t.Fatal(err)
	}
	s.Client = clientFor(t, fake)
	return s
}

const botIntents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsGuildMessageReactions |
	discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// openSession opens a gateway session on the fake and closes it at cleanup.
func openSession(t testing.TB, fake *discordfake.Server) (*discordgo.Session, *events) {
	t.Helper()
	s := restSession(t, fake, fake.Token())
	s.Identify.Intents = botIntents
	ev := record(s)
	if err := s.Open(); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ev
}

// events records every dispatch discordgo decoded, as its typed struct.
type events struct {
	mu      sync.Mutex
	list    []any
	changed chan struct{}
}

func record(s *discordgo.Session) *events {
	e := &events{changed: make(chan struct{})}
	s.AddHandler(func(_ *discordgo.Session, ev *discordgo.Event) {
		if ev.Struct == nil {
			return
		}
		// Decode a private copy: discordgo's state keeps mutating the
		// structs it handed to handlers (GUILD_CREATE fills READY's guilds).
		v := reflect.New(reflect.TypeOf(ev.Struct).Elem()).Interface()
		if err := json.Unmarshal(ev.RawData, v); err != nil {
			v = ev.Struct
		}
		e.add(v)
	})
	s.AddHandler(func(_ *discordgo.Session, rl *discordgo.RateLimit) { e.add(rl) })
	return e
}

func (e *events) add(v any) {
	e.mu.Lock()
	e.list = append(e.list, v)
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

// waitEvent waits for a decoded event of type T that satisfies match.
func waitEvent[T any](t testing.TB, e *events, match func(T) bool) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		e.mu.Lock()
		for _, x := range e.list {
			if v, ok := x.(T); ok && (match == nil || match(v)) {
				e.mu.Unlock()
				return v
			}
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			var zero T
			t.Fatalf("no %T event arrived that matched: %v", zero, ctx.Err())
			return zero
		}
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// restCode extracts Discord's JSON error code from a discordgo REST error.
func restCode(t testing.TB, err error) int {
	t.Helper()
	re, ok := err.(*discordgo.RESTError)
	if !ok || re.Message == nil {
		t.Fatalf("got error %v (%T), want a *discordgo.RESTError with a JSON message", err, err)
	}
	return re.Message.Code
}
