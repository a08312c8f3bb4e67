package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
)

// call is one adapter call as the platform would have seen it.
type call struct {
	Kind   string // post, edit, react, upload, status
	Thread chat.ThreadRef
	ID     string // the message posted, edited or reacted to
	Text   string // post and edit text, status, upload comment
	Emoji  string
	Add    bool
	// Actions are the buttons of an "actions" call (chat.Actioner), by id.
	Actions []string
	At      time.Time // when the call was made (fake time inside synctest)
	Err     error     // what the platform answered, nil if accepted
}

// recorder is an in-memory chat platform: it implements chat.Adapter and every
// capability the outbox uses, records each call with its time, and can refuse
// calls. It behaves like a platform where it matters: editing a message that
// was never posted fails.
type recorder struct {
	latency time.Duration // how long each call takes

	mu       sync.Mutex
	calls    []call
	known    map[string]bool // message ids that exist
	nextID   int
	inFlight map[string]int // per thread key
	overlaps []call         // calls made while another call of their thread was in flight
	// fail, if set, may refuse a call (it sees Kind, Thread, ID, Text, Emoji).
	fail func(c call) error
}

func newRecorder() *recorder {
	return &recorder{known: map[string]bool{}, inFlight: map[string]int{}}
}

func (r *recorder) Platform() string { return "test" }

func (r *recorder) Run(ctx context.Context, _ chat.Handler) error {
	<-ctx.Done()
	return nil
}

func (r *recorder) Limits() chat.Limits { return chat.Limits{MaxMessageChars: 3500} }

func (r *recorder) Post(ctx context.Context, thread chat.ThreadRef, text string) (string, error) {
	c, err := r.do(ctx, call{Kind: "post", Thread: thread, Text: text})
	return c.ID, err
}

func (r *recorder) Edit(ctx context.Context, thread chat.ThreadRef, id, text string) error {
	_, err := r.do(ctx, call{Kind: "edit", Thread: thread, ID: id, Text: text})
	return err
}

func (r *recorder) SetActions(ctx context.Context, thread chat.ThreadRef, id, text string, actions []chat.Action) error {
	ids := []string{}
	for _, a := range actions {
		ids = append(ids, a.ID)
	}
	_, err := r.do(ctx, call{Kind: "actions", Thread: thread, ID: id, Text: text, Actions: ids})
	return err
}

func (r *recorder) React(ctx context.Context, thread chat.ThreadRef, id, emoji string, add bool) error {
	_, err := r.do(ctx, call{Kind: "react", Thread: thread, ID: id, Emoji: emoji, Add: add})
	return err
}

func (r *recorder) Upload(ctx context.Context, thread chat.ThreadRef, name string, content []byte, comment string) error {
	_, err := r.do(ctx, call{Kind: "upload", Thread: thread, ID: name, Text: comment})
	return err
}

func (r *recorder) SetStatus(ctx context.Context, thread chat.ThreadRef, status string) error {
	_, err := r.do(ctx, call{Kind: "status", Thread: thread, Text: status})
	return err
}

var errNoMessage = errors.New("message_not_found")

func (r *recorder) do(ctx context.Context, c call) (call, error) {
	c.At = time.Now()
	key := c.Thread.Key()
	r.mu.Lock()
	r.inFlight[key]++
	if r.inFlight[key] > 1 {
		r.overlaps = append(r.overlaps, c)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[key]--
		r.mu.Unlock()
	}()

	if r.latency > 0 {
		t := time.NewTimer(r.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return c, ctx.Err()
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		c.Err = r.fail(c)
	}
	if c.Err == nil {
		switch c.Kind {
		case "post":
			r.nextID++
			c.ID = fmt.Sprintf("m%d", r.nextID)
			r.known[c.ID] = true
		case "edit", "actions":
			if !r.known[c.ID] {
				c.Err = errNoMessage
			}
		}
	}
	r.calls = append(r.calls, c)
	return c, c.Err
}

func (r *recorder) setFail(f func(c call) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = f
}

// accepted returns the calls the platform accepted, in order, that match
// kind ("" for all) and keep (nil for all).
func (r *recorder) accepted(kind string, keep func(call) bool) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if c.Err == nil && (kind == "" || c.Kind == kind) && (keep == nil || keep(c)) {
			out = append(out, c)
		}
	}
	return out
}

