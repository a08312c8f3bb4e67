package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// launcher starts stdio servers in sb, in dir, with their env.
func launcher(sb *sandbox.Sandbox, dir string, mounts ...sandbox.Mount) mcptool.Launch {
	return func(_ context.Context, s mcptool.Server) (*mcptool.Process, error) {
		env := []string{"PATH=/usr/bin:/bin"}
		for k, v := range s.Env {
			env = append(env, k+"="+v)
		}
		return mcptool.StartInSandbox(sb.WithNetwork(s.Network), sandbox.Spec{Path: s.Command, Args: append([]string{s.Command}, s.Args...),
			Env: env, Dir: dir, Mounts: append([]sandbox.Mount{{Path: dir, Access: sandbox.ReadWrite}}, mounts...)}, nil)
	}
}

func call(t *testing.T, ctx context.Context, tools []agent.Tool, name, args string) agent.ToolResult {
	t.Helper()
	for _, tl := range tools {
		if tl.Spec().Name == name {
			res, err := tl.Execute(ctx, agent.ToolCall{ID: "1", Name: name, Args: json.RawMessage(args)}, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return agent.ToolResult{}
}

func text(r agent.ToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func names(tools []agent.Tool) []string {
	var n []string
	for _, t := range tools {
		n = append(n, t.Spec().Name)
	}
	return n
}

// The same behaviour over both transports.
func TestToolsOverStdioAndHTTP(t *testing.T) {
	bin := mcpfake.Build(t)
	dir := t.TempDir()
	sb := sandboxtest.New(t, sandbox.Config{})
	for _, tc := range []struct {
		name string
		srv  mcptool.Server
	}{
		{"stdio in the sandbox", mcptool.Server{Name: "fake", Command: bin}},
		{"http", mcptool.Server{Name: "fake", URL: mcpfake.ServeHTTP(t, "Authorization", "Bearer s3cret"), Headers: map[string]string{"Authorization": "Bearer s3cret"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			set := mcptool.Open(ctx, []mcptool.Server{tc.srv}, mcptool.Options{Launch: launcher(sb, dir, sandbox.Mount{Path: filepath.Dir(bin), Access: sandbox.ReadOnly})})
			defer set.Close()
			if st := set.Status(); len(st) != 1 || st[0].Err != "" {
				t.Fatalf("status %+v", st)
			}
			tools := set.Tools()
			if n := names(tools); !contains(n, "fake__echo") || !contains(n, "fake__add_tool") {
				t.Fatalf("tools %v", n)
			}
			var schema map[string]any
			for _, tl := range tools {
				if tl.Spec().Name == "fake__echo" {
					json.Unmarshal(tl.Spec().Parameters, &schema)
					if !strings.Contains(tl.Spec().Description, "Echoes its text") || !strings.Contains(tl.Spec().Description, "MCP server fake") {
						t.Errorf("description %q", tl.Spec().Description)
					}
				}
			}
			if props, _ := schema["properties"].(map[string]any); props["text"] == nil {
				t.Errorf("echo's schema %v lacks its text parameter", schema)
			}
			if r := call(t, ctx, tools, "fake__echo", `{"text":"hi"}`); r.IsError || text(r) != "echo: hi" {
				t.Errorf("echo: %+v", r)
			}
			out := filepath.Join(dir, tc.name+".txt")
			if r := call(t, ctx, tools, "fake__write", jsonArgs(map[string]string{"path": out, "text": "written"})); r.IsError {
				t.Errorf("write: %+v", r)
			} else if b, _ := os.ReadFile(out); string(b) != "written" {
				t.Errorf("write left %q in %s", b, out)
			}
			if r := call(t, ctx, tools, "fake__fail", `{}`); !r.IsError || !strings.Contains(text(r), "broken") {
				t.Errorf("fail: %+v", r)
			}
			r := call(t, ctx, tools, "fake__image", `{}`)
			if len(r.Content) != 2 || r.Content[1].Type != llm.ContentImage || r.Content[1].MimeType != "image/png" || r.Content[1].Data == "" {
				t.Errorf("image: %+v", r)
			}
			r = call(t, ctx, tools, "fake__link", `{}`)
			for _, want := range []string{"[resource] tracker://issue/42 (issue 42): the login bug",
				"[resource tracker://issue/42/body]\nLogin fails after 30 days.",
				"[resource tracker://issue/42/dump: application/octet-stream, 3B of binary data]"} {
				if r.IsError || !strings.Contains(text(r), want) {
					t.Errorf("link: %q lacks %q", text(r), want)
				}
			}
			if r := call(t, ctx, tools, "fake__big", `{}`); !strings.Contains(text(r), "Showing the first 2000 lines") || strings.Count(text(r), "line\n") > 2000 {
				t.Errorf("big: not cut to 2000 lines (%d bytes)", len(text(r)))
			}
			if r := call(t, ctx, tools, "fake__echo", `not json`); !r.IsError {
				t.Errorf("bad arguments: %+v", r)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestHTTPServerRefusesWithoutItsHeaders(t *testing.T) {
	url := mcpfake.ServeHTTP(t, "Authorization", "Bearer s3cret")
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "docs", URL: url, Timeout: 5 * time.Second}}, mcptool.Options{})
	defer set.Close()
	st := set.Status()
	if len(st) != 1 || st[0].Err == "" || len(set.Tools()) != 0 {
		t.Fatalf("status %+v, tools %v; want the server unavailable", st, names(set.Tools()))
	}
	if strings.Contains(st[0].Err, "s3cret") {
		t.Errorf("the error shows the header: %s", st[0].Err)
	}
}

func TestAllowListAndBrokenServers(t *testing.T) {
	url := mcpfake.ServeHTTP(t, "", "")
	set := mcptool.Open(t.Context(), []mcptool.Server{
		{Name: "some", URL: url, Tools: []string{"echo", "fail"}},
		{Name: "gone", Command: "/nonexistent/server"},
	}, mcptool.Options{Launch: launcher(sandbox.None(), t.TempDir())})
	defer set.Close()
	if n := names(set.Tools()); len(n) != 2 || n[0] != "some__echo" || n[1] != "some__fail" {
		t.Errorf("tools %v, want the two allowed", n)
	}
	st := set.Status()
	if st[1].Server != "gone" || st[1].Err == "" {
		t.Errorf("status %+v, want gone unavailable", st)
	}
	if len(st[0].Unoffered) != 0 {
		t.Errorf("unoffered %v, want none", st[0].Unoffered)
	}
	// An allowed name the server does not offer (a typo) is named.
	set2 := mcptool.Open(t.Context(), []mcptool.Server{{Name: "typo", URL: url, Tools: []string{"echo", "ecoh"}}}, mcptool.Options{})
	defer set2.Close()
	if st := set2.Status(); len(st[0].Unoffered) != 1 || st[0].Unoffered[0] != "ecoh" || len(st[0].Tools) != 1 {
		t.Errorf("status %+v, want echo offered and ecoh named as not offered", st)
	}
}

func TestCancelTimeoutCrashAndListChanged(t *testing.T) {
	bin := mcpfake.Build(t)
	dir := t.TempDir()
	sb := sandboxtest.New(t, sandbox.Config{})
	started, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "cancelled")
	var changed atomic.Int32
	changes := make(chan struct{}, 4)
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "fake", Command: bin, Env: map[string]string{"FAKEMCP_STARTED": started, "FAKEMCP_CANCELLED": cancelled}, Timeout: 30 * time.Second}},
		mcptool.Options{Launch: launcher(sb, dir, sandbox.Mount{Path: filepath.Dir(bin), Access: sandbox.ReadOnly}), OnChange: func() {
			changed.Add(1)
			changes <- struct{}{}
		}})
	defer set.Close()
	tools := set.Tools()

	// !stop cancels the run's context: the call returns at once and the
	// server is told.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan agent.ToolResult, 1)
	go func() { done <- call(t, ctx, tools, "fake__slow", `{}`) }()
	waitFile(t, started) // the call reached the server
	cancel()
	if r := <-done; !r.IsError || !strings.Contains(text(r), "Aborted") {
		t.Fatalf("cancelled call: %+v", r)
	}
	waitFile(t, cancelled)

	// A server that dies is started again once and the call retried.
	if r := call(t, t.Context(), tools, "fake__crash_once", `{}`); r.IsError || text(r) != "survived" {
		t.Fatalf("crash_once: %+v", r)
	}
	if r := call(t, t.Context(), set.Tools(), "fake__echo", `{"text":"after"}`); text(r) != "echo: after" {
		t.Fatalf("echo after the restart: %+v", r)
	}
	// The tool list changes: the set reads it again and says so.
	if r := call(t, t.Context(), set.Tools(), "fake__add_tool", `{"name":"late"}`); r.IsError {
		t.Fatalf("add_tool: %+v", r)
	}
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnChange after the tool list changed")
	}
	if !contains(names(set.Tools()), "fake__late") {
		t.Fatalf("tools after the change: %v", names(set.Tools()))
	}
	// Dying again is the end of it.
	if r := call(t, t.Context(), set.Tools(), "fake__crash", `{}`); !r.IsError || !strings.Contains(text(r), "stopped working") {
		t.Fatalf("crash: %+v", r)
	}
	if r := call(t, t.Context(), tools, "fake__echo", `{"text":"x"}`); !r.IsError || !strings.Contains(text(r), "unavailable") {
		t.Fatalf("echo after the second death: %+v", r)
	}
	if st := set.Status(); st[0].Err == "" {
		t.Errorf("status after the second death: %+v", st)
	}
}

func TestCallTimeout(t *testing.T) {
	bin := mcpfake.Build(t)
	dir := t.TempDir()
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "f", Command: bin, Timeout: 200 * time.Millisecond}}, mcptool.Options{Launch: launcher(sandbox.None(), dir)})
	defer set.Close()
	if r := call(t, t.Context(), set.Tools(), "f__slow", `{}`); !r.IsError || !strings.Contains(text(r), "Timed out after 200ms") {
		t.Fatalf("slow call: %+v", r)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestToolNames(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"jira", "search"}:              "jira__search",
		{"x", "a.b/c d"}:                "x__a_b_c_d",
		{"s", strings.Repeat("t", 100)}: "s__" + strings.Repeat("t", 61),
	} {
		if got := mcptool.ToolName(in[0], in[1]); got != want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

// Two of a server's tools whose names become the same once made safe
// ("add.tool" and "add_tool") are not both offered: a request with a tool
// name twice is refused by the providers, so every turn of the thread would
// fail. The first keeps the name; the other is left out.
func TestToolNamesThatCollideAreOfferedOnce(t *testing.T) {
	changes := make(chan struct{}, 4)
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "fake", URL: mcpfake.ServeHTTP(t, "", "")}},
		mcptool.Options{Launch: launcher(sandbox.None(), t.TempDir()), OnChange: func() { changes <- struct{}{} }})
	defer set.Close()
	if r := call(t, t.Context(), set.Tools(), "fake__add_tool", `{"name":"add.tool"}`); r.IsError {
		t.Fatalf("add_tool: %+v", r)
	}
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("no OnChange after the tool list changed")
	}
	seen := map[string]bool{}
	for _, n := range names(set.Tools()) {
		if seen[n] {
			t.Errorf("tool %s offered twice: %v", n, names(set.Tools()))
		}
		seen[n] = true
	}
	if r := call(t, t.Context(), set.Tools(), "fake__add_tool", `{"name":"x"}`); r.IsError || text(r) != "added x" {
		t.Errorf("fake__add_tool after the collision: %+v, want the original tool", r)
	}
}

