package main

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	slackadapter "github.com/threadsmith/threadsmith/adapters/slack"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/schedule"
)

// The Slack end-to-end tests run the program (Main, built from config as an
// operator configures it) against the fake Slack (Web API and Socket Mode or
// the HTTP Events API on 127.0.0.1), the fake LLM, a bare git remote and a
// real SQLite file, and check what docs/behaviour.md promises a Slack user.

const (
	aliceID   = "U0ALICE01"
	slackChan = "C0E2E0001"
	// signingSecret is the HTTP Events API secret of the http-mode tests.
	signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"
)

// slackEnv is one Slack end-to-end setup.
type slackEnv struct {
	tb     testing.TB
	m      *Main
	slack  *slackfake.Server
	llm    *llmfake.Server
	remote *gitremote.Repo
	cfg    config.Config
	ctx    context.Context

	logLevel slog.Level
	logOut   *testLog
	quiet    bool
	httpMode bool
	httpURL  string // the bot's Events API Request URL in http mode
	starts   int    // Socket Mode connections the fake should have seen
	// now, when set before start, is the bridge's clock.
	now func() time.Time
	// scheduleClock, when set before start, is the schedules' clock.
	scheduleClock schedule.Clock
}

// slackSetup collects a slackEnv's options.
type slackSetup struct {
	fake     []slackfake.Option
	tweaks   []func(*config.Config)
	quiet    bool
	httpMode bool
}

type slackOption func(*slackSetup)

// withFake passes options to the fake Slack.
func withFake(o ...slackfake.Option) slackOption {
	return func(s *slackSetup) { s.fake = append(s.fake, o...) }
}

// withConfig changes the bot's configuration.
func withConfig(f func(*config.Config)) slackOption {
	return func(s *slackSetup) { s.tweaks = append(s.tweaks, f) }
}

// quietLogs drops the bot's logs (benchmarks, load tests).
func quietLogs() slackOption { return func(s *slackSetup) { s.quiet = true } }

// httpEvents runs the bot in slack.mode http behind the fake's signed HTTP
// Events API delivery.
func httpEvents() slackOption { return func(s *slackSetup) { s.httpMode = true } }

// slackConfig is the configuration an operator writes for Slack, pointed at
// the fakes.
func slackConfig(dataDir string, fake *slackfake.Server, llmURL, remote string) config.Config {
	cfg := config.Default()
	cfg.DataDir = dataDir
	cfg.LLM.BaseURL = llmURL
	cfg.LLM.APIKey = "sk-test-key-0001"
	cfg.LLM.Model = "fake-model"
	cfg.Slack.Enabled = true
	cfg.Slack.Mode = config.SlackSocket
	cfg.Slack.BotToken = fake.BotToken()
	cfg.Slack.AppToken = fake.AppToken()
	cfg.Slack.APIURL = fake.APIURL()
	cfg.Workspace.DefaultRepo = "app"
	cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: remote, DefaultBranch: "main"}}
	cfg.ShutdownGrace = 10 * time.Second
	return cfg
}

func newSlackEnv(tb testing.TB, opts ...slackOption) *slackEnv {
	tb.Helper()
	e := newSlackFakes(tb, opts...)
	e.start()
	return e
}

// newSlackFakes sets up the fakes and the configuration without starting the
// bot (the process tests run it as a program).
func newSlackFakes(tb testing.TB, opts ...slackOption) *slackEnv {
	tb.Helper()
	var s slackSetup
	for _, o := range opts {
		o(&s)
	}
	e := &slackEnv{tb: tb, llm: llmfake.New(tb), quiet: s.quiet, httpMode: s.httpMode, logLevel: slog.LevelDebug}
	e.logOut = &testLog{w: tb.Output()}
	tb.Cleanup(e.logOut.close) // runs after every Main started later is closed
	e.slack = slackfake.New(tb, s.fake...)
	e.slack.AddUser(slackfake.User{ID: aliceID, Name: "alice", RealName: "Alice Liddell", Email: "alice@example.com"})
	e.remote = gitremote.NewBare(tb, gitremote.Options{Files: map[string]string{"README.md": "# app\n", "main.go": "package main\n"}})
	e.cfg = slackConfig(filepath.Join(tb.TempDir(), "data"), e.slack, e.llm.URL(), e.remote.Path)
	for _, f := range s.tweaks {
		f(&e.cfg)
	}
	var cancel context.CancelFunc
	e.ctx, cancel = context.WithTimeout(context.Background(), 90*time.Second)
	tb.Cleanup(cancel)
	return e
}

