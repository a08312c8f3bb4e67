package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// prEnv is a Slack env whose repository lives on a fake forge: git over
// HTTP at <forge>/acme/app.git with a token, and the forge's REST API.
func prEnv(t *testing.T, kind string) (*slackEnv, *forgefake.Server) {
	t.Helper()
	const token = "forge-token-0001"
	fake := forgefake.New(t, kind, "acme/app", token)
	e := newSlackFakes(t)
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	url := srv.ServeAt(t, e.remote, "acme/app")
	e.cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: url, DefaultBranch: "main", Token: token,
		Forge: kind, APIURL: fake.APIURL(), PullRequests: config.PullRequestsDraft}}
	e.start()
	return e, fake
}

// writes answers every request by writing a file named after the request's
// number, then says what it did.
func writes(e *slackEnv) *atomic.Int32 {
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		for _, m := range r.Messages[len(r.Messages)-1:] {
			if m.Role == "tool" {
				return llmfake.TextReply("done: " + lastUserText(r))
			}
		}
		i := n.Add(1)
		return llmfake.ToolCallReply(llmfake.Call{ID: "w" + itoa(int(i)), Name: "write",
			Args: jsonArgs(map[string]string{"path": "file" + itoa(int(i)) + ".txt", "content": "v" + itoa(int(i)) + "\n"})})
	})
	return &n
}

// The review loop: the first push opens a draft pull request linking the
// thread, the next push updates it, review comments come back with !review
// and lead to a new commit that updates it again.
func TestSlackPullRequestLoop(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"github", "gitlab", "gitea"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel() // each forge has its own fakes and bot: 3 × 7 s one after another
			e, fake := prEnv(t, kind)
			writes(e)
			// GitLab calls its requests merge requests, numbered !1.
			name := map[bool]string{true: "|merge request !1>", false: "|pull request #1>"}[kind == "gitlab"]
			root := e.slack.Mention(slackChan, aliceID, "add the first file", "")
			e.waitText(slackChan, root, "🔀 Opened draft <https://forge.test/acme/app/")
			e.waitText(slackChan, root, name)
			prs := fake.PRs()
			if len(prs) != 1 || !strings.HasPrefix(prs[0].Head, "bot/slack-") || prs[0].Base != "main" || !prs[0].Draft {
				t.Fatalf("the forge holds %+v", prs)
			}
			// The title is the request, marked as a draft the forge's way.
			if want := map[string]string{"github": "", "gitlab": "Draft: ", "gitea": "WIP: "}[kind] + "add the first file"; prs[0].Title != want {
				t.Errorf("title %q, want %q", prs[0].Title, want)
			}
			if !strings.Contains(prs[0].Body, "https://fake.slack.test/archives/") || !strings.Contains(prs[0].Body, "add the first file") ||
				!strings.Contains(prs[0].Body, "- `file1.txt` (+1 −0)") {
				t.Errorf("the description does not link the thread, say the request and list the file changed:\n%s", prs[0].Body)
			}

			e.slack.UserMessage(slackChan, aliceID, "and a second one", root)
			e.waitText(slackChan, root, "🔀 Updated <")
			prs = fake.PRs()
			if len(prs) != 1 || prs[0].Updates != 1 || !strings.Contains(prs[0].Body, "and a second one") ||
				!strings.Contains(prs[0].Body, "## Files changed (2, +2 −0)") || !strings.Contains(prs[0].Body, "- `file2.txt` (+1 −0)") {
				t.Fatalf("after the second push the forge holds %+v", prs)
			}

			fake.AddComment(1, forgefake.Comment{ID: 41, Author: "reviewer", Body: "please shout in file1", Path: "file1.txt", Line: 1, Review: true})
			// The review's own text, submitted with "Request changes".
			verdict := map[string]string{"github": "CHANGES_REQUESTED", "gitea": "REQUEST_CHANGES"}[kind]
			fake.AddComment(1, forgefake.Comment{ID: 3, Author: "lead", Body: "and name the files better", State: verdict})
			before := len(e.llm.Requests())
			e.slack.UserMessage(slackChan, aliceID, "!review and keep it short", root)
			e.waitFor("the fix's push", func() bool { return strings.Count(e.threadText(slackChan, root), "🔀 Updated <") == 2 })
			var got string
			for _, r := range e.llm.Requests()[before:] {
				got += lastUserText(r)
			}
			if !strings.Contains(got, "please shout in file1") || !strings.Contains(got, "reviewer on file1.txt line 1") {
				t.Fatalf("the model did not get the review comment with its place:\n%s", got)
			}
			if !strings.Contains(got, "> and name the files better") || kind != "gitlab" && !strings.Contains(got, "lead (review: changes requested)") {
				t.Fatalf("the model did not get the review's own text with its verdict:\n%s", got)
			}
			if !strings.Contains(got, "The person who asked for this adds:\nand keep it short") {
				t.Errorf("the words after !review did not reach the model:\n%s", got)
			}
			what := map[bool]string{true: "merge request", false: "pull request"}[kind == "gitlab"]
			if prs := fake.PRs(); prs[0].Updates != 2 || !strings.Contains(prs[0].Body, "- Address the "+what+"'s review comments: and keep it short\n") || strings.Contains(prs[0].Body, "- !review") {
				t.Errorf("the fix did not update the pull request with what it did: %+v", prs[0])
			}
			// Nothing new: said in the thread, no run.
			n := len(e.llm.Requests())
			e.slack.UserMessage(slackChan, aliceID, "!review", root)
			e.waitText(slackChan, root, "No new review comments on <")
			e.slack.UserMessage(slackChan, aliceID, "!pr", root)
			e.waitFor("the !pr answer", func() bool { return strings.Count(e.threadText(slackChan, root), name) == 4 })
			if len(e.llm.Requests()) != n {
				t.Errorf("!review without news or !pr asked the model")
			}
		})
	}
}

