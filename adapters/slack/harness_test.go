package slack

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// waitTimeout bounds every wait in these tests; nothing legitimately takes this long.
const waitTimeout = 10 * time.Second

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// recorder is a chat.Handler that records every Receive and de-duplicates as
// the bridge does: by event id and by (channel, ts).
type recorder struct {
	mu       sync.Mutex
	calls    []chat.Inbound // every Receive, in order
	accepted []chat.Inbound
	seenEv   map[string]bool
	seenMsg  map[string]bool
	// fail, when set, decides whether a Receive fails (before anything is recorded
	// as seen, so a redelivery can succeed).
	fail func(in chat.Inbound) error
	// block, when set, is called (without the lock) before Receive does anything.
	block  func(in chat.Inbound)
	active []chat.ThreadCursor
	// activeCalls counts ActiveThreads calls.
	activeCalls int
	activeCh    chan struct{}
	// closed are the threads CloseThread was told of.
	closed   []chat.ThreadRef
	closedCh chan chat.ThreadRef

	ch chan chat.Inbound // every Receive, for waiting
}

func newRecorder() *recorder {
	return &recorder{
		seenEv: map[string]bool{}, seenMsg: map[string]bool{},
		ch: make(chan chat.Inbound, 4096), activeCh: make(chan struct{}, 64), closedCh: make(chan chat.ThreadRef, 64),
	}
}

func (r *recorder) CloseThread(ctx context.Context, thread chat.ThreadRef) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = append(r.closed, thread)
	r.closedCh <- thread
	return nil
}

func (r *recorder) Receive(ctx context.Context, in chat.Inbound) (chat.Receipt, error) {
	r.mu.Lock()
	block := r.block
	r.mu.Unlock()
	if block != nil {
		block(in)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, in)
	defer func() { r.ch <- in }()
	if r.fail != nil {
		if err := r.fail(in); err != nil {
			return 0, err
		}
	}
	msgKey := in.Thread.Channel + "/" + in.MessageID
	if r.seenEv[in.EventID] || r.seenMsg[msgKey] {
		r.seenEv[in.EventID] = true
		return chat.Duplicate, nil
	}
	r.seenEv[in.EventID] = true
	r.seenMsg[msgKey] = true
	r.accepted = append(r.accepted, in)
	return chat.Accepted, nil
}

func (r *recorder) Describe(chat.Inbound) (string, string, error) {
	return "app", "bot/slack-test", nil
}

func (r *recorder) ActiveThreads(ctx context.Context) ([]chat.ThreadCursor, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.activeCalls++
	select {
	case r.activeCh <- struct{}{}:
	default:
	}
	return append([]chat.ThreadCursor(nil), r.active...), nil
}

func (r *recorder) setFail(f func(chat.Inbound) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = f
}

func (r *recorder) setActive(tc ...chat.ThreadCursor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active = tc
}

func (r *recorder) Calls() []chat.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chat.Inbound(nil), r.calls...)
}

func (r *recorder) Accepted() []chat.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chat.Inbound(nil), r.accepted...)
}

// next waits for the next Receive call.
func (r *recorder) next(t testing.TB) chat.Inbound {
	t.Helper()
	select {
	case in := <-r.ch:
		return in
	case <-time.After(waitTimeout):
		t.Fatalf("no Receive within %s", waitTimeout)
	}
	return chat.Inbound{}
}

// nextFor waits for the next Receive call about message ts, skipping others.
func (r *recorder) nextFor(t testing.TB, ts string) chat.Inbound {
	t.Helper()
	for {
		if in := r.next(t); in.MessageID == ts {
			return in
		}
	}
}

var _ chat.Handler = (*recorder)(nil)

// slackConfig is the configuration of an adapter on srv.
func slackConfig(srv *slackfake.Server) Config {
	return Config{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL()}
}

// newAdapter builds an adapter on srv without running it.
func newAdapter(t testing.TB, srv *slackfake.Server, mutate ...func(*Config, *Options)) *Adapter {
	t.Helper()
	cfg := slackConfig(srv)
	var opts Options
	for _, m := range mutate {
		m(&cfg, &opts)
	}
	a, err := New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// running is an adapter whose Run goroutine the test stops.
type running struct {
	*Adapter
	cancel context.CancelFunc
	done   chan error
	// eventsURL is the Events API endpoint in http mode.
	eventsURL string
}

// stop cancels Run and returns its error.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(waitTimeout):
		t.Fatalf("Run did not return within %s of cancel", waitTimeout)
	}
	return nil
}

// start runs a on h until the test ends, and checks that Run then returns nil.
func start(t testing.TB, a *Adapter, h chat.Handler) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Adapter: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx, h) }()
	t.Cleanup(func() {
		if err := r.stop(t); err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	})
	return r
}

// startSocket runs an adapter on srv over Socket Mode and waits for its
// connection.
func startSocket(t testing.TB, srv *slackfake.Server, h chat.Handler, mutate ...func(*Config, *Options)) *running {
	t.Helper()
	r := start(t, newAdapter(t, srv, mutate...), h)
	if err := srv.WaitConnections(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	return r
}

// startHTTP runs an adapter on srv over the HTTP Events API and points the fake's
// event delivery at it.
func startHTTP(t testing.TB, srv *slackfake.Server, h chat.Handler, secret string, tamper slackfake.Tamper) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := newAdapter(t, srv, func(c *Config, o *Options) {
		c.Mode = ModeHTTP
		c.SigningSecret = secret
		c.AppToken = ""
		o.Listener = ln
	})
	r := start(t, a, h)
	r.eventsURL = "http://" + ln.Addr().String() + "/slack/events"
	srv.UseHTTPEvents(slackfake.HTTPEvents{URL: r.eventsURL, SigningSecret: secret, Tamper: tamper})
	return r
}

var errStore = errors.New("store is down")
