package main

import (
	"bytes"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	"github.com/threadsmith/threadsmith/ops/opstest"
)

// What a person typed in Slack is what every consumer gets: the model's
// request, the session page (heading, <title>, the / list), the pushed
// commit's subject and the pull request's title and body. Slack escaped it
// once on the wire and the adapter unescapes it once: "&lt;" typed literally
// stays "&lt;". Said back in Slack, it is escaped again: no markup reaches
// Slack as markup.
func TestSlackTypedTextIsShownAsTyped(t *testing.T) {
	t.Parallel()
	const token = "forge-token-0001"
	const typed = `<b>"'& &lt; &amp;lt; <!here>`
	// Slack escapes &, < and > of what a person types.
	wire := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(typed)
	fake := forgefake.New(t, "github", "acme/app", token)
	e := newSlackFakes(t, withConfig(func(c *config.Config) {
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = "e2e-session-key-0123456789abcdef0123"
		c.HTTP.AuthHeader = "X-User"
	}))
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	url := srv.ServeAt(t, e.remote, "acme/app")
	e.cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: url, DefaultBranch: "main", Token: token,
		Forge: "github", APIURL: fake.APIURL(), PullRequests: config.PullRequestsDraft}}
	e.start()
	writes(e)

	root := e.slack.Mention(slackChan, aliceID, wire, "")
	e.waitText(slackChan, root, "🔀 Opened draft <")
	e.waitText(slackChan, root, "|full session>")

	if got := lastUserText(e.llm.Requests()[0]); !strings.Contains(got, typed) {
		t.Errorf("the model's request holds %q, want %q in it", got, typed)
	}

	var branch string
	for _, b := range e.remote.Branches(t) {
		if strings.HasPrefix(b, "bot/slack-") {
			branch = b
		}
	}
	if branch == "" {
		t.Fatalf("no bot/slack-… branch on the remote: %v", e.remote.Branches(t))
	}
	if got := e.remote.Commits(t, branch)[0].Subject(); got != typed {
		t.Errorf("commit subject %q, want %q", got, typed)
	}

	prs := fake.PRs()
	if len(prs) != 1 {
		t.Fatalf("the forge holds %+v", prs)
	}
	if prs[0].Title != typed || !strings.Contains(prs[0].Body, typed) {
		t.Errorf("pull request title %q, body:\n%s\nwant %q in both", prs[0].Title, prs[0].Body, typed)
	}

	link := pageLinkRe.FindStringSubmatch(e.threadText(slackChan, root))
	if link == nil {
		t.Fatalf("no session page link in the thread:\n%s", e.transcript(slackChan, root))
	}
	base := "http://" + e.m.HTTPAddr()
	code, page := opstest.Get(t, base+link[1])
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d\n%s", link[1], code, page)
	}
	req, err := http.NewRequestWithContext(e.ctx, "GET", base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-User", "op")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list bytes.Buffer
	_, _ = list.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d\n%s", resp.StatusCode, list.String())
	}
	for what, re := range map[string]*regexp.Regexp{
		"heading": regexp.MustCompile(`<h1>(.*?)</h1>`),
		"title":   regexp.MustCompile(`<title>(.*?) · threadsmith</title>`),
	} {
		m := re.FindStringSubmatch(page)
		if m == nil || html.UnescapeString(m[1]) != typed {
			t.Errorf("the page's %s is %q, want %q", what, m, typed)
		}
	}
	if !strings.Contains(html.UnescapeString(list.String()), typed) {
		t.Errorf("the / list does not show %q:\n%s", typed, list.String())
	}

	// The answer repeats the request: escaped on its way to Slack.
	var answered bool
	for _, m := range e.botMessages(slackChan, root) {
		if strings.Contains(m.Text, "<b>") || strings.Contains(m.Text, "<!here>") {
			t.Errorf("a message sends the typed text as Slack markup: %q", m.Text)
		}
		answered = answered || strings.Contains(m.Text, wire)
	}
	if !answered {
		t.Errorf("no answer holds the typed text escaped once for Slack (%q):\n%s", wire, e.transcript(slackChan, root))
	}
}
