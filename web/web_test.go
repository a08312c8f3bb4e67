package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

const testKey = "0123456789abcdef0123456789abcdef-test-key"

// fixture is a real database with one thread and a session in it.
type fixture struct {
	t      testing.TB
	ctx    context.Context
	db     *sqlite.DB
	thread storage.Thread
	sess   storage.Session
	seq    int64
	now    time.Time
	tick   func() time.Time // the store's clock
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx := t.Context()
	// Every reading of the clock is a millisecond after the one before, so
	// that what the fixture writes in order has times in that order (pages
	// place runs and pushes among the entries by time).
	var mu sync.Mutex
	clock := time.Now()
	tick := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "threadsmith.db"), sqlite.WithLogger(slog.New(slog.DiscardHandler)), sqlite.WithClock(tick))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1700000000.000100"},
		storage.ThreadInit{Repo: "app", Branch: "bot/slack-1700000000.000100"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	th, err = db.ThreadByID(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, db: db, thread: th, sess: sess, now: time.Now(), tick: tick}
}

func (f *fixture) append(entries ...transcript.Entry) {
	f.t.Helper()
	for i := range entries {
		entries[i].Seq = f.seq
		f.seq++
		if entries[i].Timestamp == 0 {
			entries[i].Timestamp = f.tick().UnixMilli()
		}
	}
	if err := f.db.AppendEntries(f.ctx, f.sess.ID, entries); err != nil {
		f.t.Fatal(err)
	}
}

func msg(m llm.Message) transcript.Entry {
	return transcript.Entry{Type: transcript.EntryMessage, Message: &m}
}

// prompt stores input from author and the user message that delivered it,
// in a new run; it returns the run's id.
func (f *fixture) prompt(author, text string) int64 {
	f.t.Helper()
	id, _, err := f.db.AcceptInbound(f.ctx, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: strconv.FormatInt(f.seq+100, 10),
		ThreadID: f.thread.ID, AuthorID: "U1", AuthorName: author, Text: text, Mode: storage.ModePrompt})
	if err != nil {
		f.t.Fatal(err)
	}
	run, err := f.db.StartRun(f.ctx, f.thread.ID, f.sess.ID, id)
	if err != nil {
		f.t.Fatal(err)
	}
	m := llm.UserText(text)
	m.InputID = strconv.FormatInt(id, 10)
	f.append(msg(m))
	return run
}

func toolCall(id, name, args string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Model: "gpt-test", StopReason: llm.StopReasonToolUse,
		Content: []llm.Content{llm.ToolCall(id, name, json.RawMessage(args))},
		Usage:   &llm.Usage{Input: 1200, Output: 40, Cost: &llm.Cost{Total: 0.0125}}}
}

func toolResult(id, name, out string) llm.Message {
	return llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: name, Content: []llm.Content{llm.Text(out)}}
}

func answer(text string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Model: "gpt-test", StopReason: llm.StopReasonStop,
		Content: []llm.Content{llm.Text(text)}, Usage: &llm.Usage{Input: 1500, Output: 80, Cost: &llm.Cost{Total: 0.02}}}
}

func (f *fixture) server(opts Options) *httptest.Server {
	f.t.Helper()
	opts.Store = f.db
	if opts.Key == nil {
		opts.Key = []byte(testKey)
	}
	if opts.PublicURL == "" {
		opts.PublicURL = "https://bot.example.com"
	}
	if opts.Poll == 0 {
		opts.Poll = 10 * time.Millisecond
	}
	srv := httptest.NewServer(New(opts).Handler())
	f.t.Cleanup(srv.Close)
	return srv
}

// token returns the token of s's link to thread.
func token(t testing.TB, s *Server, thread int64) string {
	t.Helper()
	u, err := url.Parse(s.Link(thread))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("t")
}