// start runs a Main on the env's config (again after stop) and waits until it
// is connected to the fake Slack.
func (e *slackEnv) start() {
	e.tb.Helper()
	m := NewMain()
	cfg := e.cfg
	m.Config = &cfg
	m.Now = e.now
	if e.scheduleClock != nil {
		m.ScheduleClock = e.scheduleClock
	}
	if e.quiet {
		m.Logger = slog.New(slog.DiscardHandler)
	} else {
		m.Logger = slog.New(slog.NewTextHandler(e.logOut, &slog.HandlerOptions{Level: e.logLevel}))
	}
	if e.httpMode {
		// The adapter gets an open listener, so the fake's first request
		// waits in its backlog instead of racing the bot's start.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			e.tb.Fatal(err)
		}
		sc := slackAdapterConfig(cfg.Slack)
		sc.Mode, sc.SigningSecret, sc.Listen = slackadapter.ModeHTTP, signingSecret, ln.Addr().String()
		a, err := slackadapter.New(sc, slackadapter.Options{Listener: ln, Logger: m.Logger.With("component", "slack")})
		if err != nil {
			e.tb.Fatal(err)
		}
		cfg.Slack.Enabled = false // this adapter stands in for the one Main would build
		m.Adapters = []chat.Adapter{a}
		e.httpURL = "http://" + ln.Addr().String() + "/slack/events"
		e.slack.UseHTTPEvents(slackfake.HTTPEvents{URL: e.httpURL, SigningSecret: signingSecret})
	}
	if err := m.Run(e.ctx); err != nil {
		e.tb.Fatalf("Run: %v", err)
	}
	e.m = m
	e.tb.Cleanup(func() { _ = m.Close() })
	if !e.httpMode {
		e.starts++
		if err := e.slack.WaitConnections(e.ctx, e.starts); err != nil {
			e.tb.Fatal(err)
		}
	}
}

func (e *slackEnv) stop() {
	e.tb.Helper()
	if err := e.m.Close(); err != nil {
		e.tb.Fatalf("Close: %v", err)
	}
}

// testLog is the bot's log output: the test's output until the test ends,
// then nowhere. A write to a finished test's output panics the whole test
// binary, so a timer that outlives Main.Close must cost one log line, not
// the suite.
type testLog struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	return l.w.Write(p)
}

