package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// filesEnv is the program on a fake Discord whose clock the test moves, so
// that attachment links expire without waiting a day.
type filesEnv struct {
	*discordEnv
	clock *discordfake.ManualClock
	cfg   config.Config
}

func newFilesEnv(t *testing.T, configure ...func(*config.Config)) *filesEnv {
	clock := discordfake.NewManualClock(time.Now())
	e := &filesEnv{clock: clock, discordEnv: &discordEnv{
		t:    t,
		fake: discordfake.New(t, discordfake.WithClock(clock)),
		llm:  llmfake.New(t),
	}}
	e.remote = gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}})
	cfg := e2eConfig(t, e.llm, e.remote)
	cfg.Discord.Enabled = true
	cfg.Discord.Token = e.fake.Token()
	cfg.Discord.APIURL = e.fake.URL()
	cfg.Discord.GuildIDs = []string{dGuild}
	cfg.ShutdownGrace = 2 * time.Second
	for _, f := range configure {
		f(&cfg)
	}
	e.cfg = cfg
	var cancel context.CancelFunc
	e.ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	e.start()
	return e
}

// start runs a Main on the env's config and waits until it is ready.
func (e *filesEnv) start() { e.startMain(e.cfg, nil) }

// startMain runs a Main on cfg (set, if given, changes it first) and waits
// until it is ready on the fake Discord, its slash commands registered;
// stop closes it. The test's end stops it too.
func (e *discordEnv) startMain(cfg config.Config, set func(*Main)) {
	t := e.t
	ready := e.fake.Readies() + 1
	m := NewMain()
	m.Config = &cfg
	if set != nil {
		set(m)
	}
	m.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := m.Run(e.ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	e.m = m
	t.Cleanup(e.stop)
	if err := e.fake.WaitForReady(e.ctx, ready); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fake.WaitForCommandOverwrite(e.ctx, dGuild, 1); err != nil {
		t.Fatal(err)
	}
}

// stop closes the Main startMain ran, if it still runs.
func (e *discordEnv) stop() {
	if e.m == nil {
		return
	}
	if err := e.m.Close(); err != nil {
		e.t.Errorf("Close: %v", err)
	}
	e.m = nil
}

// savedFile is the path the model was told a shared file was saved at.
// (A process that stopped after saving it and before the model got it
// leaves notes.txt behind; the next one saves notes-2.txt.)
var savedFile = regexp.MustCompile(`saved outside the repository: (\S+/notes(?:-\d+)?\.txt) \((\d+) bytes\)`)

// queuedFileTest shares a file in a thread while the message must wait for
// the only run slot, which another thread's long run holds; moves the clock
// past the file's link; calls between (a restart, or nothing); then lets the
// long run end: the waiting message must still give the model the file.
func queuedFileTest(t *testing.T, between func(e *filesEnv)) {
	e := newFilesEnv(t, func(c *config.Config) { c.MaxConcurrentRuns = 1 })
	arrived, open := make(chan struct{}, 4), make(chan struct{})
	var second atomic.Pointer[llmfake.Request]
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if strings.Contains(lastUserText(r), "see my notes") {
			second.Store(&r)
			return llmfake.TextReply("read your notes")
		}
		if lastUserText(r) != "a long run" {
			return llmfake.TextReply("ok")
		}
		// The long run: held mid-answer until the test lets it go, or
		// the bot goes away.
		arrived <- struct{}{}
		return llmfake.Stream(llmfake.Content("working"), llmfake.Await(open), llmfake.Content(" done"), llmfake.Finish("stop"), llmfake.Usage(10, 2, 0), llmfake.Done())
	})
	th, _ := e.open("a quick one")
	e.waitBot(th, "⏱")
	long, _ := e.open("a long run")
	select {
	case <-arrived:
	case <-e.ctx.Done():
		t.Fatal("the long run never reached the model")
	}
	notes := []byte("the notes\nline two\n")
	e.fake.UserMessage(th, dAlice, "see my notes", discordfake.Attachment{Filename: "notes.txt", ContentType: "text/plain", Data: notes})
	e.waitBot(th, "run slots are busy")

	// The link the message came with works now and not after a day.
	e.clock.Advance(discordfake.AttachmentURLLifetime + time.Hour)
	between(e)
	close(open)
	e.waitBot(long, "⏱")

	err := e.fake.WaitFor(e.ctx, func() bool { return second.Load() != nil })
	if err != nil {
		t.Fatalf("the shared file never reached the model: %v\n%s", err, e.transcript(th))
	}
	text := lastUserText(*second.Load())
	m := savedFile.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the model got %q, want the saved notes.txt", text)
	}
	if got, err := os.ReadFile(m[1]); err != nil || string(got) != string(notes) {
		t.Errorf("the saved file %s holds %q (%v), want the notes", m[1], got, err)
	}
	e.waitBot(th, "read your notes")
	// The copy kept since the message came is gone once the model has it.
	if left, _ := filepath.Glob(filepath.Join(e.cfg.DataDir, "scratch", "*", "*", "inbox", "*", "*")); len(left) > 0 {
		t.Errorf("kept files left after delivery: %q", left)
	}
	if strings.Contains(text, "could not be used") || e.countBot(th, "couldn't use") > 0 {
		t.Errorf("the file was reported unusable:\n%s\n%s", text, e.transcript(th))
	}
}

// A message with a file, waiting behind a long run and processed after its
// link expired, still gives the model the file: it was downloaded when the
// message was accepted.
func TestDiscordQueuedFileOutlivesItsLink(t *testing.T) {
	t.Parallel()
	queuedFileTest(t, func(*filesEnv) {})
}

// The same across a restart between accepting the message and processing
// it: the file kept for it is still there for the next process.
func TestDiscordQueuedFileSurvivesARestart(t *testing.T) {
	t.Parallel()
	queuedFileTest(t, func(e *filesEnv) {
		e.stop()
		e.start()
	})
}

// A message whose files were kept and that is dropped before it reaches the
// model (stopped while it waits for a run slot) leaves no kept file behind:
// they would count against the thread's quota for nothing.
func TestDiscordDroppedMessageLeavesNoKeptFile(t *testing.T) {
	t.Parallel()
	e := newFilesEnv(t, func(c *config.Config) { c.MaxConcurrentRuns = 1 })
	arrived, open := make(chan struct{}, 4), make(chan struct{})
	t.Cleanup(func() { close(open) })
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if lastUserText(r) != "a long run" {
			return llmfake.TextReply("ok")
		}
		arrived <- struct{}{}
		return llmfake.Stream(llmfake.Content("working"), llmfake.Await(open), llmfake.Finish("stop"), llmfake.Done())
	})
	th, _ := e.open("a quick one")
	e.waitBot(th, "⏱")
	e.open("a long run")
	select {
	case <-arrived:
	case <-e.ctx.Done():
		t.Fatal("the long run never reached the model")
	}
	e.fake.UserMessage(th, dAlice, "see my notes", discordfake.Attachment{Filename: "notes.txt", ContentType: "text/plain", Data: []byte("notes")})
	e.waitBot(th, "run slots are busy")
	inbox := filepath.Join(e.cfg.DataDir, "scratch", "*", "*", "inbox", "*", "*")
	if kept, _ := filepath.Glob(inbox); len(kept) != 1 {
		t.Fatalf("kept files %q while the message waits, want notes.txt", kept)
	}
	e.fake.UserMessage(th, dAlice, "!stop")
	e.waitBot(th, "was cancelled before it started")
	if left, _ := filepath.Glob(inbox); len(left) != 0 {
		t.Errorf("kept files left after the message was dropped: %q", left)
	}
}