func get(t testing.TB, u string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (f *fixture) pageURL(srv *httptest.Server, s *Server) string {
	return srv.URL + "/s/" + strconv.FormatInt(f.thread.ID, 10) + "?t=" + url.QueryEscape(token(f.t, s, f.thread.ID))
}

func TestSessionPageShowsTheWholeRecord(t *testing.T) {
	f := newFixture(t)
	run := f.prompt("Alice Example", "Please fix the **failing** test")
	f.append(
		msg(toolCall("call_1", "bash", `{"command":"go test ./..."}`)),
		msg(toolResult("call_1", "bash", "--- FAIL: TestParse\nexit status 1")),
		msg(llm.Message{Role: llm.RoleAssistant, Model: "gpt-test", StopReason: llm.StopReasonError, ErrorMessage: "429 rate limited"}),
		msg(answer("Fixed it:\n\n```go\nfunc Parse() {}\n```\nSee [the docs](https://go.dev/doc).")),
		transcript.Entry{Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{
			Summary: "## Goal\nfix the parser", FirstKeptSeq: 2, TokensBefore: 51234, Reason: "manual", ModifiedFiles: []string{"parse.go"}}},
		transcript.Entry{Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Provider: "anthropic", Model: "claude-test"}},
	)
	if err := f.db.FinishRun(f.ctx, run, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.RecordPush(f.ctx, storage.Push{ThreadID: f.thread.ID, Branch: f.thread.Branch, SHA: "0123456789abcdef", Result: storage.PushOK}); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com",
		CompareURL: func(repo, branch string) string {
			return "https://github.com/acme/" + repo + "/compare/main..." + branch
		},
		PushDiff: func(_ context.Context, repo, from, to string) (string, bool, error) {
			if repo != "app" || from != "" || to != "0123456789abcdef" {
				return "", false, fmt.Errorf("unexpected diff %s %s..%s", repo, from, to)
			}
			return "diff --git a/parse.go b/parse.go\n@@ -1 +1 @@\n-func Parse() { panic(1) }\n+func Parse() {}\n", false, nil
		}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	code, body := get(t, f.pageURL(srv, s), nil)
	if code != http.StatusOK {
		t.Fatalf("GET page = %d\n%s", code, body)
	}
	for _, want := range []string{
		"Alice Example", "Please fix the <strong>failing</strong> test", // the prompt, its author, Markdown
		`<code class="tool-name">bash</code>`, "go test ./...", "--- FAIL: TestParse", // the tool call and its output
		"429 rate limited", "1 failed (retried)", // the retry
		`<span class="lang">go</span><code><span class="tok-kd">func</span> <span class="tok-nf">Parse</span><span class="tok-p">()</span> <span class="tok-p">{}</span></code>`, `<a href="https://go.dev/doc"`, // code and links
		"51234 tokens summarized", "fix the parser", "<code>parse.go</code>", // the compaction
		"Model: claude-test (anthropic)", // the model change
		"push of <code>bot/slack-1700000000.000100</code> @ <code>0123456789</code>: ok", // the push
		`href="https://github.com/acme/app/compare/main...bot/slack-1700000000.000100"`,
		"Run 1", "outcome-done", "input 2.7k", "$0.0325", "3 replies · 1 tool call · 1 failed (retried)", // usage and cost of the run
		"<title>Please fix the **failing** test · threadsmith</title>", "<h1>Please fix the **failing** test</h1>", // the request names the page
		"slack · C1 · 1700000000.000100 · ",                                                                    // and where it was made
		`<span class="del">-func Parse() { panic(1) }</span>`, `<span class="add">&#43;func Parse() {}</span>`, // the push's diff
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	assertInert(t, body)

	// The push's whole diff, as text.
	pushes, _ := f.db.ThreadPushes(f.ctx, f.thread.ID)
	tok := token(t, s, f.thread.ID)
	code, patch := get(t, fmt.Sprintf("%s/s/%d/diff/%d?t=%s", srv.URL, f.thread.ID, pushes[0].ID, url.QueryEscape(tok)), nil)
	if code != 200 || !strings.HasPrefix(patch, "diff --git a/parse.go") {
		t.Errorf("GET the push's diff = %d %q", code, patch)
	}
	if code, _ := get(t, fmt.Sprintf("%s/s/%d/diff/%d", srv.URL, f.thread.ID, pushes[0].ID), nil); code != 401 {
		t.Errorf("GET the push's diff without a token = %d, want 401", code)
	}
}

func TestLinkTokens(t *testing.T) {
	f := newFixture(t)
	f.prompt("alice", "hello")
	other, _, err := f.db.EnsureThread(f.ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "2"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com", TTL: time.Hour, Now: clock})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	page := srv.URL + "/s/" + strconv.FormatInt(f.thread.ID, 10)
	valid := token(t, s, f.thread.ID)
	expired := signer{key: []byte(testKey)}.sign(f.thread.ID, now.Add(-time.Second))
	wrongThread := token(t, s, other.ID)
	wrongKey := signer{key: []byte("another key another key another key")}.sign(f.thread.ID, now.Add(time.Hour))
	tampered := []byte(valid)
	tampered[len(tampered)-2] ^= 1
	longer := signer{key: []byte(testKey)}.sign(f.thread.ID, now.Add(time.Hour))
	exp, mac, _ := strings.Cut(longer, ".")
	extended := strconv.FormatInt(mustInt(t, exp)+86400, 10) + "." + mac // a later expiry with the old signature

	for _, tc := range []struct {
		name, url string
		want      int
	}{
		{"valid", page + "?t=" + url.QueryEscape(valid), 200},
		{"none", page, 401},
		{"expired", page + "?t=" + url.QueryEscape(expired), 401},
		{"another thread's", page + "?t=" + url.QueryEscape(wrongThread), 401},
		{"another key's", page + "?t=" + url.QueryEscape(wrongKey), 401},
		{"tampered", page + "?t=" + url.QueryEscape(string(tampered)), 401},
		{"extended", page + "?t=" + url.QueryEscape(extended), 401},
		{"garbage", page + "?t=xyz", 401},
		{"valid, the events", page + "/events?t=" + url.QueryEscape(valid) + "&v=x", 200},
		{"none, the events", page + "/events", 401},
		{"none, the list", srv.URL + "/", 401},
		// A token opens its own thread's pages only, every one of them.
		{"another thread's, the events", page + "/events?t=" + url.QueryEscape(wrongThread), 401},
		{"another thread's, an output", page + "/output/s0-e1?t=" + url.QueryEscape(wrongThread), 401},
		{"another thread's, a diff", page + "/diff/1?t=" + url.QueryEscape(wrongThread), 401},
		{"not a thread", srv.URL + "/s/0?t=" + url.QueryEscape(valid), 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", tc.url, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET %s = %d, want %d", tc.name, resp.StatusCode, tc.want)
			}
		})
	}

	// The token, once used, is a cookie: the list shows that thread only,
	// until the token expires.
	jar := &cookieClient{t: t}
	if code, _ := jar.get(page + "?t=" + url.QueryEscape(valid)); code != 200 {
		t.Fatalf("GET page = %d", code)
	}
	code, body := jar.get(srv.URL + "/")
	if code != 200 || !strings.Contains(body, `href="/s/`+strconv.FormatInt(f.thread.ID, 10)+`"`) || strings.Contains(body, `href="/s/`+strconv.FormatInt(other.ID, 10)+`"`) {
		t.Errorf("GET / with the cookie = %d, want 200 listing thread %d only\n%s", code, f.thread.ID, body)
	}
	if code, _ := jar.get(page); code != 200 {
		t.Errorf("GET page with the cookie = %d, want 200", code)
	}
	now = now.Add(2 * time.Hour)
	if code, body := jar.get(page); code != 401 || !strings.Contains(body, "expired") {
		t.Errorf("GET page with an expired cookie = %d %q, want 401 saying it expired", code, body)
	}
}

