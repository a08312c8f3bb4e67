package main

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/ops/opstest"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// The model of thread 2, its bash given the network, plays the attacker
// against the bot's own listener: the session pages behind an operator's
// proxy (http.auth_header, which a request from the bot's own machine could
// spoof), the session list and /metrics, on the host's loopback and on each
// of its own addresses (the listener is on every address). It gets nothing
// of thread 1, and its connections are refused.
func TestSlackSandboxWithNetworkCannotReachTheBotsListener(t *testing.T) {
	t.Parallel()
	sandboxtest.Network(t) // or skip, saying why
	const spoof = "X-Forwarded-User"
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.Sandbox.Network = true
		c.HTTP.Listen = ":0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = "e2e-session-key-0123456789abcdef0123"
		c.HTTP.AuthHeader = spoof
	}))
	_, port, err := net.SplitHostPort(e.m.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{"127.0.0.1"}
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		ln.Close()
		targets = append(targets, "[::1]")
	}
	for _, ip := range sandboxtest.HostAddrs(t) {
		if ip.To4() != nil {
			targets = append(targets, ip.String())
		} else {
			targets = append(targets, "["+ip.String()+"]")
		}
	}
	paths := []string{"/s/1", "/", "/metrics"}
	var attack strings.Builder
	for _, h := range targets {
		for _, p := range paths {
			fmt.Fprintf(&attack, "curl -sS -m 5 -g -H '%s: mallory' http://%s:%s%s 2>&1 | head -c 300; echo\n", spoof, h, port, p)
		}
	}

	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				return llmfake.TextReply("the tool said:\n" + m.Content)
			}
		}
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Content, "launch codes") {
				return llmfake.TextReply("noted")
			}
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "a1", Name: "bash", Args: jsonArgs(map[string]string{"command": attack.String()})})
	})
	one := e.slack.Mention(slackChan, aliceID, "the launch codes are 0000-thread-one", "")
	e.waitText(slackChan, one, "noted")
	branchOne := regexp.MustCompile("bot/slack-[0-9a-f-]+").FindString(e.threadText(slackChan, one))
	if branchOne == "" {
		t.Fatalf("thread 1 names no branch:\n%s", e.transcript(slackChan, one))
	}

	// What the attacker is after is there for whoever reaches the listener.
	for _, h := range targets {
		for _, p := range paths {
			url := "http://" + h + ":" + port + p
			req, _ := http.NewRequestWithContext(e.ctx, "GET", url, nil)
			req.Header.Set(spoof, "mallory")
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s from the host: %v %v", url, resp, err)
			}
			resp.Body.Close()
		}
	}
	if _, body := opstest.Get(t, "http://127.0.0.1:"+port+"/metrics"); !strings.Contains(body, "# TYPE") {
		t.Fatalf("the test needs /metrics on the listener:\n%.300s", body)
	}

	two := e.slack.Mention(slackChan, aliceID, "have a look around", "")
	e.waitText(slackChan, two, "the tool said")
	tr := e.threadText(slackChan, two)
	for _, leak := range []string{"launch codes", "0000-thread-one", branchOne, "# TYPE", "<html", "<!doctype"} {
		if strings.Contains(strings.ToLower(tr), strings.ToLower(leak)) {
			t.Errorf("the sandbox got %q from the bot's listener:\n%s", leak, tr)
		}
	}
	if n, want := strings.Count(tr, "curl: (7)"), len(targets)*len(paths); n != want {
		t.Errorf("%d refused connections, want %d (one per request):\n%s", n, want, tr)
	}
}