func (l *testLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// watched are the Web API methods whose calls change what a thread shows.
var watched = []string{
	"chat.postMessage", "chat.update", "chat.delete", "chat.postEphemeral",
	"reactions.add", "reactions.remove", "files.completeUploadExternal",
	"chat.startStream", "chat.appendStream", "chat.stopStream",
}

// waitFor waits until cond holds, re-checking it after every call of the bot
// that changes what Slack shows; what names the wait in the failure, and
// state (optional) describes what was there instead.
func (e *slackEnv) waitFor(what string, cond func() bool, state ...func() string) {
	e.tb.Helper()
	for {
		n := len(e.slack.Calls())
		if cond() {
			return
		}
		if err := e.waitCallsAfter(n); err != nil {
			msg := fmt.Sprintf("waiting for %s: %v", what, err)
			for _, s := range state {
				msg += "\n" + s()
			}
			e.tb.Fatal(msg)
		}
	}
}

// waitCallsAfter waits until one of the watched methods has been called more
// often than it had been when the fake had recorded n calls in all.
func (e *slackEnv) waitCallsAfter(n int) error {
	calls := e.slack.Calls()
	if len(calls) > n {
		calls = calls[:n]
	}
	counts := map[string]int{}
	for _, c := range calls {
		counts[c.Method]++
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	errc := make(chan error, len(watched))
	for _, m := range watched {
		go func() {
			_, err := e.slack.WaitCalls(ctx, m, counts[m]+1)
			errc <- err
		}()
	}
	err := <-errc
	cancel()
	for range len(watched) - 1 {
		<-errc
	}
	if e.ctx.Err() != nil {
		return e.ctx.Err()
	}
	return err
}

// botMessages returns the bot's messages in a thread, oldest first.
func (e *slackEnv) botMessages(ch, root string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range e.slack.Messages(ch, root) {
		if m.User == e.slack.BotUserID() {
			out = append(out, m)
		}
	}
	return out
}

// transcript is the thread as people see it, for failure messages.
func (e *slackEnv) transcript(ch, root string) string {
	var b strings.Builder
	for _, m := range e.slack.Messages(ch, root) {
		who := m.User
		if who == "" {
			who = m.BotID
		}
		fmt.Fprintf(&b, "--- %s %s\n%s\n", m.TS, who, m.Text)
	}
	return b.String()
}

// threadText is every bot message of a thread joined, with Slack's entities
// decoded.
func (e *slackEnv) threadText(ch, root string) string {
	var texts []string
	for _, m := range e.botMessages(ch, root) {
		texts = append(texts, html.UnescapeString(m.Text))
	}
	return strings.Join(texts, "\n")
}

// waitText waits until a message of the bot in the thread contains s.
func (e *slackEnv) waitText(ch, root, s string) {
	e.tb.Helper()
	e.waitFor(fmt.Sprintf("%q in thread %s", s, root),
		func() bool { return strings.Contains(e.threadText(ch, root), s) },
		func() string { return "thread:\n" + e.transcript(ch, root) })
}

func hasSlackReaction(rs []slackfake.Reaction, name string) bool {
	return slices.ContainsFunc(rs, func(r slackfake.Reaction) bool { return r.Name == name })
}

// waitReaction waits until the bot's reaction name is on (present) or off a
// message.
func (e *slackEnv) waitReaction(ch, ts, name string, present bool) {
	e.tb.Helper()
	e.waitFor(fmt.Sprintf("reaction %s on %s present=%v", name, ts, present),
		func() bool { return hasSlackReaction(e.slack.Reactions(ch, ts), name) == present },
		func() string { return fmt.Sprintf("reactions: %+v", e.slack.Reactions(ch, ts)) })
}

// waitRequests waits for n chat requests at the fake LLM.
func (e *slackEnv) waitRequests(n int) []llmfake.Request {
	e.tb.Helper()
	reqs, err := e.llm.WaitRequests(e.ctx, n)
	if err != nil {
		e.tb.Fatalf("waiting for %d LLM requests (have %d): %v", n, len(e.llm.Requests()), err)
	}
	return reqs
}

// waitGate waits until the gate holds an LLM request.
func (e *slackEnv) waitGate(g *gate) {
	e.tb.Helper()
	select {
	case <-g.arrived:
	case <-e.ctx.Done():
		e.tb.Fatal("the LLM request never arrived")
	}
}

// firstPostIn returns the first chat.postMessage call into a thread.
func (e *slackEnv) firstPostIn(root string) (slackfake.Call, bool) {
	for _, c := range e.slack.CallsTo("chat.postMessage") {
		if c.Params.Get("thread_ts") == root && c.Error == "" {
			return c, true
		}
	}
	return slackfake.Call{}, false
}

// userTexts lists the user messages of an LLM request, without the request
// headers ([Requested by … · date]) the bridge puts before prompts.
func userTexts(r llmfake.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" && !strings.HasPrefix(m.Content, "[Requested by ") {
			out = append(out, m.Content)
		}
	}
	return out
}

func countFooters(text string) int { return strings.Count(text, "⏱") }

func TestSlackMentionStatusAnswerPushAndNotice(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	e.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "write", Args: `{"path":"hello.txt","content":"hello world\n"}`}),
		llmfake.TextReply("I wrote ", "`hello.txt`."),
	)
	root := e.slack.Mention(slackChan, aliceID, "add a hello file", "")

	// The status message: in the thread, within a second of the event.
	var status slackfake.Call
	e.waitFor("the status message", func() bool {
		var ok bool
		status, ok = e.firstPostIn(root)
		return ok
	})
	ds := e.slack.DeliveriesFor(slackChan, root)
	if len(ds) == 0 || ds[0].Sent.IsZero() {
		t.Fatalf("deliveries of the mention = %+v", ds)
	}
	lat := status.Time.Sub(ds[0].Sent)
	if lat > time.Second {
		t.Errorf("status message %s after the event was delivered, want within 1s", lat)
	}
	t.Logf("mention delivered → status message posted: %s", lat)
	if txt := status.Params.Get("text"); !strings.HasPrefix(txt, "⏳ working… · `app` · `bot/slack-") {
		t.Errorf("status message = %q, want the working line with repo and branch", txt)
	}

	e.waitText(slackChan, root, "I wrote `hello.txt`.")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	var branch string
	for _, b := range e.remote.Branches(t) {
		if strings.HasPrefix(b, "bot/slack-") {
			branch = b
		}
	}
	if branch == "" {
		t.Fatalf("no bot/slack-… branch on the remote: %v", e.remote.Branches(t))
	}
	if got := e.remote.Files(t, branch)["hello.txt"]; got != "hello world" {
		t.Errorf("hello.txt on %s = %q, want %q", branch, got, "hello world")
	}
	commits := e.remote.Commits(t, branch)
	if !strings.Contains(commits[0].Message, "Thread: https://fake.slack.test/archives/") || commits[0].Subject() != "add a hello file" || !strings.Contains(commits[0].Message, "Co-authored-by: alice <alice@example.com>") {
		t.Errorf("commit = %q, want the request as subject and Alice as co-author", commits[0].Message)
	}
	tr := e.threadText(slackChan, root)
	if !strings.Contains(tr, "⬆️ pushed `"+branch+"`") {
		t.Errorf("the push notice does not name %s:\n%s", branch, tr)
	}
	e.waitText(slackChan, root, "⏱")
	e.waitText(slackChan, root, "✓ `write` `hello.txt`")
	for _, m := range e.slack.Messages(slackChan, root)[1:] {
		if m.ThreadTS != root || m.Broadcast {
			t.Errorf("message %s not in the thread (thread_ts %q, broadcast %v)", m.TS, m.ThreadTS, m.Broadcast)
		}
	}
	if strings.Contains(e.transcript(slackChan, root), "sk-test-key") {
		t.Error("the LLM API key reached Slack")
	}
	if err := e.slack.WaitAllAcked(e.ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSlackFollowUpWhileBusyIsAcknowledgedThenDelivered(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	g := newGate()
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
			return llmfake.TextReply("first answer")
		}
		return llmfake.TextReply("answer to: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "first request", "")
	e.waitGate(g)
	follow := e.slack.UserMessage(slackChan, aliceID, "and also this", root)
	e.waitReaction(slackChan, follow, "hourglass_flowing_sand", true)
	if hasSlackReaction(e.slack.Reactions(slackChan, follow), "eyes") {
		t.Fatal("👀 on the follow-up before it was delivered")
	}
	close(g.open)
	e.waitText(slackChan, root, "answer to: and also this")
	e.waitReaction(slackChan, follow, "eyes", true)
	e.waitReaction(slackChan, follow, "hourglass_flowing_sand", false)
	tr := e.threadText(slackChan, root)
	if i, j := strings.Index(tr, "first answer"), strings.Index(tr, "answer to: and also this"); i < 0 || i > j {
		t.Fatalf("answers out of order:\n%s", tr)
	}
	if got := len(e.llm.Requests()); got != 2 {
		t.Fatalf("LLM requests = %d, want 2", got)
	}
}

func TestSlackSteerWhileAToolRunsJoinsTheRun(t *testing.T) {
	t.Parallel()
	// The bash tool blocks reading a FIFO until the test writes to it: the
	// steer arrives while the tool runs, not while the model streams. The
	// sandbox shows the FIFO's folder, read-only, as an operator would a
	// toolchain.
	fifo := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(fifo)} }))
	// Opened read-write, the FIFO never blocks the test, keeps the line
	// buffered until the tool reads it (whether or not it has opened the FIFO
	// yet), and closing it at the end gives a still-blocked tool its EOF.
	pipe, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pipe.Close() })
	release := func() {
		if _, err := io.WriteString(pipe, "released\n"); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			return llmfake.ToolCallReply(
				llmfake.Call{ID: "c1", Name: "bash", Args: fmt.Sprintf(`{"command":"head -n 1 %s"}`, fifo)},
				llmfake.Call{ID: "c2", Name: "write", Args: `{"path":"skipped.txt","content":"x"}`},
			)
		}
		return llmfake.TextReply("steered: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "look around", "")
	e.waitText(slackChan, root, "⏳ `bash`") // the tool line while it runs
	steer := e.slack.UserMessage(slackChan, aliceID, "!steer change course", root)
	e.waitReaction(slackChan, steer, "arrow_right_hook", true)
	if got := len(e.llm.Requests()); got != 1 {
		t.Fatalf("LLM requests while the tool runs = %d, want 1", got)
	}
	release()
	e.waitText(slackChan, root, "steered: change course")
	e.waitReaction(slackChan, steer, "eyes", true)
	e.waitReaction(slackChan, steer, "arrow_right_hook", false)
	e.waitText(slackChan, root, "⏱")

	reqs := e.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("LLM requests = %d, want 2 (one run: the steer joined it)", len(reqs))
	}
	var bashOut, skipped bool
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" && m.ToolCallID == "c1" && strings.Contains(m.Content, "released") {
			bashOut = true
		}
		if m.Role == "tool" && m.ToolCallID == "c2" && strings.Contains(m.Content, "skipped") {
			skipped = true
		}
	}
	if !bashOut || !skipped || lastUserText(reqs[1]) != "change course" {
		t.Fatalf("second request: bash output %v, write skipped %v, last user text %q; want true, true, %q",
			bashOut, skipped, lastUserText(reqs[1]), "change course")
	}
	if got := countFooters(e.threadText(slackChan, root)); got != 1 {
		t.Fatalf("footers = %d, want 1 (one run)\n%s", got, e.transcript(slackChan, root))
	}
}

