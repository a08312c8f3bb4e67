package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/crashpoint"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// The real binary, cut with SIGKILL right after it posted the message that
// opens a schedule's thread and before it recorded the thread: started
// again, it runs the firing it missed, finds the message it had posted
// instead of posting another, and the thread gets its request and answer
// once.
func TestScheduleOpeningCutAfterItsPostOpensOneThread(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the bot binary")
	}
	bin := buildBot(t)
	e := newSlackFakes(t)
	e.slack.AddChannel(slackfake.Channel{ID: slackChan, Name: "e2e"})
	config := writeSlackConfig(t, e, 3*time.Second)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A yearly schedule that fired before: its firing of this year was
	// missed, so the bot runs it as soon as it starts.
	if _, err := f.WriteString("schedules:\n  - {name: yearly, cron: \"0 0 1 1 *\", channel: " + slackChan + ", prompt: \"sum up the year\"}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.MkdirAll(e.cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(e.cfg.DataDir, sqlite.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.FinishFiring(context.Background(), "yearly", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	e.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("A good year.") })

	cut := exec.Command(bin, "-config", config)
	cut.Env = append(os.Environ(), crashpoint.EnvVar+"="+crashpoint.Opened,
		"TEST_SLACK_BOT_TOKEN="+e.slack.BotToken(), "TEST_SLACK_APP_TOKEN="+e.slack.AppToken())
	var out bytes.Buffer
	cut.Stdout, cut.Stderr = &out, &out
	err = cut.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("the bot did not cut itself after posting: %v\n%s", err, out.String())
	}
	top := e.slack.Messages(slackChan, "")
	if len(top) != 1 || !strings.HasPrefix(top[0].Text, "⏰ yearly") {
		t.Fatalf("top-level messages after the cut: %+v, want the opening message", top)
	}
	root := top[0].TS

	startBot(t, e, bin, config, 1)
	e.waitText(slackChan, root, "A good year.")
	if top := e.slack.Messages(slackChan, ""); len(top) != 1 {
		t.Errorf("%d top-level messages, want the one opening message:\n%+v", len(top), top)
	}
	reqs := e.llm.Requests()
	if len(reqs) != 1 || !strings.Contains(strings.Join(userTexts(reqs[0]), "\n"), "sum up the year") {
		t.Errorf("model requests %d, want one with the schedule's prompt", len(reqs))
	}
}
