package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// A mention whose model calls an MCP tool and answers with its result; the
// stdio server runs in the thread's sandbox, where the bot's secrets and
// files are out of its reach, with only the environment its config names
// (its own secret reaches it, but never the model); !tools lists what the
// thread has.
func TestSlackMCPToolInTheSandbox(t *testing.T) {
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	bin := mcpfake.Build(t)
	const token = "trk-0123456789abcdef-secret" // as ${TRACKER_TOKEN} would give it
	t.Setenv("THREADSMITH_TEST_BOT_ONLY", "the bot's, not the server's")
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
		c.MCP.Servers = []config.MCPServer{{Name: "fake", Command: bin, Env: map[string]string{"FAKE_SETTING": "on", "TRACKER_TOKEN": token}, Timeout: config.DefaultMCPTimeout}}
	}))
	db := filepath.Join(e.cfg.DataDir, "threadsmith.db")
	var envSeen atomic.Value // what the model saw of fake__env
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		var results []string
		for _, m := range r.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
			if m.Role == "tool" && m.ToolCallID == "m2" {
				envSeen.Store(m.Content)
			}
		}
		if len(results) == 0 {
			return llmfake.ToolCallReply(
				llmfake.Call{ID: "m1", Name: "fake__echo", Args: `{"text":"from the model"}`},
				llmfake.Call{ID: "m2", Name: "fake__env", Args: `{}`},
				llmfake.Call{ID: "m3", Name: "fake__read", Args: jsonArgs(map[string]string{"path": db})},
			)
		}
		return llmfake.TextReply("the server said: " + results[0] + "\n\n" + strings.Join(results[1:], "\n"))
	})
	root := e.slack.Mention(slackChan, aliceID, "ask the fake server", "")
	e.waitText(slackChan, root, "the server said: echo: from the model")
	e.waitText(slackChan, root, "`fake__echo`")
	tr := e.transcript(slackChan, root)
	for _, s := range []string{e.cfg.LLM.APIKey, e.slack.BotToken(), e.slack.AppToken()} {
		if strings.Contains(tr, s) {
			t.Errorf("the MCP server's answers carried a secret into the thread:\n%s", tr)
		}
	}
	if !strings.Contains(tr, "FAKE_SETTING=on") {
		t.Errorf("the server did not get its configured environment:\n%s", tr)
	}
	// The server's environment is what mcptool.Start sets and what its
	// config names, nothing of the bot's own; its secret is hidden from the
	// model.
	env, _ := envSeen.Load().(string)
	allowed := []string{"PATH", "HOME", "TMPDIR", "LANG", "THREADSMITH_WORKTREE", "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "FAKE_SETTING", "TRACKER_TOKEN"}
	for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
		if name, _, _ := strings.Cut(line, "="); !slices.Contains(allowed, name) {
			t.Errorf("the server's environment has %s, which its config does not name:\n%s", name, env)
		}
	}
	// It runs as mcptool.Start runs an operator's server: out of the
	// agent's folders, told where the worktree is.
	for _, want := range []string{"HOME=/tmp\n", "TMPDIR=/tmp\n", "PYTHONSAFEPATH=1\n", "PYTHONNOUSERSITE=1\n", "THREADSMITH_WORKTREE=" + filepath.Join(e.cfg.DataDir, "workspaces", "app") + "/"} {
		if !strings.Contains(env, want) {
			t.Errorf("the server's environment lacks %q:\n%s", want, env)
		}
	}
	if !strings.Contains(env, "TRACKER_TOKEN=[redacted]") {
		t.Errorf("the model's view of the server's environment: want TRACKER_TOKEN=[redacted]:\n%s", env)
	}
	for _, r := range e.llm.Requests() {
		if b, _ := json.Marshal(r); strings.Contains(string(b), token) {
			t.Errorf("the server's secret reached the model")
		}
	}
	if strings.Contains(tr, token) {
		t.Errorf("the server's secret is in the thread:\n%s", tr)
	}
	if !strings.Contains(tr, "no such file") {
		t.Errorf("the server could read the bot's database:\n%s", tr)
	}

	e.slack.UserMessage(slackChan, aliceID, "!tools", root)
	e.waitText(slackChan, root, "MCP `fake`: ")
	if tr := e.threadText(slackChan, root); !strings.Contains(tr, "`fake__slow`") || !strings.Contains(tr, "Built in: `read`") {
		t.Errorf("!tools:\n%s", tr)
	}
}