func TestSlackStopAnswersWithinASecondAndListsTheQueue(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			return llmfake.Stream(llmfake.Content("thinking about it"), llmfake.Hang())
		}
		return llmfake.TextReply("later: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "do a long thing", "")
	e.waitRequests(1)
	queued := e.slack.UserMessage(slackChan, aliceID, "queued behind it", root)
	e.waitReaction(slackChan, queued, "hourglass_flowing_sand", true)

	stop := e.slack.UserMessage(slackChan, aliceID, "!stop", root)
	var answered slackfake.Call
	e.waitFor("a message containing \"stopped\"", func() bool {
		for _, c := range e.slack.Calls() {
			if (c.Method == "chat.postMessage" || c.Method == "chat.update") && c.Error == "" &&
				strings.Contains(c.Params.Get("text"), "stopped") {
				answered = c
				return true
			}
		}
		return false
	}, func() string { return e.transcript(slackChan, root) })
	ds := e.slack.DeliveriesFor(slackChan, stop)
	if len(ds) == 0 {
		t.Fatal("the !stop message was never delivered")
	}
	if lat := answered.Time.Sub(ds[0].Sent); lat > time.Second {
		t.Errorf("\"stopped\" %s after !stop was delivered, want within 1s", lat)
	}
	e.waitText(slackChan, root, "Still queued (1)")
	e.waitText(slackChan, root, "queued behind it")
	if err := e.llm.WaitDisconnects(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("LLM requests after !stop = %d, want 1 (the queue stays queued)", got)
	}
	e.slack.UserMessage(slackChan, aliceID, "go on", root)
	e.waitText(slackChan, root, "later: ")
	if !slices.Contains(userTexts(e.llm.Requests()[1]), "queued behind it") {
		t.Fatalf("the request after !stop lacks the queued message: %q", userTexts(e.llm.Requests()[1]))
	}
}