func ptr[T any](v T) *T { return &v }

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cookieClient keeps the cookies a server sets, as a browser would.
type cookieClient struct {
	t       *testing.T
	cookies []*http.Cookie
}

func (c *cookieClient) get(u string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for _, k := range c.cookies {
		req.AddCookie(k)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	c.cookies = append(c.cookies, resp.Cookies()...)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAuthHeaderFromTheOperatorsProxy(t *testing.T) {
	f := newFixture(t)
	f.prompt("alice", "hello there")
	srv := f.server(Options{AuthHeader: "X-Forwarded-User"})
	page := srv.URL + "/s/" + strconv.FormatInt(f.thread.ID, 10)
	if code, body := get(t, page, http.Header{"X-Forwarded-User": {"carol@example.com"}}); code != 200 || !strings.Contains(body, "hello there") {
		t.Errorf("GET page through the proxy = %d, want 200 with the prompt\n%s", code, body)
	}
	if code, body := get(t, srv.URL+"/", http.Header{"X-Forwarded-User": {"carol"}}); code != 200 || !strings.Contains(body, "bot/slack-1700000000.000100") {
		t.Errorf("GET / through the proxy = %d, want 200 listing the thread\n%s", code, body)
	}
	if code, _ := get(t, page, http.Header{"X-Forwarded-User": {""}}); code != 401 {
		t.Errorf("GET page with an empty header = %d, want 401", code)
	}
	if code, _ := get(t, page, http.Header{"X-Other-User": {"mallory"}}); code != 401 {
		t.Errorf("GET page with another header = %d, want 401", code)
	}
}

func TestLiveFollowSeesNewEntries(t *testing.T) {
	f := newFixture(t)
	run := f.prompt("alice", "start")
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com", Poll: 5 * time.Millisecond})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	_, body := get(t, f.pageURL(srv, s), nil)
	doc := parse(t, body)
	live := attr(find(doc, func(n *html.Node) bool { return attr(n, "id") == "timeline" }), "data-live")
	if live == "" {
		t.Fatalf("the timeline has no data-live\n%s", body)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+live, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events Content-Type = %q", ct)
	}
	pieces := make(chan rendered, 64)
	go func() {
		defer close(pieces)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var p rendered
				if json.Unmarshal([]byte(data), &p) == nil {
					pieces <- p
				}
			}
		}
	}()

	f.append(msg(toolCall("call_9", "read", `{"path":"main.go"}`)))
	want := func(what string, ok func(rendered) bool) rendered {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case p, open := <-pieces:
				if !open {
					t.Fatalf("the stream ended before %s", what)
				}
				assertInert(t, string(p.HTML))
				if ok(p) {
					return p
				}
			case <-timeout:
				t.Fatalf("no event with %s", what)
			}
		}
	}
	call := want("the new tool call", func(p rendered) bool { return strings.Contains(string(p.HTML), "main.go") })
	f.append(msg(toolResult("call_9", "read", "package main // the file")))
	got := want("the tool call's output", func(p rendered) bool { return strings.Contains(string(p.HTML), "the file") })
	if got.ID != call.ID {
		t.Errorf("the output came as %q, want it to replace the call %q", got.ID, call.ID)
	}
	if err := f.db.FinishRun(f.ctx, run, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	want("the run's end", func(p rendered) bool { return strings.Contains(string(p.HTML), "outcome-done") })
}