// -check starts every configured MCP server and lists its tools, or says
// why it could not.
func TestCheckStartsMCPServers(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	bin := mcpfake.Build(t)
	cfg, _ := checkConfig(t)
	cfg.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
	cfg.MCP.Servers = []config.MCPServer{
		{Name: "fake", Command: bin, Timeout: config.DefaultMCPTimeout},
		{Name: "picky", Command: bin, Tools: []string{"echo", "ecoh"}, Timeout: config.DefaultMCPTimeout},
		{Name: "broken", Command: "/nonexistent/mcp-server", Timeout: config.DefaultMCPTimeout},
		{Name: "off", Command: "/nonexistent/too", Disabled: true},
	}
	ok, out := runCheck(t, cfg)
	if ok {
		t.Fatalf("check passed with a broken server:\n%s", out)
	}
	if !strings.Contains(out, "mcp: fake: 14 tools: fake__add_tool, fake__big") || !strings.Contains(out, "fake__slow") {
		t.Errorf("no tool list for fake:\n%s", out)
	}
	if !strings.Contains(out, "mcp: picky: 1 tool: picky__echo\n") || !strings.Contains(out, "mcp.servers[picky].tools names what the server does not offer: ecoh") {
		t.Errorf("an allow-list name the server does not offer is not named:\n%s", out)
	}
	if !strings.Contains(out, "mcp.servers[broken]: starting /nonexistent/mcp-server") || strings.Contains(out, "/nonexistent/too") {
		t.Errorf("broken/disabled servers:\n%s", out)
	}
}

// A repository's .mcp.json adds its stdio servers only when the operator
// allows it, without network and without expanding anything of the bot's.
func TestSlackRepositoryMCPServersOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	bin := mcpfake.Build(t)
	for _, allowed := range []bool{false, true} {
		e := newSlackEnv(t, withConfig(func(c *config.Config) {
			c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
			c.MCP.RepoServers = allowed
		}))
		e.remote.Commit(t, gitremote.Change{Branch: "main", Files: map[string]string{
			".mcp.json": `{"mcpServers": {"repo": {"command": "` + bin + `", "env": {"LEAK": "${OPENAI_API_KEY}"}}, "web": {"url": "http://127.0.0.1:1/mcp"}}}`,
		}})
		e.llm.Handle(func(r llmfake.Request) llmfake.Response {
			for _, m := range r.Messages {
				if m.Role == "tool" {
					return llmfake.TextReply("env: " + m.Content)
				}
			}
			if allowed {
				return llmfake.ToolCallReply(llmfake.Call{ID: "r1", Name: "repo__env", Args: `{}`})
			}
			return llmfake.TextReply("no tools to call")
		})
		root := e.slack.Mention(slackChan, aliceID, "use the repository's server", "")
		e.waitText(slackChan, root, "⏱")
		e.slack.UserMessage(slackChan, aliceID, "!tools", root)
		if !allowed {
			e.waitText(slackChan, root, "No MCP servers in this thread.")
			continue
		}
		e.waitText(slackChan, root, "MCP `repo` (from the repository): ")
		tr := e.threadText(slackChan, root)
		if !strings.Contains(tr, "LEAK=${OPENAI_API_KEY}") || strings.Contains(tr, e.cfg.LLM.APIKey) {
			t.Errorf("the repository's server env must be literal:\n%s", tr)
		}
		if !strings.Contains(tr, "left out web") {
			t.Errorf("a url server from the repository must be refused visibly:\n%s", tr)
		}
	}
}

func TestMCPSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.MCP.Servers = []config.MCPServer{{Name: "a", URL: "https://x/mcp", Headers: map[string]string{"Authorization": "Bearer hdr-secret-123456"}},
		{Name: "b", Command: "b", Env: map[string]string{"TOKEN": "env-secret-0123456789", "MODE": "on"}},
		{Name: "c", URL: "https://u:pw-secret-1@y/mcp?transport=stream&api_key=query-secret-0123456789"},
		{Name: "d", URL: "https://z/mcp?bare-secret-0123456789", Headers: map[string]string{"Authorization": "bearer lower-secret-0123", "X-Basic": "Basic YmFzaWMtc2VjcmV0LTAxMjM="}},
		{Name: "e", URL: "https://z/mcp?key=escaped%2Bsecret-0123456789", Headers: map[string]string{"Accept": "application/json, text/event-stream"}}}
	list := secrets(&cfg)
	got := strings.Join(list, " ")
	for _, want := range []string{"hdr-secret-123456", "env-secret-0123456789", "query-secret-0123456789", "pw-secret-1",
		"bare-secret-0123456789", "escaped%2Bsecret-0123456789", "escaped+secret-0123456789"} {
		if !strings.Contains(got, want) {
			t.Errorf("secrets() lacks %q", want)
		}
	}
	// A header's credential alone, whatever its scheme's case.
	for _, want := range []string{"hdr-secret-123456", "lower-secret-0123", "YmFzaWMtc2VjcmV0LTAxMjM="} {
		if !slices.Contains(list, want) {
			t.Errorf("secrets() lacks %q", want)
		}
	}
	if strings.Contains(got, " on") {
		t.Errorf("a short plain setting is treated as a secret: %s", got)
	}
	// A plain setting in a URL's query is not a secret either: every
	// "stream" in the threads, tool output and logs would read [redacted].
	if slices.Contains(list, "stream") {
		t.Errorf("a URL's plain query setting is treated as a secret: %s", got)
	}
	// Nor is the tail of a plain header after its first space: only a
	// credential after an auth scheme (one word) is one alone.
	if slices.Contains(list, "text/event-stream") {
		t.Errorf("a plain header's second word is treated as a secret: %s", got)
	}
}

// A key in an MCP server's URL is a secret too: the error of a server that
// did not start names the URL, in the thread and in -check.
func TestMCPKeyInTheURLIsRedacted(t *testing.T) {
	t.Parallel()
	const key = "url-key-0123456789"
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.MCP.Servers = []config.MCPServer{{Name: "keyed", URL: "http://user:pw-" + key + "@127.0.0.1:1/mcp?key=" + key, Timeout: config.DefaultMCPTimeout}}
	}))
	e.llm.Push(llmfake.TextReply("hi"))
	root := e.slack.Mention(slackChan, aliceID, "hello", "")
	e.waitText(slackChan, root, "These MCP servers did not start")
	if tr := e.threadText(slackChan, root); strings.Contains(tr, key) || !strings.Contains(tr, "[redacted]") {
		t.Errorf("the thread shows the URL's key (or no [redacted] where it was):\n%s", tr)
	}
	cfg, _ := checkConfig(t)
	cfg.MCP.Servers = e.cfg.MCP.Servers
	if _, out := runCheck(t, cfg); strings.Contains(out, key) || !strings.Contains(out, "mcp.servers[keyed]") {
		t.Errorf("-check shows the URL's key (or not the server):\n%s", out)
	}
}

// A server's tool list changing mid-session gives the model the new tool
// and keeps what the session has read: edit still accepts a file read
// before the change.
func TestSlackMCPListChangeKeepsTheSession(t *testing.T) {
	// Not parallel: the new list must arrive within 50 quick model turns, a
	// wall time that tests running beside it would stretch.
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	bin := mcpfake.Build(t)
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
		c.MCP.Servers = []config.MCPServer{{Name: "fake", Command: bin, Timeout: config.DefaultMCPTimeout}}
	}))
	var waits int
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		var last string
		for _, m := range r.Messages {
			if m.Role == "tool" {
				last = m.ToolCallID
			}
		}
		offered := false
		for _, tl := range r.Tools {
			offered = offered || tl.Name == "fake__late"
		}
		switch {
		case last == "":
			return llmfake.ToolCallReply(llmfake.Call{ID: "r1", Name: "read", Args: `{"path":"README.md"}`})
		case last == "r1":
			return llmfake.ToolCallReply(llmfake.Call{ID: "a1", Name: "fake__add_tool", Args: `{"name":"late"}`})
		case !offered && waits < 50:
			waits++ // the new list reaches the session through the thread's owner
			return llmfake.ToolCallReply(llmfake.Call{ID: "w" + itoa(waits), Name: "ls", Args: `{}`})
		case last != "e1":
			return llmfake.ToolCallReply(llmfake.Call{ID: "e1", Name: "edit", Args: `{"path":"README.md","oldText":"# app","newText":"# app!"}`})
		}
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == "e1" {
				return llmfake.TextReply("edit said: " + m.Content)
			}
		}
		return llmfake.TextReply("?")
	})
	root := e.slack.Mention(slackChan, aliceID, "read, add a tool, edit", "")
	e.waitText(slackChan, root, "edit said:")
	tr := e.threadText(slackChan, root)
	if waits >= 50 {
		t.Fatalf("the new MCP tool never reached the model:\n%s", tr)
	}
	if strings.Contains(tr, "✗ `edit`") {
		t.Fatalf("the edit after the tool list changed was refused:\n%s", tr)
	}
	e.waitText(slackChan, root, "⬆️ pushed")
	if got := e.remote.Files(t, branchOf(t, e))["README.md"]; got != "# app!" {
		t.Fatalf("README.md on the branch = %q; the edit after the tool list changed failed:\n%s", got, e.threadText(slackChan, root))
	}
}

