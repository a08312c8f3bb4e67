package main

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
)

// A thread resumed after a restart shows its status message before its
// session is set up again: with the thread's MCP server held at its first
// request (the session's start-up waits for it), the working status is in
// the thread and the model has not been asked; once the server answers, the
// run goes on and its answer lands in the thread.
func TestSlackResumedThreadShowsItsStatusBeforeItsStartUp(t *testing.T) {
	t.Parallel()
	srv := mcpfake.NewHTTP(t)
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	var (
		mu        sync.Mutex
		hold      chan struct{} // non-nil: requests wait until it is closed
		reached   = make(chan struct{}, 1)
		abandoned bool // a held request was given up by the bot
	)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := hold
		mu.Unlock()
		if h != nil {
			select {
			case reached <- struct{}{}:
			default:
			}
			select {
			case <-h:
			case <-r.Context().Done():
				mu.Lock()
				abandoned = true
				mu.Unlock()
				return
			}
		}
		r.URL.Path = target.Path
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.MCP.Servers = []config.MCPServer{{Name: "docs", URL: gate.URL + "/mcp", Timeout: config.DefaultMCPTimeout}}
	}))
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		return llmfake.TextReply("answer to: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "first question", "")
	e.waitText(slackChan, root, "answer to: first question")

	e.stop()
	release := make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	t.Cleanup(let) // before the bot's Close: a failure must not leave the start-up held
	mu.Lock()
	hold = release
	mu.Unlock()
	e.start()
	asked := len(e.llm.Requests())
	ts := e.slack.Mention(slackChan, aliceID, "second question", root)

	// The bot's messages in the thread after the resumed mention.
	after := func() []string {
		var out []string
		seen := false
		for _, m := range e.slack.Messages(slackChan, root) {
			if m.TS == ts {
				seen = true
				continue
			}
			if seen && m.User == e.slack.BotUserID() {
				out = append(out, html.UnescapeString(m.Text))
			}
		}
		return out
	}
	e.waitFor("the resumed thread's status", func() bool {
		for _, text := range after() {
			if strings.HasPrefix(text, "⏳ working…") {
				return true
			}
		}
		return false
	}, func() string { return "thread:\n" + e.transcript(slackChan, root) })
	select {
	case <-reached:
	case <-e.ctx.Done():
		t.Fatal("the session's start-up never reached the MCP server")
	}
	mu.Lock()
	gaveUp := abandoned
	mu.Unlock()
	if gaveUp {
		t.Fatal("the bot gave up on the held MCP server: the status may have come after the start-up")
	}
	if n := len(e.llm.Requests()); n != asked {
		t.Fatalf("the model was asked %d times before the start-up was let go", n-asked)
	}
	let()
	e.waitText(slackChan, root, "answer to: second question")
}
