package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/browsertest"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The session page in headless Chromium, against the whole program and the
// fakes (Slack, the LLM, a forge with git over HTTP): opened from !link
// while the run waits for the model, it shows the tool line and then its
// output as the run makes them, without a reload; the run's end and its
// push (with the diff) arrive the same way; a tool output expands; the
// compare link reaches the forge's compare view of the thread's branch; the
// list shows the session and opens it again. The screenshots are test
// artifacts (go test -artifacts).
func TestSessionPageInABrowserDuringARun(t *testing.T) {
	t.Parallel()
	bin := browsertest.Require(t)
	const token = "forge-token-0001"
	fake := forgefake.New(t, "github", "acme/app", token)
	e := newSlackFakes(t)
	git := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	remote := git.ServeAt(t, e.remote, "acme/app")
	e.cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: remote, DefaultBranch: "main", Token: token,
		Forge: "github", APIURL: fake.APIURL(), PullRequests: config.PullRequestsDraft}}
	e.cfg.HTTP.Listen = "127.0.0.1:0"
	e.cfg.HTTP.PublicURL = "http://pages.test"
	e.cfg.HTTP.SessionKey = "browser-session-key-0123456789abcdef"
	// Each request to the model waits for the reply the test sends.
	arrived := make(chan struct{}, 8)
	replies := make(chan llmfake.Response)
	e.llm.Handle(func(llmfake.Request) llmfake.Response {
		arrived <- struct{}{}
		select {
		case r := <-replies:
			return r
		case <-e.ctx.Done():
			return llmfake.HTTPError(503, "gone", "the test ended")
		}
	})
	e.start()
	waitRequest := func() {
		t.Helper()
		select {
		case <-arrived:
		case <-e.ctx.Done():
			t.Fatal("the LLM request never arrived")
		}
	}

	root := e.slack.Mention(slackChan, aliceID, "make the build green", "")
	waitRequest()
	e.slack.UserMessage(slackChan, aliceID, "!link", root)
	e.waitText(slackChan, root, "This session's page")
	var link []string
	for _, m := range e.botMessages(slackChan, root) {
		if strings.Contains(m.Text, "This session's page") {
			link = pageLinkRe.FindStringSubmatch(m.Text)
		}
	}
	if link == nil {
		t.Fatalf("!link posted no link:\n%s", e.transcript(slackChan, root))
	}

	b := browsertest.Start(t, bin)
	b.Navigate("http://" + e.m.HTTPAddr() + link[1])
	b.WaitText("make the build green")
	if state := b.Eval(`document.querySelector("#head .state").textContent`); state != "running" {
		t.Errorf("the page's state = %v, want running", state)
	}

	// The run goes on: its tool line, then the line's output, arrive live.
	replies <- llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"live-marker.txt","content":"green\n"}`})
	b.WaitText("live-marker.txt")
	waitRequest()
	b.WaitText("Wrote 6 bytes to live-marker.txt (new file).")
	replies <- llmfake.TextReply("The build is **green** now.")
	b.WaitText("The build is green now.")
	b.WaitText("push of bot/slack-")
	b.WaitText("+green")
	e.waitText(slackChan, root, "|full session>")
	if n := b.Eval(`document.querySelectorAll("details.tool").length`); n != float64(1) {
		t.Errorf("tool lines = %v, want 1 (the output fills its call's line)", n)
	}
	// The run ends in storage once its push is recorded; the page follows.
	b.WaitTrue(`document.querySelector("#head .state").textContent == "idle" && document.querySelector(".run .outcome")`)
	if got := b.Eval(`document.querySelector("#head .state").textContent`); got != "idle" {
		t.Errorf("the page's state after the run = %v, want idle", got)
	}
	if got := b.Eval(`document.querySelector(".run .outcome") && document.querySelector(".run .outcome").textContent`); got != "done" {
		t.Errorf("the run's outcome on the page = %v, want done", got)
	}

	// Expand the tool output.
	open := b.Eval(`(() => { const d = document.querySelector("details.tool"); d.querySelector("summary").click();
		return d.open && d.querySelector("pre.output").getBoundingClientRect().height > 0 })()`)
	if open != true {
		t.Errorf("the tool output did not expand (got %v)", open)
	}
	b.Screenshot(t, "session-page-e2e.png")
	if errs := b.Errors(); errs != "[]" {
		t.Errorf("page errors: %s", errs)
	}

	// Follow the compare link: it reaches the forge's compare view of the
	// thread's branch (the fake serves git there and answers 401; the
	// request is what counts).
	b.Eval(`document.querySelector("#head a[href*='/compare/']").click()`)
	// The git server tells no one of a request: look at what it saw until
	// the browser's arrives.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !slices.ContainsFunc(git.Requests(), func(r string) bool {
		return strings.HasPrefix(r, "GET /acme/app/compare/main...bot/slack-")
	}) {
		select {
		case <-tick.C:
		case <-e.ctx.Done():
			t.Fatalf("following the compare link reached no forge; it saw:\n%s", strings.Join(git.Requests(), "\n"))
		}
	}

	// The list: the link's cookie shows this session, idle now, and links it.
	b.Navigate("http://" + e.m.HTTPAddr() + "/")
	row := b.Eval(`(() => { const r = document.querySelector("table.sessions tbody tr"); return r ? r.innerText : "" })()`)
	if s, _ := row.(string); !strings.Contains(s, "idle") || !strings.Contains(s, "bot/slack-") || !strings.Contains(s, "app") {
		t.Errorf("the list's row = %q, want the session, idle, with its repository and branch", row)
	}
	b.Screenshot(t, "session-list-e2e.png")
	b.Navigate(b.Eval(`document.querySelector("table.sessions a").href`).(string))
	b.WaitText("make the build green")
}
