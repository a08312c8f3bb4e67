package main

import (
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// The buttons of a run's status message, clicked in the fake Slack: a
// block_actions interaction over Socket Mode or the HTTP endpoint, which the
// bot takes as the command the button stands for.

// buttonIDs are the action ids of a message's buttons.
func buttonIDs(bs []slackfake.Button) []string {
	var ids []string
	for _, b := range bs {
		ids = append(ids, b.ActionID)
	}
	return ids
}

// statusTS is the ts of the thread's first bot message: the run's status.
func (e *slackEnv) statusTS(root string) string {
	e.tb.Helper()
	var ts string
	e.waitFor("the status message", func() bool {
		if ms := e.botMessages(slackChan, root); len(ms) > 0 {
			ts = ms[0].TS
			return true
		}
		return false
	})
	return ts
}

// waitButtons waits until a message's buttons are want (by action id).
func (e *slackEnv) waitButtons(ts string, want ...string) []slackfake.Button {
	e.tb.Helper()
	var got []slackfake.Button
	e.waitFor("buttons "+strings.Join(want, ",")+" on "+ts, func() bool {
		got = e.slack.Buttons(slackChan, ts)
		return slices.Equal(buttonIDs(got), want)
	}, func() string { return "buttons now: " + strings.Join(buttonIDs(got), ",") })
	return got
}

// waitClickAck waits until the bot acknowledged a click.
func (e *slackEnv) waitClickAck(id string) slackfake.Ack {
	e.tb.Helper()
	ack, err := e.slack.WaitEventAck(e.ctx, id)
	if err != nil {
		e.tb.Fatal(err)
	}
	return ack
}

func TestSlackStopButtonStopsTheRunAndGoesAway(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t)
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			return llmfake.Stream(llmfake.Content("thinking about it"), llmfake.Hang())
		}
		return llmfake.TextReply("later: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "do a long thing", "")
	e.waitRequests(1)
	status := e.statusTS(root)
	bs := e.waitButtons(status, "stop")
	if bs[0].Style != "danger" || bs[0].Text.Text != "Stop" || bs[0].Value != "stop" {
		t.Errorf("the Stop button = %+v, want a red Stop whose value is stop", bs[0])
	}
	// The text of a message with blocks still reads as before.
	if m := e.botMessages(slackChan, root)[0]; !strings.HasPrefix(m.Text, "⏳ working…") {
		t.Errorf("status text = %q", m.Text)
	}

	click := e.slack.Click(slackChan, status, aliceID, "stop")
	ack := e.waitClickAck(click)
	if ack.Latency > time.Second {
		t.Errorf("click acknowledged after %s", ack.Latency)
	}
	var answered slackfake.Call
	e.waitFor("a message containing \"stopped\"", func() bool {
		for _, c := range e.slack.Calls() {
			if (c.Method == "chat.postMessage" || c.Method == "chat.update") && c.Error == "" && strings.Contains(c.Params.Get("text"), "stopped") {
				answered = c
				return true
			}
		}
		return false
	}, func() string { return e.transcript(slackChan, root) })
	var sent time.Time
	for _, d := range e.slack.Deliveries() {
		if d.EventID == click {
			sent = d.Sent
		}
	}
	if lat := answered.Time.Sub(sent); lat > time.Second {
		t.Errorf("\"stopped\" %s after the click, want within 1s", lat)
	}
	if err := e.llm.WaitDisconnects(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The run is over: Stop no longer applies.
	e.waitButtons(status)
	if got := e.botMessages(slackChan, root)[0].Text; strings.Contains(got, "working…") {
		t.Errorf("the status still says working: %q", got)
	}

	// The same click delivered again stops nothing and says nothing more.
	before := strings.Count(e.threadText(slackChan, root), "stopped")
	e.slack.Redeliver(click)
	e.waitClickAck(click)
	e.slack.UserMessage(slackChan, aliceID, "go on", root)
	e.waitText(slackChan, root, "later: ")
	if got := strings.Count(e.threadText(slackChan, root), "stopped"); got != before {
		t.Errorf("after the redelivered click \"stopped\" shows %d times, want %d:\n%s", got, before, e.transcript(slackChan, root))
	}
}

// pushRun has the model write a file, so the run ends with a push.
func pushRun(e *slackEnv) {
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return llmfake.TextReply("done: " + lastUserText(r))
		}
		i := n.Add(1)
		return llmfake.ToolCallReply(llmfake.Call{ID: "w" + itoa(int(i)), Name: "write",
			Args: jsonArgs(map[string]string{"path": "file" + itoa(int(i)) + ".txt", "content": "v" + itoa(int(i)) + "\n"})})
	})
}

