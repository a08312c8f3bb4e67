package main

import (
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
	for _, kind := range []string{"github", "gitlab", "gitea"} {
		t.Run(kind, func(t *testing.T) {
			e, fake := prEnv(t, kind)
			writes(e)
			root := e.slack.Mention(slackChan, aliceID, "add the first file", "")
			e.waitText(slackChan, root, "🔀 Opened draft <https://forge.test/acme/app/")
			e.waitText(slackChan, root, "|pull request #1>")
			prs := fake.PRs()
			if len(prs) != 1 || !strings.HasPrefix(prs[0].Head, "bot/slack-") || prs[0].Base != "main" || !prs[0].Draft {
				t.Fatalf("the forge holds %+v", prs)
			}
			if !strings.Contains(prs[0].Body, "https://fake.slack.test/archives/") || !strings.Contains(prs[0].Body, "add the first file") {
				t.Errorf("the description does not link the thread and the request:\n%s", prs[0].Body)
			}

			e.slack.UserMessage(slackChan, aliceID, "and a second one", root)
			e.waitText(slackChan, root, "🔀 Updated <")
			prs = fake.PRs()
			if len(prs) != 1 || prs[0].Updates != 1 || !strings.Contains(prs[0].Body, "and a second one") {
				t.Fatalf("after the second push the forge holds %+v", prs)
			}

			fake.AddComment(1, forgefake.Comment{ID: 41, Author: "reviewer", Body: "please shout in file1", Path: "file1.txt", Line: 1, Review: true})
			before := len(e.llm.Requests())
			e.slack.UserMessage(slackChan, aliceID, "!review", root)
			e.waitFor("the fix's push", func() bool { return strings.Count(e.threadText(slackChan, root), "🔀 Updated <") == 2 })
			var got string
			for _, r := range e.llm.Requests()[before:] {
				got += lastUserText(r)
			}
			if !strings.Contains(got, "please shout in file1") || !strings.Contains(got, "reviewer on file1.txt line 1") {
				t.Fatalf("the model did not get the review comment with its place:\n%s", got)
			}
			if prs := fake.PRs(); prs[0].Updates != 2 {
				t.Errorf("the fix did not update the pull request: %+v", prs[0])
			}
			// Nothing new: said in the thread, no run.
			n := len(e.llm.Requests())
			e.slack.UserMessage(slackChan, aliceID, "!review", root)
			e.waitText(slackChan, root, "No new review comments on <")
			e.slack.UserMessage(slackChan, aliceID, "!pr", root)
			e.waitFor("the !pr answer", func() bool { return strings.Count(e.threadText(slackChan, root), "|pull request #1>") == 4 })
			if len(e.llm.Requests()) != n {
				t.Errorf("!review without news or !pr asked the model")
			}
		})
	}
}

// A forge that says no gets one plain note, not one per push.
func TestSlackPullRequestRefusedIsSaidOnce(t *testing.T) {
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