func TestSlackRetryNoticeAndItsUpdate(t *testing.T) {
	t.Parallel()
	// Retry waits long enough that the notice's post goes out while it waits.
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.Agent.Retry.BaseDelay = 200 * time.Millisecond }))
	e.llm.Push(
		llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached for requests"),
		llmfake.HTTPError(429, "rate_limit_exceeded", "Rate limit reached for requests"),
		llmfake.TextReply("made it"),
	)
	root := e.slack.Mention(slackChan, aliceID, "hello", "")
	e.waitText(slackChan, root, "made it")
	e.waitText(slackChan, root, "retry succeeded")
	// One notice message, updated for the second attempt, then with the
	// outcome: in place, with chat.update.
	var notices []slackfake.Message
	for _, m := range e.botMessages(slackChan, root) {
		if strings.Contains(m.Text, "retrying in") {
			notices = append(notices, m)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0].Text, "(attempt 2/3)") || !strings.Contains(notices[0].Text, "retry succeeded") {
		t.Fatalf("retry notices = %d, want one saying attempt 2/3 and that the retry succeeded:\n%s", len(notices), e.transcript(slackChan, root))
	}
	posted := false
	for _, c := range e.slack.CallsTo("chat.postMessage") {
		if txt := c.Params.Get("text"); strings.Contains(txt, "retrying in") && !strings.Contains(txt, "succeeded") {
			posted = true
		}
	}
	if !posted {
		t.Fatal("no retry notice was posted while the retry was pending")
	}
	var edited bool
	for _, c := range e.slack.CallsTo("chat.update") {
		if c.Params.Get("ts") == notices[0].TS && strings.Contains(c.Params.Get("text"), "retry succeeded") {
			edited = true
		}
	}
	if !edited {
		t.Fatal("the retry notice was not edited in place to say the retry succeeded")
	}
}

func TestSlackRetryGivesUpVisibly(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.Agent.Retry.BaseDelay = 10 * time.Millisecond
		c.Agent.Retry.MaxRetries = 2
	}))
	e.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.HTTPError(503, "", "Service Unavailable") })
	root := e.slack.Mention(slackChan, aliceID, "hello", "")
	e.waitText(slackChan, root, "gave up")
	e.waitText(slackChan, root, "⏱")
	if got := len(e.llm.Requests()); got != 3 {
		t.Fatalf("LLM requests = %d, want 3 (one and two retries)", got)
	}
}

func TestSlackCompactionNotices(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withConfig(compactionConfig))
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if isSummaryReq(r) {
			return llmfake.TextReply("## Goal\nTHE-SUMMARY")
		}
		if n.Add(1) == 2 {
			return bigReply(3500)
		}
		return bigReply(200)
	})
	root := e.slack.Mention(slackChan, aliceID, "first "+strings.Repeat("x", 300), "")
	e.waitText(slackChan, root, "⏱")
	e.slack.UserMessage(slackChan, aliceID, "second", root)
	e.waitText(slackChan, root, "compacted context")
	// The notice is a message of its own: posted saying "compacting" and
	// edited to "compacted" (the outbox folds the edit into the post when
	// the compaction ends before the post went out).
	var notice bool
	for _, c := range e.slack.CallsTo("chat.postMessage") {
		if txt := c.Params.Get("text"); strings.Contains(txt, "compacting") || strings.Contains(txt, "compacted") {
			notice = true
		}
	}
	if !notice {
		t.Error("no compaction notice was posted as a message of its own")
	}
	tr := e.threadText(slackChan, root)
	if !strings.Contains(tr, "(threshold)") || !strings.Contains(tr, "→") {
		t.Fatalf("compaction notice lacks the token counts or the reason:\n%s", tr)
	}
}

func TestSlackRestartContinuesTheThread(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if len(e.llm.Requests()) == 1 {
			return llmfake.TextReply("nice to meet you, Ada")
		}
		return llmfake.TextReply("reply to: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "my name is Ada", "")
	e.waitText(slackChan, root, "⏱")
	e.stop()

	e.start()
	e.slack.UserMessage(slackChan, aliceID, "what is my name?", root) // no mention: the thread has a session
	e.waitText(slackChan, root, "reply to: what is my name?")
	reqs := e.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("LLM requests = %d, want 2", len(reqs))
	}
	joined := strings.Join(userTexts(reqs[1]), "|")
	if joined != "my name is Ada|what is my name?" {
		t.Fatalf("user messages after the restart = %q, want the earlier message once, then the new one", joined)
	}
	var assistant int
	for _, m := range reqs[1].Messages {
		if m.Role == "assistant" && strings.Contains(m.Content, "nice to meet you, Ada") {
			assistant++
		}
	}
	if assistant != 1 {
		t.Fatalf("the earlier answer appears %d times in the request, want 1", assistant)
	}
}