// all returns every call, refused ones included.
func (r *recorder) all() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// adopt makes a message exist as if posted before a restart.
func (r *recorder) adopt(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known[id] = true
}

func (r *recorder) overlapping() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.overlaps)
}

// plainAdapter has none of the optional capabilities.
type plainAdapter struct{ r *recorder }

func (p plainAdapter) Platform() string                              { return "plain" }
func (p plainAdapter) Run(ctx context.Context, h chat.Handler) error { return p.r.Run(ctx, h) }
func (p plainAdapter) Limits() chat.Limits                           { return p.r.Limits() }
func (p plainAdapter) Post(ctx context.Context, th chat.ThreadRef, text string) (string, error) {
	return p.r.Post(ctx, th, text)
}

var (
	_ chat.Adapter      = (*recorder)(nil)
	_ chat.Editor       = (*recorder)(nil)
	_ chat.Reactor      = (*recorder)(nil)
	_ chat.Uploader     = (*recorder)(nil)
	_ chat.StatusSetter = (*recorder)(nil)
)

func ref(channel, thread string) chat.ThreadRef {
	return chat.ThreadRef{Platform: "test", Team: "T1", Channel: channel, Thread: thread}
}

// start returns an Outbox over a that the test closes when it ends (inside
// the bubble, so a goroutine the Outbox leaves behind fails the test).
func start(t *testing.T, a chat.Adapter, cfg outbox.Config) *outbox.Outbox {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	o := outbox.New(a, cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := o.Close(ctx); err != nil {
			t.Errorf("Close: got %v, want nil", err)
		}
	})
	return o
}

func flush(t *testing.T, o *outbox.Outbox) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := o.Flush(ctx); err != nil {
		t.Fatalf("Flush: got %v, want nil", err)
	}
}

func times(cs []call) []time.Time {
	out := make([]time.Time, len(cs))
	for i, c := range cs {
		out[i] = c.At
	}
	return out
}

// checkBucket replays calls through an ideal token bucket (burst tokens, one
// more per every) and reports the first call that found it empty.
func checkBucket(t *testing.T, name string, ts []time.Time, every time.Duration, burst int) {
	t.Helper()
	ts = slices.Clone(ts)
	slices.SortFunc(ts, time.Time.Compare)
	tokens := float64(burst)
	var last time.Time
	for i, at := range ts {
		if i > 0 {
			tokens = min(float64(burst), tokens+float64(at.Sub(last))/float64(every))
		}
		last = at
		if tokens < 1-1e-9 {
			t.Errorf("%s: call %d at %v found %.3f tokens; want every call within %d per %v, burst %d",
				name, i, at.Format("15:04:05.000"), tokens, 1, every, burst)
			return
		}
		tokens--
	}
}

// checkWindow reports a window of the given length holding more than n calls.
func checkWindow(t *testing.T, name string, ts []time.Time, n int, window time.Duration) {
	t.Helper()
	ts = slices.Clone(ts)
	slices.SortFunc(ts, time.Time.Compare)
	lo := 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= window {
			lo++
		}
		if got := hi - lo + 1; got > n {
			t.Errorf("%s: %d calls between %v and %v; want at most %d in any %v",
				name, got, ts[lo].Format("15:04:05.000"), ts[hi].Format("15:04:05.000"), n, window)
			return
		}
	}
}

// checkSpacing reports two calls closer than gap.
func checkSpacing(t *testing.T, name string, ts []time.Time, gap time.Duration) {
	t.Helper()
	for i := 1; i < len(ts); i++ {
		if d := ts[i].Sub(ts[i-1]); d < gap {
			t.Errorf("%s: calls %d and %d %v apart; want at least %v", name, i-1, i, d, gap)
			return
		}
	}
}