// A server that dies during a call is started again and the call retried;
// dying again gives it up at once: the call says so, OnDown tells the caller
// once (the bot reports it in the thread), later calls say it is
// unavailable without starting it again.
func TestServerThatDiesTwiceIsGivenUpAndReportedOnce(t *testing.T) {
	bin := mcpfake.Build(t)
	type down struct {
		server string
		err    error
	}
	downs := make(chan down, 4)
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "fake", Command: bin, Timeout: 30 * time.Second}},
		mcptool.Options{Launch: launcher(sandbox.None(), t.TempDir()), OnDown: func(s string, err error) { downs <- down{s, err} }})
	defer set.Close()
	if r := call(t, t.Context(), set.Tools(), "fake__crash", `{}`); !r.IsError || !strings.Contains(text(r), "stopped working (it died 2 times)") {
		t.Fatalf("crash: %+v", r)
	}
	select {
	case d := <-downs:
		if d.server != "fake" || !strings.Contains(d.err.Error(), "stopped working") {
			t.Errorf("OnDown(%q, %v)", d.server, d.err)
		}
	default:
		t.Fatal("no OnDown after the server died twice")
	}
	if r := call(t, t.Context(), set.Tools(), "fake__echo", `{"text":"x"}`); !r.IsError || !strings.Contains(text(r), "unavailable") {
		t.Fatalf("echo after the server was given up: %+v", r)
	}
	if len(downs) != 0 {
		t.Errorf("OnDown called again: %+v", <-downs)
	}
	if st := set.Status(); !strings.Contains(st[0].Err, "stopped working") {
		t.Errorf("status %+v", st)
	}
}