// A forge that says no gets one plain note, not one per push.
func TestSlackPullRequestRefusedIsSaidOnce(t *testing.T) {
	t.Parallel()
	e, fake := prEnv(t, "github")
	fake.Forbid(true)
	writes(e)
	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "No pull request: the forge does not let the bot open pull requests")
	e.waitText(slackChan, root, "⏱")
	e.slack.UserMessage(slackChan, aliceID, "another file", root)
	e.waitText(slackChan, root, "done: another file")
	e.waitFor("the second push", func() bool { return strings.Count(e.threadText(slackChan, root), "⬆️ pushed") == 2 })
	if n := strings.Count(e.threadText(slackChan, root), "No pull request"); n != 1 {
		t.Errorf("the refusal was said %d times, want once:\n%s", n, e.transcript(slackChan, root))
	}
	if len(fake.PRs()) != 0 {
		t.Errorf("a request was opened despite the 403")
	}
}

// The repository's AGENTS.md reaches the model with every request, as it is
// on the thread's branch at that moment; !status names it.
func TestSlackRepositoryInstructions(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t)
	e.remote.Commit(t, gitremote.Change{Branch: "main", Files: map[string]string{"AGENTS.md": "Always run `make check`."}})
	e.start()
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			return llmfake.ToolCallReply(llmfake.Call{ID: "a1", Name: "write", Args: `{"path":"AGENTS.md","content":"Use tabs, not spaces."}`})
		}
		return llmfake.TextReply("ok")
	})
	root := e.slack.Mention(slackChan, aliceID, "follow the rules", "")
	e.waitText(slackChan, root, "⏱")
	e.slack.UserMessage(slackChan, aliceID, "again", root)
	e.waitFor("the second answer", func() bool { return strings.Count(e.threadText(slackChan, root), "⏱") == 2 })
	reqs := e.llm.Requests()
	system := func(r llmfake.Request) string { return r.Messages[0].Content }
	if s := system(reqs[0]); !strings.Contains(s, "## AGENTS.md") || !strings.Contains(s, "Always run `make check`.") {
		t.Errorf("first request's system prompt lacks AGENTS.md:\n%s", s)
	}
	if s := system(reqs[len(reqs)-1]); !strings.Contains(s, "Use tabs, not spaces.") || strings.Contains(s, "make check") {
		t.Errorf("after the branch changed AGENTS.md, the system prompt is:\n%s", s)
	}
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Instructions: `AGENTS.md`")
}