func TestLargeOutputIsCutWithALinkToAllOfIt(t *testing.T) {
	f := newFixture(t)
	f.prompt("alice", "dump")
	big := strings.Repeat("line of output\n", 10000) + "THE END"
	f.append(msg(toolCall("c1", "bash", `{"command":"cat big"}`)), msg(toolResult("c1", "bash", big)))
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	_, body := get(t, f.pageURL(srv, s), nil)
	if strings.Contains(body, "THE END") || !strings.Contains(body, "more not shown here") {
		t.Fatalf("the page shows the whole output or no note (%d bytes)", len(body))
	}
	link := attr(find(parse(t, body), func(n *html.Node) bool { return n.Data == "a" && strings.Contains(attr(n, "href"), "/output/") }), "href")
	code, out := get(t, srv.URL+link, nil)
	if code != 200 || out != big {
		t.Errorf("GET %s = %d with %d bytes, want the whole output (%d bytes)", link, code, len(out), len(big))
	}
}

func TestListShowsStateRepoBranchActivityAndCost(t *testing.T) {
	f := newFixture(t)
	f.prompt("alice", "work")
	f.append(msg(toolCall("c1", "bash", `{"command":"ls"}`))) // $0.0125, the run still going
	queued, _, err := f.db.EnsureThread(f.ctx, storage.ThreadKey{Platform: "discord", Team: "G1", Channel: "D1", Thread: "T2"},
		storage.ThreadInit{Repo: "lib", Branch: "bot/discord-T2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.db.AcceptInbound(f.ctx, storage.Inbound{Platform: "discord", Channel: "D1", MessageID: "m1",
		ThreadID: queued.ID, AuthorName: "bob", Text: "later", Mode: storage.ModePrompt}); err != nil {
		t.Fatal(err)
	}
	idle, _, err := f.db.EnsureThread(f.ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "3"},
		storage.ThreadInit{Repo: "docs", Branch: "bot/slack-3"})
	if err != nil {
		t.Fatal(err)
	}
	idleSess, err := f.db.CreateSession(f.ctx, idle.ID, storage.SessionInit{Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	in, _, err := f.db.AcceptInbound(f.ctx, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "m3", ThreadID: idle.ID, AuthorName: "carol", Text: "done?", Mode: storage.ModePrompt})
	if err != nil {
		t.Fatal(err)
	}
	idleRun, err := f.db.StartRun(f.ctx, idle.ID, idleSess.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	m := llm.UserText("done?")
	m.InputID = strconv.FormatInt(in, 10)
	if err := f.db.AppendEntries(f.ctx, idleSess.ID, []transcript.Entry{{Seq: 0, Type: transcript.EntryMessage, Message: &m, Timestamp: time.Now().UnixMilli()},
		{Seq: 1, Type: transcript.EntryMessage, Message: ptr(answer("yes")), Timestamp: time.Now().UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.FinishRun(f.ctx, idleRun, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	srv := f.server(Options{AuthHeader: "X-Forwarded-User"})
	code, body := get(t, srv.URL+"/", http.Header{"X-Forwarded-User": {"op"}})
	if code != 200 {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
	rows := strings.Split(body, "<tr>")
	row := func(branch string) string {
		for _, r := range rows {
			if strings.Contains(r, branch) {
				return r
			}
		}
		t.Fatalf("no row for %s:\n%s", branch, body)
		return ""
	}
	for _, tc := range []struct{ branch, state, repo, cost string }{
		{"bot/slack-1700000000.000100", "running", "app", "$0.0125"},
		{"bot/discord-T2", "queued", "lib", "$0.0000"},
		{"bot/slack-3", "idle", "docs", "$0.0200"},
	} {
		r := row(tc.branch)
		for _, want := range []string{">" + tc.state + "<", "<td>" + tc.repo + "</td>", tc.cost, "UTC</time>"} {
			if !strings.Contains(r, want) {
				t.Errorf("the row of %s lacks %q:\n%s", tc.branch, want, r)
			}
		}
	}
	// Each is named by its first request, and where it is.
	for branch, want := range map[string]string{
		"bot/slack-1700000000.000100": `>work</a><br><span class="meta">slack · C1 · 1700000000.000100</span>`,
		"bot/discord-T2":              `>later</a><br><span class="meta">discord · D1 · T2</span>`,
		"bot/slack-3":                 `>done?</a>`,
	} {
		if r := row(branch); !strings.Contains(r, want) {
			t.Errorf("the row of %s lacks %q:\n%s", branch, want, r)
		}
	}
	assertInert(t, body)
}

// A run whose input never became a prompt (a command's) still shows, at its
// time, after the runs before it.
func TestRunWithoutAPromptIsShownInOrder(t *testing.T) {
	f := newFixture(t)
	first := f.prompt("alice", "first request")
	f.append(msg(answer("first answer")))
	if err := f.db.FinishRun(f.ctx, first, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	cmd, _, err := f.db.AcceptInbound(f.ctx, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: "cmd1",
		ThreadID: f.thread.ID, AuthorName: "alice", Text: "!compact", Mode: storage.ModeCommand})
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.db.StartRun(f.ctx, f.thread.ID, f.sess.ID, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.FinishRun(f.ctx, second, storage.RunStopped); err != nil {
		t.Fatal(err)
	}
	srv := f.server(Options{AuthHeader: "X-User"})
	_, body := get(t, srv.URL+"/s/"+strconv.FormatInt(f.thread.ID, 10), http.Header{"X-User": {"op"}})
	i1, i2, ia := strings.Index(body, "Run 1"), strings.Index(body, "Run 2"), strings.Index(body, "first answer")
	if i1 < 0 || i2 < 0 || ia < 0 || !(i1 < ia && ia < i2) || !strings.Contains(body, "outcome-stopped") {
		t.Errorf("want Run 1, its answer, then Run 2 (stopped); got positions %d, %d, %d:\n%s", i1, ia, i2, body)
	}
}

// A page's title is its first request's first non-blank line, cut short.
func TestHeadline(t *testing.T) {
	long := strings.Repeat("é", 150)
	for _, tc := range []struct{ in, want string }{
		{"\n  \n  fix the build  \nand then the docs", "fix the build"},
		{long, strings.Repeat("é", maxHeadline-1) + "…"},
		{" \n\t\n", ""},
	} {
		if got := headline(tc.in); got != tc.want {
			t.Errorf("headline(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A configured secret (and the link key) never reaches a viewer, wherever
// the session put it: the prompt, the model's text, thinking and tool
// arguments, a tool's output inline, cut and whole, a compaction, the
// branch, a push's failure and diff, the list and the live follow.
func TestSecretsAreNeverShown(t *testing.T) {
	const secret = "sk-live-SECRET-0123456789"
	f := newFixture(t)
	if err := f.db.SetThreadWorkspace(f.ctx, f.thread.ID, storage.ThreadInit{Repo: "app", Branch: "bot/" + secret}); err != nil {
		t.Fatal(err)
	}
	f.prompt("alice", "use the key "+secret+" and the link key "+testKey)
	big := strings.Repeat("x", maxShownOutput-10) + secret + strings.Repeat("y", 100) + secret
	f.append(
		msg(llm.Message{Role: llm.RoleAssistant, Model: "gpt-" + secret, StopReason: llm.StopReasonToolUse, Content: []llm.Content{
			{Type: llm.ContentThinking, Thinking: "the key is " + secret},
			llm.Text("**" + secret + "** and `" + secret + "`"),
			llm.ToolCall("c1", "bash", []byte(`{"command":"curl -H 'Authorization: `+secret+`'"}`)),
			llm.ToolCall("c2", "bash", []byte(`{"command":"cat big"}`)),
		}}),
		msg(toolResult("c1", "bash", "token="+secret)),
		msg(toolResult("c2", "bash", big)),
		transcript.Entry{Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "## Key\n" + secret, TokensBefore: 1,
			ModifiedFiles: []string{secret + ".txt"}}},
	)
	if _, err := f.db.RecordPush(f.ctx, storage.Push{ThreadID: f.thread.ID, Branch: "bot/" + secret, SHA: "abc", Result: storage.PushError, Detail: "denied for " + secret}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.RecordPush(f.ctx, storage.Push{ThreadID: f.thread.ID, Branch: "bot/" + secret, SHA: "def", Result: storage.PushOK}); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com", AuthHeader: "X-User", Secrets: []string{secret},
		PushDiff: func(context.Context, string, string, string) (string, bool, error) {
			return "diff --git a/k b/k\n+KEY=" + secret + "\n", false, nil
		}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	shown := func(what, body string) {
		t.Helper()
		if strings.Contains(body, secret) || strings.Contains(body, testKey) {
			t.Errorf("%s shows a secret", what)
		}
		if !strings.Contains(body, redacted) {
			t.Errorf("%s does not show [redacted] where the secret was:\n%s", what, body)
		}
	}
	code, body := get(t, f.pageURL(srv, s), nil)
	if code != 200 {
		t.Fatalf("GET page = %d", code)
	}
	shown("the page", body)
	for _, want := range []string{"use the key [redacted] and the link key [redacted]", "<code>[redacted]</code>", "token=[redacted]", "bot/[redacted]", "denied for [redacted]", "&#43;KEY=[redacted]", "<code>[redacted].txt</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	op := http.Header{"X-User": {"op"}}
	_, list := get(t, srv.URL+"/", op)
	shown("the list", list)
	link := attr(find(parse(t, body), func(n *html.Node) bool { return n.Data == "a" && strings.Contains(attr(n, "href"), "/output/") }), "href")
	if link == "" {
		t.Fatal("no link to the whole output")
	}
	_, out := get(t, srv.URL+link, nil)
	shown("the whole output", out)
	pushes, _ := f.db.ThreadPushes(f.ctx, f.thread.ID)
	_, diff := get(t, fmt.Sprintf("%s/s/%d/diff/%d", srv.URL, f.thread.ID, pushes[1].ID), op)
	shown("the whole diff", diff)

	p, err := s.build(f.ctx, f.thread.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	pieces, err := s.renderPieces(p)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, pc := range pieces {
		all.WriteString(string(pc.HTML))
	}
	shown("the live follow's pieces", all.String())
}

// A session the bot opened itself says where it came from; one a person
// started says nothing of it.
func TestSessionPageShowsItsOrigin(t *testing.T) {
	f := newFixture(t)
	th, _, err := f.db.EnsureThread(f.ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C2", Thread: "1700000000.000200"},
		storage.ThreadInit{Repo: "app", Origin: "schedule nightly"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := get(t, srv.URL+"/s/"+strconv.FormatInt(th.ID, 10)+"?t="+url.QueryEscape(token(t, s, th.ID)), nil)
	if code != http.StatusOK || !strings.Contains(body, `from <span class="origin">schedule nightly</span>`) {
		t.Errorf("GET the opened session's page = %d, lacking its origin:\n%s", code, body)
	}
	if _, body := get(t, f.pageURL(srv, s), nil); strings.Contains(body, `class="origin"`) {
		t.Error("a session a person started shows an origin")
	}
}