// diffButtonTest clicks Diff after a push, twice delivered, and checks that
// the patch came once.
func diffButtonTest(t *testing.T, e *slackEnv) {
	pushRun(e)
	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	status := e.statusTS(root)
	// A local remote has no pull requests: Diff alone.
	e.waitButtons(status, "diff")

	click := e.slack.Click(slackChan, status, aliceID, "diff")
	e.waitFor("the patch", func() bool { return len(e.slack.Uploads()) == 1 && e.slack.Uploads()[0].Completed },
		func() string { return e.transcript(slackChan, root) })
	up := e.slack.Uploads()[0]
	if !strings.HasSuffix(up.Filename, ".diff") || !strings.Contains(string(up.Content), "+v1") || up.ThreadTS != root {
		t.Errorf("upload = %s in %s:\n%s", up.Filename, up.ThreadTS, up.Content)
	}
	e.waitClickAck(click)
	e.slack.Redeliver(click)
	e.waitClickAck(click)
	// A later command shows that the redelivery was handled (in order) and
	// did nothing.
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Last push")
	if got := len(e.slack.Uploads()); got != 1 {
		t.Errorf("uploads after the redelivered click = %d, want 1", got)
	}
	if got := len(e.llm.Requests()); got != 2 {
		t.Errorf("LLM requests = %d, want 2 (the click is a command, not a prompt)", got)
	}
}

func TestSlackDiffButtonAfterAPushActsOnce(t *testing.T) {
	t.Parallel()
	diffButtonTest(t, newSlackEnv(t))
}

func TestSlackDiffButtonOverTheHTTPEndpoint(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, httpEvents())
	diffButtonTest(t, e)
	for _, a := range e.slack.Acks() {
		if a.StatusCode != 200 {
			t.Errorf("an HTTP request was answered %d", a.StatusCode)
		}
	}
}

func TestSlackOpenPRButtonLinksThePullRequest(t *testing.T) {
	t.Parallel()
	e, fake := prEnv(t, "github")
	writes(e)
	root := e.slack.Mention(slackChan, aliceID, "add the first file", "")
	e.waitText(slackChan, root, "|pull request #1>")
	status := e.statusTS(root)
	bs := e.waitButtons(status, "diff", "pr")
	pr := fake.PRs()[0]
	if bs[1].URL == "" || !strings.HasSuffix(bs[1].URL, "/pull/1") || bs[1].Value != "" {
		t.Errorf("Open PR = %+v, want a link to pull request #1 (%+v)", bs[1], pr)
	}
	// Slack reports a link button's click too; it is not input.
	n := len(e.slack.Calls())
	e.waitClickAck(e.slack.Click(slackChan, status, aliceID, "pr"))
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Last push")
	for _, c := range e.slack.Calls()[n:] {
		if c.Method == "chat.postMessage" && strings.Contains(c.Params.Get("text"), "pull request #1") {
			t.Errorf("the link's click was taken as !pr: %q", c.Params.Get("text"))
		}
	}
}

func TestSlackOpenPRButtonRunsPRWhenThereIsNone(t *testing.T) {
	t.Parallel()
	e, fake := prEnv(t, "github")
	fake.RateLimit(true) // the first attempt to open it fails
	writes(e)
	root := e.slack.Mention(slackChan, aliceID, "add the first file", "")
	e.waitText(slackChan, root, "The pull request could not be opened or updated")
	fake.RateLimit(false)
	status := e.statusTS(root)
	bs := e.waitButtons(status, "diff", "pr")
	if bs[1].URL != "" || bs[1].Value != "pr" {
		t.Fatalf("Open PR = %+v, want a button that runs !pr", bs[1])
	}
	e.waitClickAck(e.slack.Click(slackChan, status, aliceID, "pr"))
	e.waitText(slackChan, root, "|pull request #1>")
	if prs := fake.PRs(); len(prs) != 1 {
		t.Fatalf("the forge holds %+v, want the one !pr opened", prs)
	}
	// Now there is one: the button links it.
	e.waitFor("the link", func() bool {
		bs := e.slack.Buttons(slackChan, status)
		return len(bs) == 2 && strings.HasSuffix(bs[1].URL, "/pull/1")
	})
}