// A forge's webhook for a review comment, verified by the repository's
// secret, gets the thread's agent the comment without anyone typing
// !review; an unsigned one does nothing.
func TestSlackReviewWebhookBringsTheCommentsBack(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"github", "gitlab", "gitea"} {
		t.Run(kind, func(t *testing.T) {
			const secret = "hook-secret-0123456789"
			fake := forgefake.New(t, kind, "acme/app", "forge-token-0001")
			e := newSlackFakes(t)
			srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: "forge-token-0001"})
			url := srv.ServeAt(t, e.remote, "acme/app")
			e.cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: url, DefaultBranch: "main", Token: "forge-token-0001",
				Forge: kind, APIURL: fake.APIURL(), PullRequests: config.PullRequestsDraft, WebhookSecret: secret}}
			e.cfg.HTTP.Listen = "127.0.0.1:0"
			e.start()
			writes(e)
			root := e.slack.Mention(slackChan, aliceID, "add the first file", "")
			e.waitText(slackChan, root, map[bool]string{true: "|merge request !1>", false: "|pull request #1>"}[kind == "gitlab"])
			prs := fake.PRs()
			fake.AddComment(1, forgefake.Comment{ID: 77, Author: "reviewer", Body: "rename file1", Path: "file1.txt", Line: 1, Review: true})

			body, header := reviewHook(kind, prs[0].Head, secret)
			// The reviewer may push: GitLab's user 7, Gitea's dev.
			fake.SetAccess("7", 30)
			fake.SetAccess("dev", 30)
			fake.SetAccess("9", 20) // a reporter may comment, not push
			hook := "http://" + e.m.HTTPAddr() + "/hooks/app"
			postBody := func(body string, h http.Header) int { return postHook(t, hook, body, h) }
			post := func(h http.Header) int { return postBody(body, h) }
			before := len(e.llm.Requests())
			// Someone who may not push (anyone may comment on a public
			// project) starts nothing: acknowledged and ignored.
			stranger := fromStranger(kind, body)
			if stranger == body {
				t.Fatalf("no stranger made of %s", body)
			}
			sh := header.Clone()
			sign(kind, stranger, secret, sh)
			if code := postBody(stranger, sh); code != http.StatusNoContent {
				t.Fatalf("a stranger's webhook got %d, want 204", code)
			}
			forged := header.Clone()
			for k := range forged {
				if strings.Contains(strings.ToLower(k), "signature") || strings.Contains(strings.ToLower(k), "token") {
					forged.Set(k, "sha256=00")
				}
			}
			if code := post(forged); code != http.StatusUnauthorized {
				t.Fatalf("a forged webhook got %d, want 401", code)
			}
			if code := post(header); code != http.StatusAccepted {
				t.Fatalf("the signed webhook got %d, want 202", code)
			}
			e.waitFor("the review reaching the model", func() bool {
				for _, r := range e.llm.Requests()[before:] {
					if strings.Contains(lastUserText(r), "rename file1") {
						return true
					}
				}
				return false
			})
			// Redelivered: the same delivery acts once. A second !review would
			// answer "No new review comments" before the !status sent after
			// it (a thread takes its input in order).
			if code := post(header); code != http.StatusAccepted {
				t.Fatalf("the redelivered webhook got %d, want 202", code)
			}
			if kind != "gitlab" {
				// Replayed by someone who captured it, under a new delivery
				// id (a header the signature does not cover): the same event.
				replayed := header.Clone()
				replayed.Set("X-GitHub-Delivery", "delivery-78")
				replayed.Set("X-Gitea-Delivery", "delivery-78")
				if code := post(replayed); code != http.StatusAccepted {
					t.Fatalf("the replayed webhook got %d, want 202", code)
				}
			}
			e.waitFor("the fix's push", func() bool { return strings.Count(e.threadText(slackChan, root), "🔀 Updated <") == 1 })
			if body := fake.PRs()[0].Body; strings.Contains(body, "Requested by code review") {
				t.Errorf("the description names the webhook as the requester:\n%s", body)
			}
			e.slack.UserMessage(slackChan, aliceID, "!status", root)
			e.waitText(slackChan, root, "Status")
			if tr := e.threadText(slackChan, root); strings.Contains(tr, "No new review comments") {
				t.Errorf("the redelivered webhook ran !review again:\n%s", tr)
			}
			// The prompt is new in exactly one request: the one it ends.
			n := 0
			for _, r := range e.llm.Requests()[before:] {
				if last := r.Messages[len(r.Messages)-1]; last.Role == "user" && strings.Contains(last.Content, "rename file1") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the review prompt reached the model %d times, want once", n)
			}
		})
	}
}