func branchOf(t *testing.T, e *slackEnv) string {
	for _, b := range e.remote.Branches(t) {
		if strings.HasPrefix(b, "bot/slack-") {
			return b
		}
	}
	t.Fatalf("no bot branch: %v", e.remote.Branches(t))
	return ""
}

// A stdio server that dies, is started again and dies again in the same call
// is given up: the thread says so under the call's line, and the model is
// told in the call's result. One that cannot start at all is said at once.
func TestSlackMCPServerThatDiesTwiceIsReportedInTheThread(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	bin := mcpfake.Build(t)
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
		c.MCP.Servers = []config.MCPServer{{Name: "fake", Command: bin, Timeout: config.DefaultMCPTimeout},
			{Name: "gone", Command: "/nonexistent/mcp-server", Timeout: config.DefaultMCPTimeout}}
	}))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				return llmfake.TextReply("the tool said: " + m.Content)
			}
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "fake__crash", Args: `{}`})
	})
	root := e.slack.Mention(slackChan, aliceID, "crash the server", "")
	// One that cannot start is said at the session's start.
	e.waitText(slackChan, root, "⚠️ These MCP servers did not start, so their tools are missing: `gone` (starting /nonexistent/mcp-server")
	e.waitText(slackChan, root, "the tool said: ")
	e.waitText(slackChan, root, "⚠️ MCP server `fake`: the server stopped working (it died 2 times)")
	e.waitText(slackChan, root, "✗ `fake__crash`")
	if tr := e.threadText(slackChan, root); !strings.Contains(tr, "the tool said: MCP server fake: the server stopped working") {
		t.Errorf("thread:\n%s", tr)
	}
	e.slack.UserMessage(slackChan, aliceID, "!tools", root)
	e.waitText(slackChan, root, "MCP `fake`: not available — the server stopped working")
}

// !stop during an MCP call ends the run at once and the server is told to
// cancel the call.
func TestSlackStopCancelsAnMCPCall(t *testing.T) {
	t.Parallel()
	srv := mcpfake.NewHTTP(t)
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.MCP.Servers = []config.MCPServer{{Name: "docs", URL: srv.URL, Timeout: config.DefaultMCPTimeout}}
	}))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if len(e.llm.Requests()) == 1 {
			return llmfake.ToolCallReply(llmfake.Call{ID: "s1", Name: "docs__slow", Args: `{}`})
		}
		return llmfake.TextReply("after the stop: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "wait for the slow tool", "")
	select {
	case <-srv.Started:
	case <-e.ctx.Done():
		t.Fatalf("the slow call never reached the server:\n%s", e.transcript(slackChan, root))
	}
	e.slack.UserMessage(slackChan, aliceID, "!stop", root)
	select {
	case <-srv.Cancelled:
	case <-e.ctx.Done():
		t.Fatalf("the server was never told to cancel the call:\n%s", e.transcript(slackChan, root))
	}
	e.waitText(slackChan, root, "stopped")
	e.waitText(slackChan, root, "✗ `docs__slow`")
	e.slack.UserMessage(slackChan, aliceID, "go on", root)
	e.waitText(slackChan, root, "after the stop: go on")
}

