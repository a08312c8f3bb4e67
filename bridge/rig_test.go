package bridge

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/openai"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/workspace"
)

// rig is a real Bridge on real parts: SQLite in a temporary folder, a
// workspace manager on a bare git remote, the OpenAI client against the fake
// LLM server, and the in-process chat platform behind an outbox.
type rig struct {
	tb     testing.TB
	ctx    context.Context
	chat   *chatfake.Adapter
	llm    *llmfake.Server
	remote *gitremote.Repo
	db     *sqlite.DB
	wsm    *workspace.Manager
	out    *outbox.Outbox
	b      *Bridge
	cfg    Config

	cancelRun context.CancelFunc
	runErr    chan error
	stopped   bool
}

// rigOption changes the Bridge's config (and its one platform) before New.
type rigOption func(*Config, *Platform)

const (
	mainModel  = "fake-model"
	otherModel = "other-model"
	testKey    = "sk-test-key-0123456789"
)

var (
	alice = chatfake.Person{ID: "U1", Name: "Alice", Email: "alice@example.com"}
	bob   = chatfake.Person{ID: "U2", Name: "Bob", Email: "bob@example.com"}
)

func testThread(n string) chat.ThreadRef {
	return chat.ThreadRef{Platform: "test", Team: "T1", Channel: "C1", Thread: n}
}

func newRig(tb testing.TB, opts ...rigOption) *rig {
	tb.Helper()
	r := &rig{tb: tb, chat: chatfake.New("test", 3500), llm: llmfake.New(tb)}
	var cancel context.CancelFunc
	limit := 60 * time.Second
	if _, bench := tb.(*testing.B); bench {
		limit = 10 * time.Minute
	}
	r.ctx, cancel = context.WithTimeout(context.Background(), limit)
	tb.Cleanup(cancel)
	r.remote = gitremote.NewBare(tb, gitremote.Options{Files: map[string]string{"README.md": "# app\n", "main.go": "package main\n"}})
	dir := tb.TempDir()
	level := slog.LevelInfo
	var w io.Writer = tb.Output()
	if _, bench := tb.(*testing.B); bench {
		w, level = io.Discard, slog.LevelError
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))

	db, err := sqlite.Open(r.ctx, filepath.Join(dir, "threadsmith.db"), sqlite.WithLogger(log))
	if err != nil {
		tb.Fatalf("sqlite.Open: %v", err)
	}
	r.db = db
	r.wsm, err = workspace.New(workspace.Config{
		DataDir:         filepath.Join(dir, "workspaces"),
		Repos:           []workspace.Repo{{Name: "app", URL: r.remote.Path, DefaultBranch: "main"}},
		CleanupInterval: -1,
		Logger:          log,
	})
	if err != nil {
		tb.Fatalf("workspace.New: %v", err)
	}
	model, err := openai.New(openai.Config{BaseURL: r.llm.URL(), APIKey: testKey})
	if err != nil {
		tb.Fatalf("openai.New: %v", err)
	}
	p := Platform{Adapter: r.chat}
	r.cfg = Config{
		Store:      r.db,
		Workspaces: r.wsm,
		Model:      model,
		Agent: AgentConfig{
			Model:       ModelInfo{Name: mainModel, ContextWindow: 128000, MaxOutputTokens: 1000},
			Models:      []ModelInfo{{Name: otherModel, ContextWindow: 64000, MaxOutputTokens: 1000}},
			Retry:       agent.RetrySettings{Enabled: true, MaxRetries: 2, BaseDelay: 10 * time.Millisecond},
			Compaction:  compaction.Settings{Enabled: true, ReserveTokens: 16384, KeepRecentTokens: 20000},
			BashTimeout: 20 * time.Second,
			GitName:     "threadsmith",
			GitEmail:    "threadsmith@localhost",
		},
		DefaultRepo: "app",
		Secrets:     []string{testKey},
		Logger:      log,
	}
	for _, o := range opts {
		o(&r.cfg, &p)
	}
	// An option may wrap the platform (benchmarks time its posts).
	r.out = outbox.New(p.Adapter, outbox.Config{Logger: log})
	p.Outbox = r.out
	r.cfg.Platforms = []Platform{p}
	r.b, err = New(r.cfg)
	if err != nil {
		tb.Fatalf("bridge.New: %v", err)
	}
	rctx, cancelRun := context.WithCancel(context.Background())
	r.cancelRun = cancelRun
	r.runErr = make(chan error, 1)
	go func() { r.runErr <- r.b.Run(rctx) }()
	if _, err := r.chat.Handler(r.ctx); err != nil {
		tb.Fatalf("the adapter never started: %v", err)
	}
	tb.Cleanup(func() { r.stop(10 * time.Second) })
	return r
}

// stop shuts everything down as cmd/bot does: adapters, then the bridge
// within grace, then the outbox, workspaces and storage. It returns the
// bridge's Shutdown error.
func (r *rig) stop(grace time.Duration) error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	r.cancelRun()
	select {
	case err := <-r.runErr:
		if err != nil {
			r.tb.Errorf("Run: %v", err)
		}
	case <-time.After(grace + 10*time.Second):
		r.tb.Errorf("Run did not return within %v of its context's end", grace+10*time.Second)
	}
	err := r.b.Shutdown(ctx)
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	if cerr := r.out.Close(cctx); cerr != nil {
		r.tb.Errorf("closing the outbox: %v", cerr)
	}
	if cerr := r.wsm.Close(cctx); cerr != nil {
		r.tb.Errorf("closing the workspaces: %v", cerr)
	}
	if cerr := r.db.Close(); cerr != nil {
		r.tb.Errorf("closing storage: %v", cerr)
	}
	return err
}