// Closing the set ends a stdio server and every process it started, even
// one it detached (setsid): the server runs in its sandbox's PID namespace,
// which ends with it (unsandboxed, the detached process would live on).
func TestCloseEndsWhatAServerStarted(t *testing.T) {
	bin := mcpfake.Build(t)
	sb := sandboxtest.New(t, sandbox.Config{})
	marker := fmt.Sprintf("mcpleft%d", time.Now().UnixNano())
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "fake", Command: bin}},
		mcptool.Options{Launch: launcher(sb, t.TempDir(), sandbox.Mount{Path: filepath.Dir(bin), Access: sandbox.ReadOnly})})
	if r := call(t, t.Context(), set.Tools(), "fake__spawn", `{"name":"`+marker+`"}`); r.IsError || !strings.HasPrefix(text(r), "started") {
		t.Fatalf("spawn: %+v", r)
	}
	if len(sandboxtest.Live(marker)) == 0 {
		t.Fatal("the spawned process is not running; the test would prove nothing")
	}
	set.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(sandboxtest.Live(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes the server started outlived it: %v", sandboxtest.Live(marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server that accepts but never answers holds the session's start up for
// the connect timeout, not for its (long) call timeout.
func TestOpenGivesUpOnASilentServer(t *testing.T) {
	done := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer silent.Close()
	defer close(done)
	opened := make(chan *mcptool.Set, 1)
	go func() {
		opened <- mcptool.Open(t.Context(), []mcptool.Server{{Name: "silent", URL: silent.URL, Timeout: time.Hour}},
			mcptool.Options{ConnectTimeout: 300 * time.Millisecond})
	}()
	var set *mcptool.Set
	select {
	case set = <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("Open still waits for the silent server after 20s with a 300ms connect timeout")
	}
	set.Close()
	if st := set.Status(); st[0].Err == "" {
		t.Errorf("status %+v, want the silent server unavailable", st)
	}
}

// A key in a server's URL shows in the errors that name the URL: Secrets
// hides it from Status and the log.
func TestErrorsHideSecrets(t *testing.T) {
	const key = "url-key-0123456789"
	var logs strings.Builder
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "keyed", URL: "http://127.0.0.1:1/mcp?key=" + key}},
		mcptool.Options{Secrets: []string{key}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	set.Close()
	st := set.Status()
	if st[0].Err == "" || strings.Contains(st[0].Err, key) || !strings.Contains(st[0].Err, "[redacted]") {
		t.Errorf("status error %q, want the key redacted", st[0].Err)
	}
	if strings.Contains(logs.String(), key) || !strings.Contains(logs.String(), "did not start") {
		t.Errorf("log:\n%s", logs.String())
	}
}

// A server that died and could not be started again, for a reason that
// names a secret (a launch's error may hold a key of its command line or
// URL), is reported without it: OnDown's error goes to the thread as it is,
// and the call's error and Status say the same.
func TestRestartFailureHidesSecrets(t *testing.T) {
	const key = "launch-key-0123456789"
	bin := mcpfake.Build(t)
	start := launcher(sandbox.None(), t.TempDir())
	var launches atomic.Int32
	downs := make(chan error, 4)
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "fake", Command: bin, Timeout: 30 * time.Second}},
		mcptool.Options{Secrets: []string{key}, OnDown: func(_ string, err error) { downs <- err },
			Launch: func(ctx context.Context, s mcptool.Server) (*mcptool.Process, error) {
				if launches.Add(1) > 1 {
					return nil, fmt.Errorf("exec %s --token=%s: no such file", s.Command, key)
				}
				return start(ctx, s)
			}})
	defer set.Close()
	r := call(t, t.Context(), set.Tools(), "fake__crash", `{}`)
	if !r.IsError || !strings.Contains(text(r), "could not be started again") || strings.Contains(text(r), key) {
		t.Errorf("crash: %q, want the failed restart without the key", text(r))
	}
	select {
	case err := <-downs:
		if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("OnDown(%v), want the key redacted", err)
		}
	default:
		t.Fatal("no OnDown after the restart failed")
	}
	if st := set.Status(); strings.Contains(st[0].Err, key) {
		t.Errorf("status %q shows the key", st[0].Err)
	}
}

func jsonArgs(m map[string]string) string {
	b, _ := json.Marshal(m)
	return string(b)
}