// A stdio server reaches the network only when its config says so; a
// repository's server never does, whatever its file says. The network it
// reaches is the outside world, never this host's own services: the
// server with network: true cannot fetch from the host's 127.0.0.1 either.
func TestSlackMCPServerNetworkAsConfigured(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	bin := mcpfake.Build(t)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello from the host") }))
	defer host.Close()
	// The outside world, where one can be made (root): a machine in a
	// network namespace of its own.
	var outside string
	if os.Getuid() == 0 {
		ln := sandboxtest.Outside(t).Listen(t)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello from outside") })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		outside = "http://" + ln.Addr().String()
	}
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
		c.MCP.RepoServers = true
		c.MCP.Servers = []config.MCPServer{
			{Name: "off", Command: bin, Timeout: config.DefaultMCPTimeout},
			{Name: "on", Command: bin, Network: true, Timeout: config.DefaultMCPTimeout},
		}
	}))
	e.remote.Commit(t, gitremote.Change{Branch: "main", Files: map[string]string{
		".mcp.json": `{"mcpServers": {"repo": {"command": "` + bin + `", "network": true}}}`,
	}})
	url := jsonArgs(map[string]string{"url": host.URL})
	calls := []llmfake.Call{{ID: "off", Name: "off__fetch", Args: url}, {ID: "on", Name: "on__fetch", Args: url}, {ID: "repo", Name: "repo__fetch", Args: url}}
	if outside != "" {
		calls = append(calls, llmfake.Call{ID: "out", Name: "on__fetch", Args: jsonArgs(map[string]string{"url": outside})})
	}
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		got := map[string]string{}
		for _, m := range r.Messages {
			if m.Role == "tool" {
				got[m.ToolCallID] = m.Content
			}
		}
		if len(got) == 0 {
			return llmfake.ToolCallReply(calls...)
		}
		return llmfake.TextReply(fmt.Sprintf("off: %q\non: %q\nrepo: %q\nout: %q", got["off"], got["on"], got["repo"], got["out"]))
	})
	root := e.slack.Mention(slackChan, aliceID, "fetch from the host", "")
	e.waitText(slackChan, root, "off: ")
	tr := e.threadText(slackChan, root)
	if strings.Contains(tr, "hello from the host") {
		t.Errorf("a server reached the host's own 127.0.0.1:\n%s", tr)
	}
	if !strings.Contains(tr, `off: "fetch failed`) || !strings.Contains(tr, `on: "fetch failed`) || !strings.Contains(tr, `repo: "fetch failed`) {
		t.Errorf("want every fetch from the host refused:\n%s", tr)
	}
	if outside != "" && !strings.Contains(tr, `out: "200 OK\nhello from outside"`) {
		t.Errorf("the server with network: true did not reach the outside:\n%s", tr)
	}
}

// A server's secret never reaches the bot's logs, even when the server
// writes its environment to stderr (which the bot logs, for the operator).
func TestSlackMCPServerSecretIsNotLogged(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	bin := mcpfake.Build(t)
	const token = "trk-0123456789abcdef-logged"
	e := newSlackFakes(t, withConfig(func(c *config.Config) {
		c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
		c.MCP.Servers = []config.MCPServer{{Name: "fake", Command: bin, Env: map[string]string{"FAKEMCP_STDERR_ENV": "1", "TRACKER_TOKEN": token}, Timeout: config.DefaultMCPTimeout}}
	}))
	var logs syncBuffer
	e.logOut.w = io.MultiWriter(e.logOut.w, &logs)
	e.start()
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("done")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "e1", Name: "fake__env", Args: `{}`})
	})
	root := e.slack.Mention(slackChan, aliceID, "show your environment", "")
	e.waitText(slackChan, root, "done")
	e.stop()
	out := logs.String()
	if !strings.Contains(out, "TRACKER_TOKEN=[redacted]") {
		t.Errorf("the server's stderr is not in the debug log (the test would prove nothing):\n%s", out)
	}
	if strings.Contains(out, token) {
		t.Errorf("the server's secret is in the bot's log")
	}
}

// On Discord every thread is a channel of its own: an MCP server limited to
// a channel goes to the threads opened in it, not to others.
func TestDiscordMCPServerForItsChannel(t *testing.T) {
	t.Parallel()
	url := mcpfake.ServeHTTP(t, "", "")
	e := newDiscordEnv(t, func(c *config.Config, _ *discordEnv) {
		c.MCP.Servers = []config.MCPServer{
			{Name: "general", URL: url, Tools: []string{"echo"}, Channels: []string{dGeneral}, Timeout: config.DefaultMCPTimeout},
			{Name: "random", URL: url, Tools: []string{"echo"}, Channels: []string{discordfake.DefaultOtherChannelID}, Timeout: config.DefaultMCPTimeout},
		}
	})
	e.scripts.add("mcpchan", answerPrompt)
	th, _ := e.open("mcpchan: hello")
	e.waitBot(th, "answer to: ")
	e.fake.SlashCommand(th, dAlice, "tools", nil)
	tools := e.waitBot(th, "🧰 Built in: ")
	if !strings.Contains(tools.Content, "MCP `general`: `general__echo`") || strings.Contains(tools.Content, "random") {
		t.Errorf("/tools in a thread of #general: %q, want the general server only", tools.Content)
	}
}