func TestSlackSameMentionDeliveredThreeWaysRunsOnce(t *testing.T) {
	t.Parallel()
	for _, order := range []struct {
		name   string
		opts   []slackOption
		first  string
		second string
	}{
		{"app_mention first", nil, "app_mention", "message"},
		{"message first", []slackOption{withFake(slackfake.WithMessageBeforeMention())}, "message", "app_mention"},
	} {
		t.Run(order.name, func(t *testing.T) {
			e := newSlackEnv(t, order.opts...)
			e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })
			root := e.slack.Mention(slackChan, aliceID, "hi there", "")
			ds := e.slack.DeliveriesFor(slackChan, root)
			if len(ds) != 2 || ds[0].EventType != order.first || ds[1].EventType != order.second || ds[0].EventID == ds[1].EventID {
				t.Fatalf("a mention should arrive as %s then %s with different event ids: %+v", order.first, order.second, ds)
			}
			if _, err := e.slack.WaitEventAck(e.ctx, ds[0].EventID); err != nil {
				t.Fatal(err)
			}
			e.slack.Redeliver(ds[0].EventID) // Slack saw no ack in time
			e.slack.Redeliver(ds[1].EventID)
			if err := e.slack.WaitAllAcked(e.ctx); err != nil {
				t.Fatal(err)
			}
			e.waitText(slackChan, root, "answer to: hi there")
			// A later message in the thread: if any copy of the mention had been
			// taken as input, its run would come first (one thread is serial).
			e.slack.UserMessage(slackChan, aliceID, "sentinel", root)
			e.waitText(slackChan, root, "answer to: sentinel")
			reqs := e.llm.Requests()
			if len(reqs) != 2 {
				t.Fatalf("LLM requests = %d, want 2 (the mention once, then the sentinel)", len(reqs))
			}
			if got := userTexts(reqs[1]); !slices.Equal(got, []string{"hi there", "sentinel"}) {
				t.Fatalf("user messages = %q, want the mention once", got)
			}
			if got := countFooters(e.threadText(slackChan, root)); got != 2 {
				t.Fatalf("footers = %d, want 2 runs\n%s", got, e.transcript(slackChan, root))
			}
		})
	}
}

func TestSlackBotsSelfEditsDeletionsAndJoinsAreIgnored(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t) // the fake echoes the bot's own posts back as events
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })
	root := e.slack.Mention(slackChan, aliceID, "start", "")
	e.waitText(slackChan, root, "answer to: start")
	second := e.slack.UserMessage(slackChan, aliceID, "second", root)
	e.waitText(slackChan, root, "answer to: second")

	e.slack.BotMessage(slackChan, "B0OTHERBOT", "hello from another bot", root)
	e.slack.BotMessage(slackChan, e.slack.BotID(), "a post of mine made elsewhere", root)
	e.slack.EditMessage(slackChan, second, "second, edited")
	e.slack.DeleteMessage(slackChan, second)
	e.slack.ChannelJoin(slackChan, "U0NEWCOMER")
	e.slack.UserMessage(slackChan, aliceID, "sentinel", root)
	e.waitText(slackChan, root, "answer to: sentinel")
	if err := e.slack.WaitAllAcked(e.ctx); err != nil {
		t.Fatal(err)
	}

	reqs := e.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("LLM requests = %d, want 3 (start, second, sentinel)", len(reqs))
	}
	if got := userTexts(reqs[2]); !slices.Equal(got, []string{"start", "second", "sentinel"}) {
		t.Fatalf("user messages = %q, want only what people typed", got)
	}
	var echoes int
	for _, d := range e.slack.Deliveries() {
		if d.Channel == slackChan && d.EventType == "message" && d.SubType == "" {
			for _, m := range e.botMessages(slackChan, root) {
				if m.TS == d.TS {
					echoes++
				}
			}
		}
	}
	if echoes == 0 {
		t.Fatal("the fake echoed none of the bot's posts: the self-message check was not exercised")
	}
}

func TestSlackRefusedUserGetsAPrivateNoteAndNothingRuns(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.Slack.AllowedUsers = []string{"U0BOSS001"} }))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })
	root := e.slack.Mention(slackChan, aliceID, "delete the database", "")
	if err := e.slack.WaitAllAcked(e.ctx); err != nil {
		t.Fatal(err)
	}
	eph := e.slack.Ephemerals()
	if len(eph) == 0 {
		t.Fatal("no ephemeral note for the refused user")
	}
	// Not into the mention's thread: it has no replies, and Slack does not
	// show an ephemeral message there. In the channel, alice sees it.
	if eph[0].User != aliceID || eph[0].Channel != slackChan || eph[0].ThreadTS != "" || !eph[0].Visible {
		t.Errorf("ephemeral = %+v, want a visible note to %s in %s, outside the thread %s", eph[0], aliceID, slackChan, root)
	}
	// An allowed user's mention in another thread runs: the refusal is per user.
	boss := e.slack.Mention(slackChan, "U0BOSS001", "say hi", "")
	e.waitText(slackChan, boss, "answer to: say hi")
	if got := len(e.llm.Requests()); got != 1 {
		t.Fatalf("LLM requests = %d, want 1 (only the allowed user's)", got)
	}
	if got := e.botMessages(slackChan, root); len(got) != 0 {
		t.Fatalf("the bot posted in the refused thread: %+v", got)
	}
	// One note, though Slack delivers the mention twice (app_mention and
	// message).
	if n := len(e.slack.Ephemerals()); n != 1 {
		t.Fatalf("ephemeral notes = %+v, want one", e.slack.Ephemerals())
	}
}