// say sends a person's message and requires the bridge to accept it.
func (r *rig) say(th chat.ThreadRef, who chatfake.Person, text string, mention bool, files ...chat.Attachment) string {
	r.tb.Helper()
	id, rc, err := r.chat.Say(r.ctx, th, who, text, mention, files...)
	if err != nil {
		r.tb.Fatalf("Say(%q): %v", text, err)
	}
	if rc != chat.Accepted {
		r.tb.Fatalf("Say(%q): receipt %v, want accepted", text, rc)
	}
	return id
}

// receipt is the outcome of a Say made in the background.
type receipt struct {
	rc  chat.Receipt
	err error
}

// sayLater says text in the background (a message the test holds on its way
// in) and hands its receipt on the channel it returns; recv waits for it.
func (r *rig) sayLater(th chat.ThreadRef, who chatfake.Person, text string, mention bool) <-chan receipt {
	got := make(chan receipt, 1)
	go func() {
		_, rc, err := r.chat.Say(r.ctx, th, who, text, mention)
		got <- receipt{rc, err}
	}()
	return got
}

func (r *rig) waitText(th chat.ThreadRef, s string) {
	r.tb.Helper()
	if err := r.chat.WaitText(r.ctx, th, s); err != nil {
		r.tb.Fatal(err)
	}
}

// waitCount waits until s appears at least n times in the thread's bot messages.
func (r *rig) waitCount(th chat.ThreadRef, s string, n int) {
	r.tb.Helper()
	err := r.chat.WaitFor(r.ctx, func() bool { return strings.Count(r.chat.Transcript(th), s) >= n })
	if err != nil {
		r.tb.Fatalf("waiting for %d × %q: %v; the thread has:\n%s", n, s, err, r.chat.Transcript(th))
	}
}

// waitRuns waits until n runs of the thread have ended (each ends with a footer).
func (r *rig) waitRuns(th chat.ThreadRef, n int) { r.tb.Helper(); r.waitCount(th, "_⏱", n) }

// flush waits until everything the bridge queued for the platform was sent.
func (r *rig) flush() {
	r.tb.Helper()
	if err := r.out.Flush(r.ctx); err != nil {
		r.tb.Fatalf("flushing the outbox: %v", err)
	}
}

func (r *rig) requests() []llmfake.Request { return r.llm.Requests() }

// chatRequests are the requests of runs (not compaction summaries).
func (r *rig) lastRequest() llmfake.Request {
	r.tb.Helper()
	reqs := r.llm.Requests()
	if len(reqs) == 0 {
		r.tb.Fatal("no LLM request was made")
	}
	return reqs[len(reqs)-1]
}

func (r *rig) thread(th chat.ThreadRef) (storage.Thread, error) {
	return r.db.GetThread(r.ctx, storeKey(th))
}

// owner is the thread's owner in memory, or nil.
func (r *rig) owner(th chat.ThreadRef) *thread {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.b.threads[th.Key()]
}

// live reports whether the thread has an owner goroutine in memory.
func (r *rig) live(th chat.ThreadRef) bool { return r.owner(th) != nil }

// userTexts lists the contents of a request's user messages, without the
// request headers ([Requested by … · date]) the bridge puts before prompts.
func userTexts(req llmfake.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == "user" && !strings.HasPrefix(m.Content, "[Requested by ") {
			out = append(out, m.Content)
		}
	}
	return out
}

// waitUntil polls cond (for state no event announces: storage rows, the
// bridge's thread table) until it holds or the rig's deadline passes.
func (r *rig) waitUntil(what string, cond func() bool) {
	r.tb.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-r.ctx.Done():
			r.tb.Fatalf("timed out waiting until %s", what)
		}
	}
}

// recv waits for a value from ch as long as the rig's context lasts: a test
// that waits on an owner's item waits forever if the owner ended first (its
// inbox is dropped), so every such wait is bounded and says what it waited for.
func recv[T any](r *rig, what string, ch <-chan T) T {
	r.tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-r.ctx.Done():
		r.tb.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// gate holds LLM requests until opened.
type gate struct {
	arrived chan struct{}
	open    chan struct{}
	once    sync.Once
}

// newGate returns a closed gate; it opens by itself when the test ends, so
// that no request is left hanging in the fake server.
func newGate(tb testing.TB) *gate {
	g := &gate{arrived: make(chan struct{}, 64), open: make(chan struct{})}
	tb.Cleanup(g.release)
	return g
}

func (g *gate) hold() {
	g.arrived <- struct{}{}
	<-g.open
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// holdFirst is an LLM handler that holds the first request at g and answers
// every request with reply.
func (g *gate) holdFirst(reply llmfake.Response) func(llmfake.Request) llmfake.Response {
	var n atomic.Int32
	return func(llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
		}
		return reply
	}
}

func (r *rig) waitArrived(g *gate) {
	r.tb.Helper()
	select {
	case <-g.arrived:
	case <-r.ctx.Done():
		r.tb.Fatal("the LLM request never arrived")
	}
}

// ownerFunc is code a test runs as a thread's owner, between its messages.
type ownerFunc func()

func (f ownerFunc) runOnOwner() { f() }
