package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/ops/opstest"
	"github.com/threadsmith/threadsmith/storage"
)

// Plan mode through Main: a plan run is offered no tool that writes and
// changes nothing on disk however the model tries; Approve by someone who
// neither asked nor approves is refused privately; Revise plans again with
// the feedback; the requester's Approve runs the work and pushes it; the
// session record lists the decisions. Every click is acknowledged within 3 s.

// planner is the model of these tests: a plan run tries to write anyway
// (with the write tool it was not offered and with bash) and then answers
// with a plan; the approved run writes file1.txt.
type planner struct {
	mu        sync.Mutex
	planTools [][]string // the tools of each plan request
	prompts   []string   // the last user text of each plan run's first request
}

func (p *planner) handle(r llmfake.Request) llmfake.Response {
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	planning := !slices.Contains(names, "write")
	last := r.Messages[len(r.Messages)-1]
	p.mu.Lock()
	defer p.mu.Unlock()
	if planning {
		p.planTools = append(p.planTools, names)
	}
	switch {
	case last.Role == "tool" && planning:
		return llmfake.TextReply("PLAN: write file1.txt with v1")
	case last.Role == "tool":
		return llmfake.TextReply("wrote file1.txt")
	case planning:
		p.prompts = append(p.prompts, last.Content)
		return llmfake.ToolCallReply(
			llmfake.Call{ID: "p1", Name: "write", Args: `{"path":"file1.txt","content":"planted\n"}`},
			llmfake.Call{ID: "p2", Name: "bash", Args: jsonArgs(map[string]string{"command": "echo planted > planted.txt; echo more >> README.md; echo tried"})},
		)
	}
	return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"file1.txt","content":"v1\n"}`})
}

func (p *planner) snapshot() (tools [][]string, prompts []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.planTools), slices.Clone(p.prompts)
}

// onlyThread is the store's only thread.
func onlyThread(t *testing.T, st storage.Store) storage.Thread {
	t.Helper()
	ctx := context.Background()
	ths, err := st.ThreadSummaries(ctx)
	if err != nil || len(ths) != 1 {
		t.Fatalf("threads: %+v, %v; want one", ths, err)
	}
	th, err := st.ThreadByID(ctx, ths[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// cleanWorktree fails t when the thread's worktree has a change or a commit
// the remote lacks.
func cleanWorktree(t *testing.T, th storage.Thread) {
	t.Helper()
	out, err := exec.Command("git", "-C", th.WorkspacePath, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("the worktree changed while planning: %s %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(th.WorkspacePath, "README.md")); string(b) != "# app\n" {
		t.Errorf("README.md = %q after planning", b)
	}
	out, err = exec.Command("git", "-C", th.WorkspacePath, "rev-list", "--count", "HEAD", "--not", "--remotes").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("commits made while planning: %q %v", out, err)
	}
}

func decisionList(t *testing.T, st storage.Store, threadID int64) []string {
	t.Helper()
	ds, err := st.ThreadDecisions(context.Background(), threadID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Kind)+":"+d.UserName)
	}
	return out
}

// planButtonsTS waits until one message of the thread, and only one, carries
// the plan's buttons, other than the message old (an earlier plan's, ""
// for none), and returns its ts.
func (e *slackEnv) planButtonsTS(root, old string) string {
	e.tb.Helper()
	var found []string
	e.waitFor("one message with the plan's buttons", func() bool {
		found = nil
		for _, m := range e.botMessages(slackChan, root) {
			if slices.Equal(buttonIDs(e.slack.Buttons(slackChan, m.TS)), []string{"approve", "revise", "cancel"}) {
				found = append(found, m.TS)
			}
		}
		return len(found) == 1 && found[0] != old
	}, func() string { return "messages with them: " + strings.Join(found, ",") })
	return found[0]
}

func TestSlackPlanFirstThenReviseAndApprove(t *testing.T) {
	t.Parallel()
	const mallory = "U0MALLORY"
	e := newSlackFakes(t, withConfig(func(c *config.Config) {
		c.Agent.Approval = config.ApprovalPlan
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = "e2e-session-key-0123456789abcdef0123"
	}))
	p := &planner{}
	e.llm.Handle(p.handle)
	e.start()
	e.slack.AddUser(slackfake.User{ID: mallory, Name: "mallory", RealName: "Mallory"})
	e.slack.ChannelJoin(slackChan, mallory)

	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "📝 Plan ready")
	plan := e.planButtonsTS(root, "")
	th := onlyThread(t, e.m.DB)
	cleanWorktree(t, th)
	if b := botBranches(t, e.remote); len(b) != 0 {
		t.Errorf("the plan run pushed %v", b)
	}

	// Mallory may use the bot but neither asked nor approves.
	click := e.slack.Click(slackChan, plan, mallory, "approve")
	if ack := e.waitClickAck(click); ack.Latency >= 3*time.Second {
		t.Errorf("mallory's click acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitFor("the refusal note", func() bool { return len(e.slack.Ephemerals()) == 1 })
	if eph := e.slack.Ephemerals()[0]; eph.User != mallory || !strings.Contains(eph.Text, "only the person who asked for this plan") {
		t.Errorf("note = %+v, want a refusal to %s", eph, mallory)
	}

	click = e.slack.Click(slackChan, plan, aliceID, "revise")
	if ack := e.waitClickAck(click); ack.Latency >= 3*time.Second {
		t.Errorf("alice's Revise acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitText(slackChan, root, "asked for a revision")
	e.slack.UserMessage(slackChan, aliceID, "name it file1.txt please", root)
	e.waitFor("the second plan", func() bool { return strings.Count(e.threadText(slackChan, root), "📝 Plan ready") == 2 })
	second := e.planButtonsTS(root, plan)
	tools, prompts := p.snapshot()
	for _, ts := range tools {
		if !slices.Equal(ts, []string{"read", "bash", "grep", "find", "ls"}) {
			t.Errorf("a plan request offered %v", ts)
		}
	}
	if len(prompts) != 2 || !strings.Contains(prompts[0], "Request:\nadd a file") || !strings.Contains(prompts[1], "Feedback:\nname it file1.txt please") {
		t.Errorf("plan prompts %q, want the request, then the feedback", prompts)
	}
	cleanWorktree(t, th)

	click = e.slack.Click(slackChan, second, aliceID, "approve")
	if ack := e.waitClickAck(click); ack.Latency >= 3*time.Second {
		t.Errorf("alice's Approve acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	branches := botBranches(t, e.remote)
	if len(branches) != 1 || e.remote.Files(t, branches[0])["file1.txt"] != "v1" {
		t.Fatalf("remote branches %v, want the thread's with file1.txt = v1", branches)
	}
	if _, ok := e.remote.Files(t, branches[0])["planted.txt"]; ok {
		t.Error("what the plan run tried to write reached the remote")
	}
	if got, want := decisionList(t, e.m.DB, th.ID), []string{"plan:alice", "revise:alice", "plan:alice", "approve:alice"}; !slices.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
	if n := len(e.slack.Ephemerals()); n != 1 {
		t.Errorf("notes = %d, want the one refusal", n)
	}

	// The session page shows who decided what.
	e.waitText(slackChan, root, "|full session>")
	var link []string
	for _, m := range e.botMessages(slackChan, root) {
		if l := pageLinkRe.FindStringSubmatch(m.Text); l != nil {
			link = l
		}
	}
	if link == nil {
		t.Fatalf("no session page link:\n%s", e.transcript(slackChan, root))
	}
	code, body := opstest.Get(t, "http://"+e.m.HTTPAddr()+link[1])
	if code != http.StatusOK {
		t.Fatalf("GET the page = %d\n%s", code, body)
	}
	for _, want := range []string{
		"plan offered for approval, requested by <strong>alice</strong>: <q>add a file</q>",
		"revision asked for by <strong>alice</strong>",
		"plan approved by <strong>alice</strong>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestDiscordPlanApprovedByTheRequester(t *testing.T) {
	t.Parallel()
	e := newDiscordEnv(t, func(c *config.Config, _ *discordEnv) {
		c.Discord.AllowedRoles = nil // bob may use the bot: only the decision is not his
		c.Workspace.Repos[0].Approval = config.ApprovalPlan
	})
	names := map[string]bool{}
	for _, c := range e.fake.Commands(dGuild) {
		names[c.Name] = true
	}
	for _, n := range []string{"plan", "approve", "revise", "cancel"} {
		if !names[n] {
			t.Errorf("/%s is not registered", n)
		}
	}
	p := &planner{}
	e.scripts.add("plan1", p.handle)
	th, _ := e.open("plan1: add a file")
	branch := discordBranch(th)
	e.waitBot(th, "📝 Plan ready")
	var status discordfake.Message
	if err := e.fake.WaitFor(e.ctx, func() bool {
		for _, m := range e.fake.Messages(th) {
			if m.AuthorBot && slices.Equal(discordButtonIDs(e.fake.Buttons(m.ID)), []string{"approve", "revise", "cancel"}) {
				status = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no plan buttons: %v\n%s", err, e.transcript(th))
	}
	rec := onlyThread(t, e.m.DB)
	cleanWorktree(t, rec)
	if slices.Contains(e.remote.Branches(t), branch) {
		t.Fatalf("the plan run pushed %s", branch)
	}

	id := e.fake.Click(th, status.ID, dBob, "approve")
	ia, err := e.fake.WaitForInteractionResponse(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if ia.Latency >= 3*time.Second {
		t.Errorf("bob's click answered after %v, want within 3s", ia.Latency)
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
	if note.Flags&64 == 0 || !strings.Contains(note.Content, "only the person who asked for this plan") {
		t.Errorf("bob's note = %+v, want an ephemeral refusal", note)
	}

	id = e.fake.Click(th, status.ID, dAlice, "approve")
	if ia, err := e.fake.WaitForInteractionResponse(e.ctx, id); err != nil || ia.Latency >= 3*time.Second {
		t.Errorf("alice's click answered after %v (%v), want within 3s", ia.Latency, err)
	}
	e.waitBot(th, "⬆️ pushed `"+branch+"`")
	if got := e.remote.Files(t, branch)["file1.txt"]; got != "v1" {
		t.Errorf("file1.txt on the remote = %q", got)
	}
	if tools, _ := p.snapshot(); len(tools) == 0 || slices.ContainsFunc(tools, func(ts []string) bool { return slices.Contains(ts, "write") || slices.Contains(ts, "edit") }) {
		t.Errorf("plan requests offered %v", tools)
	}
	if got, want := decisionList(t, e.m.DB, rec.ID), []string{"plan:" + discordfake.AliceName, "approve:" + discordfake.AliceName}; !slices.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
}

// The plan waiting survives a restart: Approve on the old message carries it
// out once the bot is back.
func TestSlackPlanApprovedAfterARestart(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t)
	p := &planner{}
	e.llm.Handle(p.handle)
	e.start()
	root := e.slack.Mention(slackChan, aliceID, "!plan add a file", "")
	e.waitText(slackChan, root, "📝 Plan ready")
	plan := e.planButtonsTS(root, "")
	e.stop()
	e.start()

	click := e.slack.Click(slackChan, plan, aliceID, "approve")
	if ack := e.waitClickAck(click); ack.Latency >= 3*time.Second {
		t.Errorf("the click acknowledged after %s, want within 3s", ack.Latency)
	}
	e.waitText(slackChan, root, "✅ Plan approved by `alice`")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	branches := botBranches(t, e.remote)
	if len(branches) != 1 || e.remote.Files(t, branches[0])["file1.txt"] != "v1" {
		t.Fatalf("remote branches %v, want the thread's with file1.txt = v1", branches)
	}
	th := onlyThread(t, e.m.DB)
	if got, want := decisionList(t, e.m.DB, th.ID), []string{"plan:alice", "approve:alice"}; !slices.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
}
