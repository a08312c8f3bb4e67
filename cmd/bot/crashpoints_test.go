package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/crashpoint"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// TestCrashBetweenDurableSteps cuts the real binary with SIGKILL
// at each point between two durable steps of a run that writes a file —
// accepted, delivered (user message appended), answered (the answer stored,
// not handed to Slack), posted (Slack took the answer, not recorded yet),
// committed, pushed; and after a compaction is stored — starts it again, and
// checks what the thread was promised: the request reaches the model exactly
// once, a cut-off run is reported, the answer shows exactly once, and the
// run's commit reaches the remote (without anyone asking again, for a run cut
// after its commit). The points are crashpoint's: the process kills itself
// there.
func TestCrashBetweenDurableSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bot binary")
	}
	bin := buildBot(t)
	const prompt = "please write f.txt"
	for _, point := range []string{crashpoint.Accepted, crashpoint.Delivered, crashpoint.Answered, crashpoint.Posted, crashpoint.Committed, crashpoint.Pushed} {
		t.Run(point, func(t *testing.T) {
			e := newSlackFakes(t)
			config := writeSlackConfig(t, e, 3*time.Second)
			e.llm.Handle(func(r llmfake.Request) llmfake.Response {
				if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
					return llmfake.TextReply("wrote f.txt")
				}
				return llmfake.ToolCallReply(llmfake.Call{ID: "w1", Name: "write", Args: `{"path":"f.txt","content":"from the run\n"}`})
			})

			t.Setenv(crashpoint.EnvVar, point)
			bot := startBot(t, e, bin, config, 1)
			os.Unsetenv(crashpoint.EnvVar) // the next start runs normally
			root := e.slack.Mention(slackChan, aliceID, prompt, "")
			err := bot.wait(60 * time.Second)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
				t.Fatalf("the bot did not cut itself at %q: %v\n%s", point, err, bot.stderr)
			}

			startBot(t, e, bin, config, 2)
			switch point {
			case crashpoint.Accepted:
				// Accepted, never handled: replayed at the start, run once.
				e.waitText(slackChan, root, "wrote f.txt")
			case crashpoint.Delivered:
				// The request is in the conversation; its run was cut off.
				e.waitText(slackChan, root, "interrupted")
				e.slack.UserMessage(slackChan, aliceID, "go on", root)
				e.waitText(slackChan, root, "wrote f.txt")
			default:
				// The model had answered: the answer shows (stored before
				// the outbox took it, posted again at the start unless
				// Slack had it), and the run's commit is pushed at the
				// start, unasked.
				e.waitText(slackChan, root, "interrupted")
			}
			e.waitFor("the answer", func() bool { return answers(e, root, "wrote f.txt") >= 1 },
				func() string { return e.transcript(slackChan, root) })
			e.waitFor("the run's file is on the remote", func() bool {
				for _, b := range e.remote.Branches(t) {
					if strings.HasPrefix(b, "bot/") && e.remote.Files(t, b)["f.txt"] == "from the run" {
						return true
					}
				}
				return false
			})

			reqs := e.llm.Requests()
			if len(reqs) == 0 && point != crashpoint.Committed && point != crashpoint.Pushed {
				t.Fatal("the request never reached the model")
			}
			for i, r := range reqs {
				n := 0
				for _, u := range userTexts(r) {
					if strings.Contains(u, prompt) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("request %d carries the prompt %d times, want exactly once: %q", i+1, n, userTexts(r))
				}
			}
			// A repost at the start goes out before the interrupted
			// notice (one thread's posts keep their order), so it is
			// settled by now.
			if got := answers(e, root, "wrote f.txt"); got != 1 {
				t.Errorf("the answer shows %d times, want once\n%s", got, e.transcript(slackChan, root))
			}
			if got := strings.Count(e.transcript(slackChan, root), "previous run in this thread was interrupted"); point != crashpoint.Accepted && got != 1 {
				t.Errorf("interrupted notices = %d, want 1\n%s", got, e.transcript(slackChan, root))
			}
		})
	}
	t.Run(crashpoint.Compacted, func(t *testing.T) { crashAfterCompaction(t, bin) })
}

// answers counts the answer messages in the thread that carry text:
// the answer ends with the run's footer (a status message's preview or its
// interrupted form does not).
func answers(e *slackEnv, root, text string) int {
	n := 0
	for _, m := range e.slack.Messages(slackChan, root) {
		if strings.Contains(m.Text, text) && strings.Contains(m.Text, "⏱") {
			n++
		}
	}
	return n
}

// waitFooters waits until n runs of the thread have ended (each ends with a footer).
func (e *slackEnv) waitFooters(ch, root string, n int) {
	e.tb.Helper()
	e.waitFor(fmt.Sprintf("%d footers", n), func() bool { return countFooters(e.transcript(ch, root)) >= n })
}

// crashAfterCompaction cuts the binary right after a !compact stored its
// summary: restarted, the session resumes from the summary (not from the
// compacted messages) and takes the next message.
func crashAfterCompaction(t *testing.T, bin string) {
	e := newSlackFakes(t)
	config := writeSlackConfig(t, e, 3*time.Second)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A tiny verbatim tail, so that three short exchanges have something to compact.
	if _, err := f.WriteString("agent:\n  compaction:\n    keep_recent_tokens: 10\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if len(r.Tools) == 0 {
			return llmfake.TextReply("## Goal\nTHE-SUMMARY of the early requests")
		}
		return llmfake.TextReply("answer to: " + lastUserText(r) + strings.Repeat(" and more", 40))
	})

	t.Setenv(crashpoint.EnvVar, crashpoint.Compacted)
	bot := startBot(t, e, bin, config, 1)
	os.Unsetenv(crashpoint.EnvVar)
	root := e.slack.Mention(slackChan, aliceID, "first request", "")
	for i, text := range []string{"second request", "third request"} {
		e.waitFooters(slackChan, root, i+1)
		e.slack.UserMessage(slackChan, aliceID, text, root)
	}
	e.waitFooters(slackChan, root, 3)
	e.slack.UserMessage(slackChan, aliceID, "!compact", root)
	err = bot.wait(60 * time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("the bot did not cut itself after compacting: %v\n%s", err, bot.stderr)
	}

	startBot(t, e, bin, config, 2)
	e.slack.UserMessage(slackChan, aliceID, "what now?", root)
	e.waitFooters(slackChan, root, 4)
	last := e.llm.Requests()[len(e.llm.Requests())-1]
	var summary, asked bool
	for _, m := range last.Messages {
		summary = summary || strings.Contains(m.Content, "THE-SUMMARY")
		asked = asked || m.Content == "what now?"
	}
	if !summary || !asked {
		t.Fatalf("the request after the restart has the summary %v, the new message %v; want both:\n%+v", summary, asked, last.Messages)
	}
	for _, m := range last.Messages {
		if m.Content == "first request" {
			t.Errorf("the compacted request is still sent verbatim after the restart")
		}
	}
}
