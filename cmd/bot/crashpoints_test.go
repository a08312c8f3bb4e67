package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/crashpoint"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// TestCrashBetweenDurableSteps (issue 14) cuts the real binary with SIGKILL
// at each point between two durable steps of a run that writes a file —
// accepted, delivered (user message appended), committed, pushed — starts
// it again, and checks what the thread was promised: the request reaches the
// model exactly once, a cut-off run is reported, and the run's commit
// reaches the remote (without anyone asking again, for a run cut after its
// commit). The points are crashpoint's: the process kills itself there.
func TestCrashBetweenDurableSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bot binary")
	}
	bin := buildBot(t, t.Context(), t.TempDir())
	const prompt = "please write f.txt"
	for _, point := range []string{crashpoint.Accepted, crashpoint.Delivered, crashpoint.Committed, crashpoint.Pushed} {
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
				// The run's commit is pushed at the start, unasked.
				e.waitText(slackChan, root, "interrupted")
			}
			e.waitUntil("the run's file is on the remote", func() bool {
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
			if got := strings.Count(e.transcript(slackChan, root), "previous run in this thread was interrupted"); point != crashpoint.Accepted && got != 1 {
				t.Errorf("interrupted notices = %d, want 1\n%s", got, e.transcript(slackChan, root))
			}
		})
	}
}

// waitUntil polls cond (state no event announces, such as the remote's
// branches) until it holds or the env's deadline passes.
func (e *slackEnv) waitUntil(what string, cond func() bool) {
	e.tb.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-e.ctx.Done():
			e.tb.Fatalf("timed out waiting until %s", what)
		}
	}
}