func TestSlackButtonFromARefusedUserGetsTheNoteAndRunsNothing(t *testing.T) {
	t.Parallel()
	const mallory = "U0MALLORY"
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.Slack.AllowedUsers = []string{aliceID} }))
	e.slack.AddUser(slackfake.User{ID: mallory, Name: "mallory", RealName: "Mallory"})
	e.slack.ChannelJoin(slackChan, mallory)
	pushRun(e)
	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	status := e.statusTS(root)
	e.waitButtons(status, "diff")
	click := e.slack.Click(slackChan, status, mallory, "diff")
	e.waitFor("the refusal note", func() bool { return len(e.slack.Ephemerals()) == 1 })
	e.waitClickAck(click)
	eph := e.slack.Ephemerals()[0]
	if eph.User != mallory || eph.ThreadTS != root || !eph.Visible || !strings.Contains(eph.Text, "not allowed") {
		t.Errorf("note = %+v, want a visible note to %s in the thread %s", eph, mallory, root)
	}
	e.slack.Redeliver(click)
	e.waitClickAck(click)
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Last push")
	if n := len(e.slack.Uploads()); n != 0 {
		t.Errorf("the refused click uploaded %d patches", n)
	}
	if n := len(e.slack.Ephemerals()); n != 1 {
		t.Errorf("notes = %d, want 1 for one click", n)
	}
}

// A refused click by someone who is not in the channel (a public channel
// can be read, and its buttons clicked, without joining) cannot get the
// private note: Slack refuses it with user_not_in_channel. The bot logs
// that, says nothing in the thread (no public message that would ping
// them), runs nothing and goes on working.
func TestSlackButtonFromARefusedNonMemberIsLoggedNotAnswered(t *testing.T) {
	t.Parallel()
	const mallory = "U0MALLORY"
	logs := captureLogs(t)
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.Slack.AllowedUsers = []string{aliceID} }))
	logs.attach(e)
	e.slack.AddUser(slackfake.User{ID: mallory, Name: "mallory", RealName: "Mallory"})
	pushRun(e)
	root := e.slack.Mention(slackChan, aliceID, "add a file", "")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	status := e.statusTS(root)
	e.waitButtons(status, "diff")
	before := len(e.botMessages(slackChan, root))
	click := e.slack.Click(slackChan, status, mallory, "diff")
	e.waitFor("the refused note", func() bool {
		for _, c := range e.slack.CallsTo("chat.postEphemeral") {
			if c.Params.Get("user") == mallory {
				return true
			}
		}
		return false
	})
	e.waitClickAck(click)
	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "Last push")
	if n := len(e.slack.Ephemerals()); n != 0 {
		t.Errorf("notes delivered = %d, want none to a non-member", n)
	}
	if n := len(e.slack.Uploads()); n != 0 {
		t.Errorf("the refused click uploaded %d patches", n)
	}
	for _, m := range e.botMessages(slackChan, root)[before:] {
		if strings.Contains(m.Text, mallory) || strings.Contains(m.Text, "not allowed") {
			t.Errorf("the bot said in the thread what was meant for mallory: %q", m.Text)
		}
	}
	for _, n := range e.slack.Notices() {
		if slices.Contains(n.Users, mallory) {
			t.Errorf("a message notified mallory: %+v", n)
		}
	}
	if got := logs.String(); !strings.Contains(got, "refusal note failed") || !strings.Contains(got, "user_not_in_channel") {
		t.Errorf("the undeliverable note is not logged with Slack's reason; log:\n%s", got)
	}
}