// reviewHook is a review-comment webhook as kind's forge sends it, signed
// with secret.
func reviewHook(kind, branch, secret string) (string, http.Header) {
	h := http.Header{"Content-Type": {"application/json"}}
	var body string
	switch kind {
	case "gitlab":
		body = `{"object_kind":"note","user":{"id":7,"username":"dev"},"object_attributes":{"id":77,"noteable_type":"MergeRequest"},"merge_request":{"source_branch":"` + branch + `","source_project_id":5,"target_project_id":5}}`
		h.Set("X-Gitlab-Event", "Note Hook")
		h.Set("X-Gitlab-Event-UUID", "uuid-77")
		h.Set("X-Gitlab-Token", secret)
		return body, h
	case "gitea":
		body = `{"action":"reviewed","sender":{"login":"dev"},"pull_request":{"head":{"ref":"` + branch + `","repo":{"full_name":"acme/app"}},"base":{"repo":{"full_name":"acme/app"}}}}`
		// Gitea's coarse event and its fine type, as it sends them.
		h.Set("X-Gitea-Event", "pull_request_comment")
		h.Set("X-Gitea-Event-Type", "pull_request_review_comment")
		h.Set("X-Gitea-Delivery", "delivery-77")
	default:
		body = `{"action":"created","comment":{"author_association":"MEMBER","user":{"login":"dev"}},"pull_request":{"head":{"ref":"` + branch + `","repo":{"full_name":"acme/app"}},"base":{"repo":{"full_name":"acme/app"}}}}`
		h.Set("X-GitHub-Event", "pull_request_review_comment")
		h.Set("X-GitHub-Delivery", "delivery-77")
	}
	sign(kind, body, secret, h)
	return body, h
}