func TestSlackLongAnswerIsSplitWithBalancedFences(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	var b strings.Builder
	b.WriteString("Here is the program you asked for.\n\n```go\npackage main\n\nfunc main() {\n")
	for i := 0; b.Len() < 12_100; i++ {
		fmt.Fprintf(&b, "\tif n := step(%04d); n < limit && n > 0 { total += n } // keep going\n", i)
	}
	b.WriteString("}\n```\n\nThat is the whole program.")
	answer := b.String()
	if n := utf8.RuneCountInString(answer); n < 12_000 {
		t.Fatalf("answer is %d characters, want at least 12,000", n)
	}
	e.llm.Push(llmfake.TextReply(answer))
	root := e.slack.Mention(slackChan, aliceID, "write the program", "")
	e.waitText(slackChan, root, "⏱")

	msgs := e.botMessages(slackChan, root)[1:] // after the status message
	if len(msgs) < 4 {
		t.Fatalf("answer in %d messages, want at least 4 of ≤3,500 characters", len(msgs))
	}
	var code []string
	for i, m := range msgs {
		text := html.UnescapeString(m.Text) // what people see
		if n := utf8.RuneCountInString(text); n > slackadapter.MaxMessageChars {
			t.Errorf("message %d has %d characters, want ≤ %d", i, n, slackadapter.MaxMessageChars)
		}
		if f := strings.Count(text, "```"); f%2 != 0 {
			t.Errorf("message %d has %d fences, want them balanced:\n%s", i, f, text)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "\tif n := step(") {
				code = append(code, line)
			}
		}
	}
	var want []string
	for _, line := range strings.Split(answer, "\n") {
		if strings.HasPrefix(line, "\tif n := step(") {
			want = append(want, line)
		}
	}
	if !slices.Equal(code, want) {
		t.Fatalf("code lines across the messages: %d, want the %d of the answer in order", len(code), len(want))
	}
	last := html.UnescapeString(msgs[len(msgs)-1].Text)
	if !strings.Contains(last, "That is the whole program.") || !strings.Contains(last, "⏱") {
		t.Fatalf("last message = %q, want the end of the answer and the footer", last)
	}
}

