package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/storage"
)

// With workspace.repos[].push: approve a run's commits wait in the workspace
// for the Push button (or !push): nothing reaches the remote and no pull
// request opens before, a click by someone who neither asked nor approves is
// refused privately, and the requester's click pushes once, also after a
// restart in between.

// botBranches are the remote's branches the bot pushed.
func botBranches(t *testing.T, r *gitremote.Repo) []string {
	var out []string
	for _, b := range r.Branches(t) {
		if strings.HasPrefix(b, "bot/") {
			out = append(out, b)
		}
	}
	return out
}

// threadPushes reads the pushes storage recorded for the only thread.
func threadPushes(t *testing.T, st storage.Store) []storage.Push {
	t.Helper()
	ctx := context.Background()
	ths, err := st.ThreadSummaries(ctx)
	if err != nil || len(ths) != 1 {
		t.Fatalf("threads: %+v, %v; want one", ths, err)
	}
	ps, err := st.ThreadPushes(ctx, ths[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestSlackPushApprovalWaitsForTheRequestersClickAcrossARestart(t *testing.T) {
	const mallory = "U0MALLORY"
	const token = "forge-token-0001"
	fake := forgefake.New(t, "github", "acme/app", token)
	e := newSlackFakes(t)
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	url := srv.ServeAt(t, e.remote, "acme/app")
	e.cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: url, DefaultBranch: "main", Token: token,
		Forge: "github", APIURL: fake.APIURL(), PullRequests: config.PullRequestsDraft,
		Push: config.PushApprove, Approvers: []string{"U0CAROL"}}}
	e.start()
	e.slack.AddUser(slackfake.User{ID: mallory, Name: "mallory", RealName: "Mallory"})
	e.slack.ChannelJoin(slackChan, mallory)
	writes(e)

	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "⏸️ Not pushed yet: 1 commit on `bot/slack-")
	status := e.statusTS(root)
	bs := e.waitButtons(status, "push", "diff")
	if bs[0].Text.Text != "Push" || bs[0].Value != "push" {
		t.Errorf("Push = %+v, want a button that runs !push", bs[0])
	}
	if got := e.threadText(slackChan, root); !strings.Contains(got, "`file1.txt` +1 −0") || strings.Contains(got, "⬆️ pushed") {
		t.Errorf("the thread, want the diff stat and no push:\n%s", got)
	}
	if b := botBranches(t, e.remote); len(b) != 0 {
		t.Errorf("the remote got %v before anyone said Push", b)
	}

	// Mallory may use the bot but neither asked for this work nor approves.
	click := e.slack.Click(slackChan, status, mallory, "push")
	if ack := e.waitClickAck(click); ack.Latency >= 3*time.Second {
		t.Errorf("mallory's click acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitFor("the refusal note", func() bool { return len(e.slack.Ephemerals()) == 1 })
	if eph := e.slack.Ephemerals()[0]; eph.User != mallory || eph.ThreadTS != root || !eph.Visible || !strings.Contains(eph.Text, "only the person who asked") {
		t.Errorf("note = %+v, want a visible note to %s in the thread", eph, mallory)
	}

	// The work waits across a restart; the status message keeps its button.
	e.stop()
	if b := botBranches(t, e.remote); len(b) != 0 {
		t.Errorf("the remote got %v without a Push", b)
	}
	e.start()
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Last push: none yet")
	if b := botBranches(t, e.remote); len(b) != 0 || len(fake.PRs()) != 0 || slices.ContainsFunc(fake.Calls(), func(c string) bool { return strings.HasPrefix(c, "POST") }) {
		t.Errorf("after the restart the remote has %v and the forge %v, want nothing before Push", b, fake.Calls())
	}

	click = e.slack.Click(slackChan, status, aliceID, "push")
	if ack := e.waitClickAck(click); ack.Latency >= 3*time.Second {
		t.Errorf("alice's click acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitText(slackChan, root, "|pull request #1>")
	text := e.threadText(slackChan, root)
	if !strings.Contains(text, "⬆️ pushed `bot/slack-") || !strings.Contains(text, "Approved by `alice`") {
		t.Errorf("the push notice, want who approved it:\n%s", text)
	}
	branches := botBranches(t, e.remote)
	if len(branches) != 1 || e.remote.Files(t, branches[0])["file1.txt"] != "v1" {
		t.Fatalf("remote branches %v, want the thread's with file1.txt (%q)", branches, e.remote.Files(t, branches[0]))
	}

	// Pushed once: a second click and !push say there is nothing to push.
	e.waitClickAck(e.slack.Click(slackChan, status, aliceID, "push"))
	e.waitText(slackChan, root, "Nothing to push")
	e.slack.UserMessage(slackChan, aliceID, "!push", root)
	e.waitFor("the second answer", func() bool { return strings.Count(e.threadText(slackChan, root), "Nothing to push") == 2 })
	if n := strings.Count(e.threadText(slackChan, root), "⬆️ pushed"); n != 1 {
		t.Errorf("pushed %d times, want once", n)
	}
	if n := len(fake.PRs()); n != 1 {
		t.Errorf("pull requests %d, want 1", n)
	}
	ps := threadPushes(t, e.m.DB)
	if len(ps) != 1 || ps[0].Result != storage.PushOK || ps[0].Detail != "approved by alice" {
		t.Errorf("recorded pushes %+v, want one approved by alice", ps)
	}
	if n := len(e.slack.Ephemerals()); n != 1 {
		t.Errorf("notes = %d, want the one refusal", n)
	}
}