// postHook posts a webhook's body with its headers to url and returns the
// status of the answer.
func postHook(t *testing.T, url, body string, h http.Header) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sign sets the signature of a GitHub or Gitea webhook's body.
func sign(kind, body, secret string, h http.Header) {
	if kind == "gitlab" {
		return // its token is the secret itself
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	sum := hex.EncodeToString(mac.Sum(nil))
	if kind == "gitea" {
		h.Set("X-Gitea-Signature", sum)
	} else {
		h.Set("X-Hub-Signature-256", "sha256="+sum)
	}
}

// fromStranger is a review webhook's body as written by someone who may
// not push to the repository: GitHub's mallory is a member of the
// organisation (MEMBER) without write access here; GitLab's user 9 and
// Gitea's mallory have no access on the fake forge.
func fromStranger(kind, body string) string {
	who := map[string][2]string{
		"github": {`"login":"dev"`, `"login":"mallory"`},
		"gitlab": {`"id":7,"username":"dev"`, `"id":9,"username":"mallory"`},
		"gitea":  {`"login":"dev"`, `"login":"mallory"`},
	}[kind]
	return strings.Replace(body, who[0], who[1], 1)
}

// Without a delivery id, webhooks are still told apart by their content.
func TestReviewEventDeliveryIDs(t *testing.T) {
	t.Parallel()
	body, h := reviewHook("github", "bot/x", "s")
	// GitHub's delivery header is not signed: the handler identifies the
	// event by its body.
	if branch, id, author := reviewEvent("github", h, []byte(body)); branch != "bot/x" || id != "" || author != "dev" {
		t.Errorf("github: %q %q %q", branch, id, author)
	}
	h.Set("X-GitHub-Event", "push")
	if branch, _, _ := reviewEvent("github", h, []byte(body)); branch != "" {
		t.Errorf("a push event was taken for a review: %q", branch)
	}
	// A stranger's comment on GitHub (anyone may comment on a public
	// repository) starts nothing; a collaborator's review does.
	h.Set("X-GitHub-Event", "pull_request_review_comment")
	for assoc, want := range map[string]string{"NONE": "", "CONTRIBUTOR": "", "FIRST_TIME_CONTRIBUTOR": "", "COLLABORATOR": "bot/x", "OWNER": "bot/x"} {
		b := strings.Replace(body, `"author_association":"MEMBER"`, `"author_association":"`+assoc+`"`, 1)
		if branch, _, _ := reviewEvent("github", h, []byte(b)); branch != want {
			t.Errorf("github comment by %s: branch %q, want %q", assoc, branch, want)
		}
	}
	review := strings.Replace(body, `"comment":`, `"review":`, 1)
	review = strings.Replace(review, `"action":"created"`, `"action":"submitted"`, 1)
	h.Set("X-GitHub-Event", "pull_request_review")
	if branch, _, _ := reviewEvent("github", h, []byte(review)); branch != "bot/x" {
		t.Errorf("github review by a member: branch %q, want bot/x", branch)
	}
	gl, glh := reviewHook("gitlab", "bot/y", "s")
	if branch, id, author := reviewEvent("gitlab", glh, []byte(gl)); branch != "bot/y" || id != "uuid-77/77" || author != "7" {
		t.Errorf("gitlab: %q %q %q", branch, id, author)
	}
	if !verifyWebhook("gitlab", "s", glh, []byte(gl)) || verifyWebhook("gitlab", "other", glh, []byte(gl)) {
		t.Error("gitlab token check")
	}
	// A request from a fork, its branch named like a thread's, is not the
	// thread's review.
	for _, kind := range []string{"github", "gitlab", "gitea"} {
		b, h := reviewHook(kind, "bot/x", "s")
		fork := strings.Replace(b, `"head":{"ref":"bot/x","repo":{"full_name":"acme/app"}}`, `"head":{"ref":"bot/x","repo":{"full_name":"mallory/app"}}`, 1)
		fork = strings.Replace(fork, `"source_project_id":5`, `"source_project_id":9`, 1)
		if fork == b {
			t.Fatalf("%s: no fork made of %s", kind, b)
		}
		if branch, _, _ := reviewEvent(kind, h, []byte(fork)); branch != "" {
			t.Errorf("%s: a fork's request was taken for the thread's branch %q", kind, branch)
		}
		if branch, _, _ := reviewEvent(kind, h, []byte(b)); branch != "bot/x" {
			t.Errorf("%s: the project's own request: %q", kind, branch)
		}
	}
	// Gitea names a review in its event's fine type: a review comment,
	// an approval and a rejection are reviews; a plain comment on the pull
	// request, and the coarse event alone, are not.
	gb, gh := reviewHook("gitea", "bot/z", "s")
	for typ, want := range map[string]string{"pull_request_review_comment": "bot/z", "pull_request_review_approved": "bot/z",
		"pull_request_review_rejected": "bot/z", "pull_request_comment": "", "issue_comment": "", "": ""} {
		h := gh.Clone()
		h.Set("X-Gitea-Event-Type", typ)
		if typ == "" {
			h.Del("X-Gitea-Event-Type")
			h.Set("X-Gitea-Event", "pull_request_review_comment")
		}
		if branch, _, _ := reviewEvent("gitea", h, []byte(gb)); branch != want {
			t.Errorf("gitea %q: branch %q, want %q", typ, branch, want)
		}
		fj := http.Header{"X-Forgejo-Event-Type": {typ}}
		if branch, _, _ := reviewEvent("gitea", fj, []byte(gb)); branch != want {
			t.Errorf("forgejo %q: branch %q, want %q", typ, branch, want)
		}
	}
	gt, gth := reviewHook("gitea", "bot/z", "s")
	if !verifyWebhook("gitea", "s", gth, []byte(gt)) || verifyWebhook("gitea", "s", gth, []byte(gt+" ")) {
		t.Error("gitea signature check: a changed body must not pass")
	}
}

// A review a forge's webhook brings waits for the run going on, as a
// follow-up, even where people's messages steer it (busy_mode: steer): the
// reviewer did not see what the run is doing.
func TestReviewWebhookDuringARunIsAFollowUp(t *testing.T) {
	t.Parallel()
	const secret, token = "hook-secret-0123456789", "forge-token-0001"
	fake := forgefake.New(t, "github", "acme/app", token)
	e := newSlackFakes(t)
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	url := srv.ServeAt(t, e.remote, "acme/app")
	e.cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: url, DefaultBranch: "main", Token: token,
		Forge: "github", APIURL: fake.APIURL(), PullRequests: config.PullRequestsDraft, WebhookSecret: secret}}
	e.cfg.HTTP.Listen = "127.0.0.1:0"
	e.cfg.Agent.BusyMode = config.BusySteer
	e.start()
	release := make(chan struct{})
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		switch {
		case r.Messages[len(r.Messages)-1].Role == "tool":
			return llmfake.TextReply("done")
		case n.Add(1) == 1:
			return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"file1.txt","content":"v1\n"}`})
		case strings.Contains(lastUserText(r), "a long one"):
			return llmfake.Stream(llmfake.Content("working on it"), llmfake.Await(release), llmfake.Content(" done"), llmfake.Finish("stop"), llmfake.Done())
		}
		return llmfake.TextReply("ok: " + lastUserText(r))
	})
	fake.SetAccess("dev", 30)
	root := e.slack.Mention(slackChan, aliceID, "add the first file", "")
	e.waitText(slackChan, root, "|pull request #1>")
	fake.AddComment(1, forgefake.Comment{ID: 5, Author: "reviewer", Body: "rename file1", Path: "file1.txt", Line: 1, Review: true})

	before := len(e.llm.Requests())
	e.slack.UserMessage(slackChan, aliceID, "now a long one", root)
	e.waitRequests(before + 1)
	body, header := reviewHook("github", fake.PRs()[0].Head, secret)
	if code := postHook(t, "http://"+e.m.HTTPAddr()+"/hooks/app", body, header); code != http.StatusAccepted {
		t.Fatalf("the webhook got %d", code)
	}
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Queue: 0 steer, 1 follow-up")
	close(release)
	e.waitFor("the review's run", func() bool {
		for _, r := range e.llm.Requests()[before+1:] {
			if strings.Contains(lastUserText(r), "rename file1") {
				return true
			}
		}
		return false
	})
}

// reviewCalls is a reviewer that counts what reaches the thread.
type reviewCalls struct{ n atomic.Int32 }

func (r *reviewCalls) ForgeReview(context.Context, string, string, string) (bool, error) {
	r.n.Add(1)
	return true, nil
}

// A GitLab or Gitea webhook does not say whether its author may push: without
// the repository's token to ask the forge, a signed review comment starts
// nothing (anyone may comment on a public project).
func TestReviewWebhookWithoutATokenStartsNothing(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"github", "gitlab", "gitea"} {
		t.Run(kind, func(t *testing.T) {
			const secret = "hook-secret-0123456789"
			cfg := &config.Config{}
			cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: "https://forge.test/acme/app.git", Forge: kind,
				APIURL: "https://forge.test/api", WebhookSecret: secret}}
			var calls reviewCalls
			srv := httptest.NewServer(webhookHandler(cfg, &calls, slog.New(slog.DiscardHandler)))
			defer srv.Close()
			body, header := reviewHook(kind, "bot/slack-x", secret)
			if code := postHook(t, srv.URL+"/hooks/app", body, header); code != http.StatusNoContent || calls.n.Load() != 0 {
				t.Fatalf("a review webhook without a token got %d and reached the thread %d times, want 204 and none", code, calls.n.Load())
			}
		})
	}
}

// When the forge cannot say whether a comment's author may push (its API
// fails), the webhook is answered 503 so the forge delivers it again, and
// nothing reaches the thread until the answer is known.
func TestReviewWebhookWaitsForTheForgesAnswerAboutTheAuthor(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"github", "gitlab", "gitea"} {
		t.Run(kind, func(t *testing.T) {
			const secret, token = "hook-secret-0123456789", "forge-token-0001"
			fake := forgefake.New(t, kind, "acme/app", token)
			fake.SetAccess("7", 30)
			fake.SetAccess("dev", 30)
			cfg := &config.Config{}
			cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: "https://forge.test/acme/app.git", Forge: kind,
				APIURL: fake.APIURL(), Token: token, WebhookSecret: secret}}
			var calls reviewCalls
			srv := httptest.NewServer(webhookHandler(cfg, &calls, slog.New(slog.DiscardHandler)))
			defer srv.Close()
			body, header := reviewHook(kind, "bot/slack-x", secret)
			fake.RateLimit(true)
			if code := postHook(t, srv.URL+"/hooks/app", body, header); code != http.StatusServiceUnavailable || calls.n.Load() != 0 {
				t.Fatalf("with the forge failing: %d, %d reviews; want 503 and none", code, calls.n.Load())
			}
			fake.RateLimit(false)
			if code := postHook(t, srv.URL+"/hooks/app", body, header); code != http.StatusAccepted || calls.n.Load() != 1 {
				t.Fatalf("delivered again: %d, %d reviews; want 202 and one", code, calls.n.Load())
			}
		})
	}
}