// TestSlackManyThreadsStayInsideTheRateLimits streams answers in 50 threads
// (5 channels) at once while the fake enforces Slack's tiers, and checks that
// no call was rate limited, every thread got its answer and every status
// message was sealed. Both sides run ten times faster than Slack (the outbox
// reads the real clock): the bot's configured budgets and the fake's limits
// are scaled by the same factor; the fake keeps its 50 ms of grace for
// jitter between the bot's send and the fake's stamp.
func TestSlackManyThreadsStayInsideTheRateLimits(t *testing.T) {
	t.Parallel()
	const threads, channels, speed = 50, 5, 10
	limits := slackfake.SlackRateLimits()
	limits.PostMessagePerChannel.Every /= speed
	limits.UpdatePerWorkspace.Every /= speed
	limits.UpdatePerMessage.Every /= speed
	// The bot paces its calls when it sends them, the fake counts them when
	// they arrive; on a loaded machine (the race detector, parallel
	// packages) calls sent 100 ms apart can arrive together. Two tokens' worth
	// of grace absorb that and still catch a bot that does not pace, which
	// sends its 50 final answers at once.
	limits.Grace = 2 * limits.PostMessagePerChannel.Every
	e := newSlackEnv(t, quietLogs(), withFake(slackfake.WithRateLimits(limits)), withConfig(func(c *config.Config) {
		c.Slack.Rate.PostPerSecond *= speed
		c.Slack.Rate.UpdatePerMessagePerSecond *= speed
		c.Slack.Rate.UpdatePerMinute *= speed
		c.MaxConcurrentRuns = threads
	}))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		// Streamed over about a second, so status messages get preview
		// edits while the other threads stream too.
		steps := []llmfake.Step{}
		for i := range 10 {
			steps = append(steps, llmfake.Content(fmt.Sprintf("part %d of the answer. ", i)), llmfake.Delay(100*time.Millisecond))
		}
		steps = append(steps, llmfake.Content("final answer for "+lastUserText(r)), llmfake.Finish("stop"), llmfake.Done())
		return llmfake.Stream(steps...)
	})
	roots := make([]string, threads)
	chans := make([]string, threads)
	for i := range threads {
		chans[i] = fmt.Sprintf("C0LOAD%03d", i%channels)
		roots[i] = e.slack.Mention(chans[i], aliceID, fmt.Sprintf("thread %d", i), "")
	}
	// The final post of each run carries the answer and the footer. Waiting
	// on chat.postMessage alone keeps the test's own load on the fake (whose
	// lock stamps each call's arrival) light while the limits are measured.
	thread := map[string]int{}
	for i, r := range roots {
		thread[r] = i
	}
	done := map[int]bool{}
	for seen := 0; len(done) < threads; {
		posts, err := e.slack.WaitCalls(e.ctx, "chat.postMessage", seen+1)
		if err != nil {
			var missing []int
			for i := range threads {
				if !done[i] {
					missing = append(missing, i)
				}
			}
			t.Fatalf("threads without their final answer: %v: %v", missing, err)
		}
		for _, c := range posts[seen:] {
			i, ok := thread[c.Params.Get("thread_ts")]
			text := c.Params.Get("text")
			if ok && c.Error == "" && strings.Contains(text, fmt.Sprintf("final answer for thread %d", i)) && strings.Contains(text, "⏱") {
				done[i] = true
			}
		}
		seen = len(posts)
	}
	// The status messages are sealed after the answers: the workspace's
	// chat.update tier paces those edits.
	working := func() []int {
		var out []int
		for i := range threads {
			if ms := e.botMessages(chans[i], roots[i]); len(ms) == 0 || strings.Contains(ms[0].Text, "working…") {
				out = append(out, i)
			}
		}
		return out
	}
	for seen := 0; len(working()) > 0; {
		edits, err := e.slack.WaitCalls(e.ctx, "chat.update", seen+1)
		if err != nil {
			t.Fatalf("threads whose status still says working: %v: %v", working(), err)
		}
		seen = len(edits)
	}
	if n := e.slack.RateLimited(); n != 0 {
		t.Errorf("the fake answered %d calls with 429, want 0", n)
		calls := e.slack.Calls()
		for i, c := range calls {
			if c.Status != 429 {
				continue
			}
			t.Logf("429: %s channel %s ts %s at %s", c.Method, c.Params.Get("channel"), c.Params.Get("ts"), c.Time.Format("15:04:05.000000"))
			for _, p := range calls[max(0, i-40):i] {
				if p.Method == c.Method && p.Params.Get("channel") == c.Params.Get("channel") {
					t.Logf("  before: %s ts %s at %s status %d", p.Method, p.Params.Get("ts"), p.Time.Format("15:04:05.000000"), p.Status)
				}
			}
		}
	}
	var previews int
	for _, c := range e.slack.CallsTo("chat.update") {
		if strings.Contains(c.Params.Get("text"), "of the answer") {
			previews++
		}
	}
	if previews == 0 {
		t.Fatal("no chat.update showed a streamed preview: the test did not stream")
	}
	t.Logf("%d calls (%d chat.update, %d of them previews, %d chat.postMessage), 0 rate limited",
		len(e.slack.Calls()), len(e.slack.CallsTo("chat.update")), previews, len(e.slack.CallsTo("chat.postMessage")))
}

func TestSlackHTTPEventsSignatureFailuresAreRefused(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, httpEvents())
	e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })

	// Slack checks the Request URL first.
	v, err := e.slack.VerifyURL(e.ctx)
	if err != nil || v.StatusCode != 200 || !strings.Contains(string(v.Body), v.Challenge) {
		t.Fatalf("url_verification = %d %q, %v; want 200 with the challenge %q", v.StatusCode, v.Body, err, v.Challenge)
	}

	tampers := []struct {
		name string
		t    slackfake.Tamper
	}{
		{"wrong secret", slackfake.TamperSignature},
		{"body changed after signing", slackfake.TamperBody},
		{"stale timestamp", slackfake.TamperStaleTimestamp},
		{"no signature", slackfake.TamperNoSignature},
	}
	var refused []string
	for _, tc := range tampers {
		e.slack.UseHTTPEvents(slackfake.HTTPEvents{URL: e.httpURL, SigningSecret: signingSecret, Tamper: tc.t})
		ts := e.slack.Mention(slackChan, aliceID, "forged: "+tc.name, "")
		refused = append(refused, ts)
		for _, d := range e.slack.DeliveriesFor(slackChan, ts) {
			ack, err := e.slack.WaitAck(e.ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ack.StatusCode != 401 {
				t.Errorf("%s: %s answered %d, want 401", tc.name, d.EventType, ack.StatusCode)
			}
		}
	}

	e.slack.UseHTTPEvents(slackfake.HTTPEvents{URL: e.httpURL, SigningSecret: signingSecret})
	root := e.slack.Mention(slackChan, aliceID, "signed properly", "")
	e.waitText(slackChan, root, "answer to: signed properly")
	for _, d := range e.slack.DeliveriesFor(slackChan, root) {
		ack, err := e.slack.WaitAck(e.ctx, d.ID)
		if err != nil || ack.StatusCode != 200 {
			t.Errorf("signed %s answered %d, %v; want 200", d.EventType, ack.StatusCode, err)
		}
	}
	reqs := e.llm.Requests()
	if len(reqs) != 1 || lastUserText(reqs[0]) != "signed properly" {
		t.Fatalf("LLM requests = %d, want only the signed mention's", len(reqs))
	}
	for _, ts := range refused {
		if got := e.botMessages(slackChan, ts); len(got) != 0 {
			t.Fatalf("the bot answered a forged request: %+v", got)
		}
	}
}
