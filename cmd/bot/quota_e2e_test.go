package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
	"github.com/threadsmith/threadsmith/workspace/diskuse/disktest"
)

// toolOutput is the result of tool call id as the model was sent it, "" if
// it was not.
func toolOutput(llm *llmfake.Server, id string) string {
	for _, r := range llm.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == id {
				return m.Content
			}
		}
	}
	return ""
}

// A disk-filling agent leaves every other thread working, end to end through
// the program on the fake Slack with the real sandbox: thread A's
// `head -c 200M /dev/zero > big.bin` stops at its quota, A's model and A's
// thread are told, thread B's messages are stored and answered meanwhile,
// and after rm thread A works again.
func TestDiskFillingThreadLeavesOthersWorking(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	const quota = 16 << 20
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.Sandbox.Disk = quota }))
	steps := map[string]string{ // what thread A asks → its command
		"fill":  "head -c 200M /dev/zero > big.bin; ls -l big.bin",
		"clean": "rm big.bin && echo removed",
		"again": "head -c 1M /dev/zero > small.bin && echo small-ok",
	}
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		user := lastUserText(r)
		if strings.Contains(user, "thread B") {
			return llmfake.TextReply("B answered")
		}
		for step, cmd := range steps {
			if !strings.Contains(user, "thread A: "+step) {
				continue
			}
			if r.LastMessage().Role == "tool" {
				return llmfake.TextReply("A did " + step)
			}
			return llmfake.ToolCallReply(llmfake.Call{ID: step, Name: "bash", Args: jsonArgs(map[string]string{"command": cmd})})
		}
		return llmfake.TextReply("?")
	})
	rootA := e.slack.Mention(slackChan, aliceID, "thread A: fill the disk", "")
	e.waitText(slackChan, rootA, "A did fill")
	out := toolOutput(e.llm, "fill")
	if !strings.Contains(out, "File too large") || !strings.Contains(out, "[Disk quota:") {
		t.Errorf("thread A's model was not told what stopped it:\n%s", out)
	}
	e.waitText(slackChan, rootA, "This thread reached its disk quota")
	dirs, _ := filepath.Glob(filepath.Join(e.cfg.DataDir, "workspaces", "app", "*", "big.bin"))
	if len(dirs) != 1 {
		t.Fatalf("big.bin: %v", dirs)
	}
	if fi, err := os.Stat(dirs[0]); err != nil || fi.Size() > quota {
		t.Errorf("big.bin took %v bytes (%v), past the %d-byte quota", fi.Size(), err, quota)
	}

	// Thread B, while A sits at its quota: stored, answered.
	rootB := e.slack.Mention(slackChan, aliceID, "thread B: hello", "")
	e.waitText(slackChan, rootB, "B answered")
	e.slack.UserMessage(slackChan, aliceID, "thread B: still there?", rootB)
	e.waitFor("B's second answer", func() bool { return strings.Count(e.threadText(slackChan, rootB), "B answered") >= 2 },
		func() string { return e.transcript(slackChan, rootB) })
	if tb := e.transcript(slackChan, rootB); strings.Contains(tb, "disk quota") || strings.Contains(tb, "disk is full") {
		t.Errorf("thread B was hit by A's disk:\n%s", tb)
	}

	// A frees its space and works again.
	e.slack.UserMessage(slackChan, aliceID, "thread A: clean up", rootA)
	e.waitText(slackChan, rootA, "A did clean")
	if out := toolOutput(e.llm, "clean"); !strings.Contains(out, "removed") {
		t.Errorf("rm at the quota:\n%s", out)
	}
	e.slack.UserMessage(slackChan, aliceID, "thread A: again", rootA)
	e.waitText(slackChan, rootA, "A did again")
	if out := toolOutput(e.llm, "again"); !strings.Contains(out, "small-ok") || strings.Contains(out, "quota") {
		t.Errorf("after rm thread A does not work again:\n%s", out)
	}
	if n := strings.Count(e.transcript(slackChan, rootA), "reached its disk quota"); n != 1 {
		t.Errorf("thread A was told %d times, want once", n)
	}
}

// The machine's floor, on a real full disk (data_dir on a small tmpfs, as
// root; skipped otherwise): an agent whose quota is larger than the disk
// fills it only down to sandbox.disk_reserve, the database keeps its room
// (thread B's messages are stored and answered), the agent is told, and
// after rm it works again.
func TestDiskReserveKeepsTheDatabaseWorking(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{})
	const reserve = 24 << 20
	e := newSlackFakes(t, withConfig(func(c *config.Config) {
		c.Sandbox.Disk = 1 << 30
		c.Sandbox.DiskReserve = reserve
	}))
	e.cfg.DataDir = disktest.Small(t, 96<<20)
	e.start()
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		user := lastUserText(r)
		switch {
		case strings.Contains(user, "thread B"):
			return llmfake.TextReply("B answered")
		case r.LastMessage().Role == "tool":
			return llmfake.TextReply("A did it")
		case strings.Contains(user, "fill"):
			return llmfake.ToolCallReply(llmfake.Call{ID: "fill", Name: "bash", Args: jsonArgs(map[string]string{"command": "head -c 200M /dev/zero > big.bin; head -c 200M /dev/zero > big2.bin; ls -l"})})
		case strings.Contains(user, "clean"):
			return llmfake.ToolCallReply(llmfake.Call{ID: "clean", Name: "bash", Args: jsonArgs(map[string]string{"command": "rm big.bin big2.bin && echo removed"})})
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "again", Name: "bash", Args: jsonArgs(map[string]string{"command": "head -c 1M /dev/zero > small.bin && echo small-ok"})})
	})
	rootA := e.slack.Mention(slackChan, aliceID, "thread A: fill the disk", "")
	e.waitText(slackChan, rootA, "A did it")
	free, err := diskuse.Free(e.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if free < reserve-(2<<20) {
		t.Errorf("%d bytes free after the agent filled the disk, want the %d-byte reserve handed over", free, reserve)
	}
	e.waitText(slackChan, rootA, "The bot's disk is nearly full")
	rootB := e.slack.Mention(slackChan, aliceID, "thread B: hello", "")
	e.waitText(slackChan, rootB, "B answered")
	e.slack.UserMessage(slackChan, aliceID, "thread B: still there?", rootB)
	e.waitFor("B's second answer", func() bool { return strings.Count(e.threadText(slackChan, rootB), "B answered") >= 2 },
		func() string { return e.transcript(slackChan, rootB) })

	e.slack.UserMessage(slackChan, aliceID, "thread A: clean up", rootA)
	e.waitFor("A's second run", func() bool { return strings.Count(e.threadText(slackChan, rootA), "A did it") >= 2 },
		func() string { return e.transcript(slackChan, rootA) })
	if out := toolOutput(e.llm, "clean"); !strings.Contains(out, "removed") {
		t.Errorf("rm below the floor:\n%s", out)
	}
	e.slack.UserMessage(slackChan, aliceID, "thread A: once more", rootA)
	e.waitFor("A's third run", func() bool { return strings.Count(e.threadText(slackChan, rootA), "A did it") >= 3 },
		func() string { return e.transcript(slackChan, rootA) })
	if out := toolOutput(e.llm, "again"); !strings.Contains(out, "small-ok") || strings.Contains(out, "nearly full") {
		t.Errorf("once space returned thread A does not work again:\n%s", out)
	}
	if n := strings.Count(e.transcript(slackChan, rootA), "The bot's disk is nearly full"); n != 1 {
		t.Errorf("thread A was told %d times of the full disk, want once", n)
	}
}
