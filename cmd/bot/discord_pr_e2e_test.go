package main

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A Discord thread's pull request: opened at the first push with a body
// that links the thread (Discord's link to the thread channel), updated at
// the next, and its link on the status message as a link button next to
// Diff; a click on Diff from someone without the role is refused.
func TestDiscordPullRequestLinksTheThread(t *testing.T) {
	t.Parallel()
	const token = "forge-token-0002"
	fake := forgefake.New(t, "gitlab", "acme/app", token)
	e := newDiscordEnv(t, func(cfg *config.Config, e *discordEnv) {
		srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
		url := srv.ServeAt(t, e.remote, "acme/app")
		cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: url, DefaultBranch: "main", Token: token,
			Forge: "gitlab", APIURL: fake.APIURL(), PullRequests: config.PullRequestsDraft}}
	})
	n := 0
	e.scripts.add("dpr", func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("wrote it")
		}
		n++
		return llmfake.ToolCallReply(llmfake.Call{ID: "w" + itoa(n), Name: "write", Args: `{"path":"f` + itoa(n) + `.txt","content":"x\n"}`})
	})
	th, _ := e.open("dpr: add a file")
	e.waitBot(th, "Opened draft [merge request !1]")
	prs := fake.PRs()
	if len(prs) != 1 || prs[0].Head != discordBranch(th) || prs[0].Base != "main" || !prs[0].Draft {
		t.Fatalf("the forge holds %+v, want a draft from %s into main", prs, discordBranch(th))
	}
	link := "https://discord.com/channels/" + dGuild + "/" + th
	if !strings.Contains(prs[0].Body, "from a Discord thread: "+link+"\n") || !strings.Contains(prs[0].Body, "- `f1.txt` (+1 −0)") {
		t.Errorf("the description does not link the thread %s and list its file:\n%s", link, prs[0].Body)
	}
	status := e.statusMessage(th)
	bs := e.waitButtons(status.ID, "diff", "https://forge.test/acme/app/-/merge_requests/1")
	if bs[1].Style != 5 || bs[1].Label != "Open PR" {
		t.Errorf("Open PR = %+v, want a link button (style 5)", bs[1])
	}

	e.fake.UserMessage(th, dAlice, "dpr: one more")
	e.waitBot(th, "Updated [merge request !1]")
	if prs := fake.PRs(); len(prs) != 1 || prs[0].Updates != 1 || !strings.Contains(prs[0].Body, "`f2.txt`") {
		t.Errorf("after the second push the forge holds %+v", prs)
	}
}
