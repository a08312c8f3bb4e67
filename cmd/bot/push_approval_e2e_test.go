package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
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

func TestDiscordPushApprovalWaitsForTheRequestersClickAcrossARestart(t *testing.T) {
	var cfg *config.Config
	e := newDiscordEnv(t, func(c *config.Config, _ *discordEnv) {
		c.Discord.AllowedRoles = nil // bob may use the bot: only the push is not his
		c.Workspace.Repos[0].Push = config.PushApprove
		c.Workspace.Repos[0].Approvers = []string{"1000000000000000099"}
		cfg = c
	})
	e.scripts.add("appr", func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("wrote notes")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"notes.txt","content":"one\ntwo\n"}`})
	})
	th, _ := e.open("appr: write notes")
	branch := discordBranch(th)
	e.waitBot(th, "⏸️ Not pushed yet: 1 commit on `"+branch+"`")
	status := e.statusMessage(th)
	e.waitButtons(status.ID, "push", "diff")
	if slices.Contains(e.remote.Branches(t), branch) || e.countBot(th, "⬆️ pushed") != 0 {
		t.Fatalf("pushed before anyone said Push: remote %v", e.remote.Branches(t))
	}

	// Bob neither asked nor approves: a private note, no push.
	id := e.fake.Click(th, status.ID, dBob, "push")
	ia, err := e.fake.WaitForInteractionResponse(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if ia.ResponseType != discordfake.ResponseDeferredMessageUpdate || ia.Latency >= 3*time.Second {
		t.Errorf("bob's click answered with type %d after %v, want a deferred update within 3s", ia.ResponseType, ia.Latency)
	}
	var note discordfake.Message
	if err := e.fake.WaitFor(e.ctx, func() bool {
		ia, _ = e.fake.Interaction(id)
		if len(ia.Followups) == 1 {
			note = ia.Followups[0]
			return true
		}
		return false
	}); err != nil {
		t.Fatalf("no private note for bob: %+v", ia)
	}
	if note.Flags&64 == 0 || !strings.Contains(note.Content, "only the person who asked") {
		t.Errorf("bob's note = %+v, want an ephemeral refusal", note)
	}

	// Restart: the work still waits, and the old message's Push still works.
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(e.remote.Branches(t), branch) {
		t.Fatalf("pushed at shutdown without a Push")
	}
	m := NewMain()
	m.Config = cfg
	m.Logger = e.m.Logger
	if err := m.Run(e.ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := e.fake.WaitForReady(e.ctx, 2); err != nil {
		t.Fatal(err)
	}
	e.fake.UserMessage(th, dAlice, "!status")
	e.waitBot(th, "Last push: none yet")
	if slices.Contains(e.remote.Branches(t), branch) {
		t.Fatalf("pushed at the restart without a Push")
	}

	id = e.fake.Click(th, status.ID, dAlice, "push")
	if ia, err := e.fake.WaitForInteractionResponse(e.ctx, id); err != nil || ia.Latency >= 3*time.Second {
		t.Errorf("alice's click answered after %v (%v), want within 3s", ia.Latency, err)
	}
	e.waitBot(th, "⬆️ pushed `"+branch+"`")
	if got := e.remote.Files(t, branch)["notes.txt"]; got != "one\ntwo" && got != "one\ntwo\n" {
		t.Errorf("notes.txt on the remote = %q", got)
	}
	e.fake.UserMessage(th, dAlice, "!push")
	e.waitBot(th, "Nothing to push")
	if n := e.countBot(th, "⬆️ pushed"); n != 1 {
		t.Errorf("pushed %d times, want once", n)
	}
	if ps := threadPushes(t, m.DB); len(ps) != 1 || ps[0].Detail != "approved by "+discordfake.AliceName {
		t.Errorf("recorded pushes %+v, want one approved by %s", ps, discordfake.AliceName)
	}
}

// A process cut off right after committing a `push: approve` run does not
// push the commit at the next start, as an interrupted run's work otherwise is: the
// thread is told it waits, and the requester's !push pushes it.
func TestCrashAfterCommitWithPushApprovalWaitsForPush(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bot binary")
	}
	bin := buildBot(t)
	e := newSlackFakes(t)
	path := writeSlackConfig(t, e, 3*time.Second)
	yaml, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	approve := strings.Replace(string(yaml), "default_branch: main}", "default_branch: main, push: approve}", 1)
	if approve == string(yaml) {
		t.Fatalf("no repo line to change in:\n%s", yaml)
	}
	if err := os.WriteFile(path, []byte(approve), 0o600); err != nil {
		t.Fatal(err)
	}
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return llmfake.TextReply("wrote f.txt")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"f.txt","content":"from the run\n"}`})
	})
	t.Setenv(crashpoint.EnvVar, crashpoint.Committed)
	bot := startBot(t, e, bin, path, 1)
	os.Unsetenv(crashpoint.EnvVar)
	root := e.slack.Mention(slackChan, aliceID, "please write f.txt", "")
	if err := bot.wait(60 * time.Second); err == nil {
		t.Fatalf("the bot did not cut itself after the commit\n%s", bot.stderr)
	}

	startBot(t, e, bin, path, 2)
	e.waitText(slackChan, root, "interrupted")
	e.waitText(slackChan, root, "⏸️ Not pushed yet: 1 commit on `bot/slack-")
	if b := botBranches(t, e.remote); len(b) != 0 {
		t.Fatalf("the interrupted run's commit was pushed at the start without a Push: %v", b)
	}
	e.slack.UserMessage(slackChan, aliceID, "!push", root)
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	b := botBranches(t, e.remote)
	if len(b) != 1 || e.remote.Files(t, b[0])["f.txt"] != "from the run" {
		t.Errorf("remote branches %v, want the thread's with f.txt", b)
	}
}
