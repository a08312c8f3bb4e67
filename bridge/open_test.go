package bridge

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

func nightly(delivery string) OpenRequest {
	return OpenRequest{
		Platform: "test", Channel: "C-ops", Title: "⏰ nightly", Text: "check the nightly build",
		Author: chat.Author{ID: "schedule", Name: "schedule nightly"}, Origin: "schedule nightly",
		Delivery: delivery,
	}
}

// An Open opens one thread with its title, the request becomes the
// session's first prompt, the bot answers there, and the thread keeps its
// origin; the same delivery again opens nothing and asks nothing.
func TestOpenStartsASessionOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("all green") })

	th, err := r.b.Open(r.ctx, nightly("nightly/1"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	r.waitRuns(th, 1)
	r.waitText(th, "all green")
	if got := r.chat.Openings(); len(got) != 1 || got[0] != th {
		t.Fatalf("openings = %v, want one: %v", got, th)
	}
	msgs := r.chat.Messages(th)
	if len(msgs) == 0 || !strings.HasPrefix(msgs[0].Text, "⏰ nightly\n> check the nightly build") {
		t.Errorf("the opening message = %+v, want the title and the request quoted", msgs)
	}
	if got := userTexts(r.lastRequest()); len(got) != 1 || !strings.Contains(got[0], "check the nightly build") {
		t.Errorf("the model was asked %q, want the request", got)
	}
	rec, err := r.thread(th)
	if err != nil || rec.Origin != "schedule nightly" || rec.Repo != "app" {
		t.Errorf("thread record = %+v, %v; want origin %q on app", rec, err, "schedule nightly")
	}

	// A person who follows up there finds it in their !sessions, from where
	// it came.
	r.say(th, alice, "also the flaky test", false)
	r.waitRuns(th, 2)
	r.say(th, alice, "!sessions", false)
	r.waitUntil("the sessions list", func() bool { return len(r.chat.Whispers()) > 0 })
	if w := r.chat.Whispers(); !strings.Contains(w[0], "from schedule nightly") {
		t.Errorf("!sessions = %q, want the session's origin", w[0])
	}

	again, err := r.b.Open(r.ctx, nightly("nightly/1"))
	if err != nil || again != th {
		t.Fatalf("Open of the same delivery = %v, %v; want %v", again, err, th)
	}
	r.flush()
	if n := len(r.chat.Openings()); n != 1 {
		t.Errorf("%d threads opened for one delivery, want 1", n)
	}
	if n := len(r.requests()); n != 2 {
		t.Errorf("%d model requests, want 2: the delivery's and Alice's", n)
	}
}

// With a Thread name, later deliveries continue the thread it opened.
func TestOpenContinuesANamedThread(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("done") })
	first := nightly("nightly/1")
	first.Thread = "schedule/nightly"
	th, err := r.b.Open(r.ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	r.waitRuns(th, 1)
	second := first
	second.Delivery, second.Text = "nightly/2", "and the release branch"
	th2, err := r.b.Open(r.ctx, second)
	if err != nil || th2 != th {
		t.Fatalf("second Open = %v, %v; want the same thread %v", th2, err, th)
	}
	r.waitRuns(th, 2)
	if n := len(r.chat.Openings()); n != 1 {
		t.Errorf("%d threads opened, want 1", n)
	}
	if got := userTexts(r.lastRequest()); len(got) != 2 || !strings.Contains(got[1], "and the release branch") {
		t.Errorf("the second run's user messages = %q, want both requests", got)
	}
}

// failingStore fails the first call of one of its methods, as a process
// that dies at that point would leave things: the write is not made.
type failingStore struct {
	storage.Store
	finish, accept atomic.Int32 // calls left to fail
}

var errCut = errors.New("cut: the process died here")

func (s *failingStore) FinishOpening(ctx context.Context, platform, key string, th storage.ThreadKey) (storage.ThreadKey, error) {
	if s.finish.Add(-1) >= 0 {
		return storage.ThreadKey{}, errCut
	}
	return s.Store.FinishOpening(ctx, platform, key, th)
}

func (s *failingStore) AcceptInboundInThread(ctx context.Context, key storage.ThreadKey, init storage.ThreadInit, in storage.Inbound) (storage.Accepted, error) {
	if s.accept.Add(-1) >= 0 {
		return storage.Accepted{}, errCut
	}
	return s.Store.AcceptInboundInThread(ctx, key, init, in)
}

// An opening cut off after its message was posted and before its thread
// was recorded, or after that and before its request was stored, opens
// one thread when it is tried again, and runs its request once.
func TestOpenCutOffOpensOneThread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cut  func(*failingStore)
	}{
		{"after the post", func(s *failingStore) { s.finish.Store(1) }},
		{"after recording the thread", func(s *failingStore) { s.accept.Store(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &failingStore{}
			r := newRig(t, func(c *Config, _ *Platform) { fs.Store = c.Store; c.Store = fs })
			r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
			tc.cut(fs)
			if _, err := r.b.Open(r.ctx, nightly("nightly/7")); !errors.Is(err, errCut) {
				t.Fatalf("the cut Open = %v, want the cut", err)
			}
			th, err := r.b.Open(r.ctx, nightly("nightly/7"))
			if err != nil {
				t.Fatalf("Open again: %v", err)
			}
			r.waitRuns(th, 1)
			if got := r.chat.Openings(); len(got) != 1 || got[0] != th {
				t.Errorf("openings = %v, want one: %v", got, th)
			}
			if n := len(r.requests()); n != 1 {
				t.Errorf("%d model requests, want 1", n)
			}
		})
	}
}

// The caller is trusted, but the channel's repositories and the platform's
// allowed_channels hold: a refused Open posts nothing.
func TestOpenKeepsToTheChannelsRules(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(_ *Config, p *Platform) {
		p.AllowedChannels = []string{"C-ops", "C-web"}
		p.Channels = map[string][]string{"C-web": {"web"}}
	})
	req := nightly("x/1")
	req.Channel = "C-elsewhere"
	if _, err := r.b.Open(r.ctx, req); err == nil || !strings.Contains(err.Error(), "allowed_channels") {
		t.Errorf("Open in a channel not allowed = %v, want refused", err)
	}
	req.Channel, req.Repo = "C-web", "app"
	if _, err := r.b.Open(r.ctx, req); err == nil || !strings.Contains(err.Error(), "can't be opened") {
		t.Errorf("Open of a repository the channel may not open = %v, want refused", err)
	}
	req.Delivery, req.Text = "x/2", "  "
	if _, err := r.b.Open(r.ctx, req); err == nil {
		t.Error("an empty request was opened")
	}
	if got := r.chat.Openings(); len(got) != 0 {
		t.Errorf("refused Opens opened %v", got)
	}
}