// With slack.agent_sessions, for an app installed from
// slack-app-manifest-agent.yaml, the thread's session is titled from the
// request and "processing" while a run works, and closed after; Slack's own
// stop button (agent_session_stopped) stops the run like !stop.
func TestSlackAgentSessionStatusAndItsStopButton(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	e := newSlackEnv(t, withFake(installedFrom(t, "slack-app-manifest-agent.yaml")...),
		withConfig(func(c *config.Config) { c.Slack.AgentSessions = true }))
	var n atomic.Int32
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			return llmfake.Stream(llmfake.Content("thinking about it"), llmfake.Hang())
		}
		return llmfake.TextReply("later: " + lastUserText(r))
	})
	root := e.slack.Mention(slackChan, aliceID, "do a long thing", "")
	e.waitRequests(1)
	// The session's status is no chat call (waitFor wakes on those): wait
	// on the method's calls.
	waitAgent := func(status string) {
		t.Helper()
		for {
			n := len(e.slack.CallsTo("agents.sessions.setStatus"))
			if st := e.slack.AgentStatuses(); len(st) > 0 && st[len(st)-1].Status == status &&
				st[len(st)-1].Channel == slackChan && st[len(st)-1].ThreadTS == root {
				return
			}
			if _, err := e.slack.WaitCalls(e.ctx, "agents.sessions.setStatus", n+1); err != nil {
				t.Fatalf("waiting for the session %s: %v (statuses %+v)", status, err, e.slack.AgentStatuses())
			}
		}
	}
	waitAgent("processing")
	if s, _ := e.slack.AgentSessionOf(slackChan, root); s.Title != "do a long thing" {
		t.Errorf("session title %q, want the request", s.Title)
	}
	for _, st := range e.slack.AgentStatuses() {
		if st.Warning != "" {
			t.Errorf("agents.sessions.setStatus warned %s", st.Warning)
		}
	}
	if got := e.slack.Statuses(); len(got) != 0 {
		t.Errorf("assistant statuses %+v beside the agent session's, want none", got)
	}
	begin := time.Now()
	e.slack.StopAgentSession(slackChan, root, aliceID)
	e.waitText(slackChan, root, "stopped")
	if d := time.Since(begin); d > time.Second {
		t.Errorf("stopped %v after Slack's stop button, want within 1s", d)
	}
	// Slack leaves the status to the app: the run's end closes the session.
	waitAgent("closed")
	if err := e.slack.WaitAllAcked(e.ctx); err != nil {
		t.Fatal(err)
	}
}

// Without agent sessions the plain assistant status is used, and the
// adapter stops asking for a session status where Slack said there is none.
func TestSlackWithoutAgentSessionsKeepsTheAssistantStatus(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withFake(slackfake.WithAssistantThreads()))
	// The answer waits until the status shows: a run that ends before the
	// outbox sends "is working…" merges it with the clearing, rightly.
	shown := make(chan struct{})
	e.llm.Push(llmfake.Stream(llmfake.Await(shown), llmfake.Content("hi"), llmfake.Finish("stop"), llmfake.Done()))
	root := e.slack.Mention(slackChan, aliceID, "hello", "")
	for seen := false; !seen; {
		n := len(e.slack.CallsTo("assistant.threads.setStatus"))
		for _, s := range e.slack.Statuses() {
			seen = seen || s.ThreadTS == root && s.Status != ""
		}
		if !seen {
			if _, err := e.slack.WaitCalls(e.ctx, "assistant.threads.setStatus", n+1); err != nil {
				t.Fatalf("waiting for the assistant status: %v (statuses %+v)", err, e.slack.Statuses())
			}
		}
	}
	close(shown)
	e.waitText(slackChan, root, "hi")
	e.slack.UserMessage(slackChan, aliceID, "again", root)
	e.waitFor("the second answer", func() bool { return strings.Count(e.threadText(slackChan, root), "⏱") == 2 })
	if got := len(e.slack.CallsTo("agents.sessions.setStatus")); got != 0 {
		t.Errorf("agents.sessions.setStatus asked %d times without slack.agent_sessions, want never", got)
	}
}

// logCapture keeps a copy of what a slackEnv's bot logs.
type logCapture struct {
	mu  sync.Mutex
	buf strings.Builder
}

func captureLogs(testing.TB) *logCapture { return &logCapture{} }

// attach tees the env's log into the capture; call it before the bot logs
// what the test looks for.
func (c *logCapture) attach(e *slackEnv) {
	e.logOut.mu.Lock()
	e.logOut.w = io.MultiWriter(e.logOut.w, c)
	e.logOut.mu.Unlock()
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
