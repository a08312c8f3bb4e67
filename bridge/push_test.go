package bridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// holdPushes makes the remote's pre-receive hook wait until the returned
// function is called: a remote that takes its time.
func holdPushes(t *testing.T, r *rig) (release func()) {
	t.Helper()
	open := filepath.Join(t.TempDir(), "open")
	hook := "#!/bin/sh\nwhile [ ! -e '" + open + "' ]; do sleep 0.02; done\n"
	if err := os.WriteFile(filepath.Join(r.remote.Path, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	release = func() {
		if err := os.WriteFile(open, nil, 0o600); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(release)
	return release
}

// The answer is in the thread as soon as the model is done,
// while the push still waits on a slow remote; the thread's commands answer
// meanwhile, and the push has its own notice when it lands.
func TestAnswerIsPostedBeforeASlowPush(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	release := holdPushes(t, r)
	r.llm.Push(writeThenAnswer("slow.txt", "slow", "I wrote slow.txt.")...)
	th := testThread("70.1")
	r.say(th, alice, "write slow.txt", true)
	r.waitText(th, "I wrote slow.txt.")
	r.waitRuns(th, 1) // the footer is on the answer
	if strings.Contains(r.chat.Transcript(th), "pushed") {
		t.Fatalf("a push was reported while the remote still holds it:\n%s", r.chat.Transcript(th))
	}
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*")

	// The run is still open in storage: a crash now would leave it
	// interrupted, and the next start pushes its work.
	rec, _ := r.thread(th)
	if lp, err := r.db.LastPush(r.ctx, rec.ID); err == nil {
		t.Errorf("a push was recorded (%+v) before the remote took it", lp)
	}

	release()
	r.waitText(th, "⬆️ pushed")
	if got := r.remote.Files(t, rec.Branch)["slow.txt"]; got != "slow" {
		t.Errorf("remote slow.txt = %q, want the run's file", got)
	}
	r.waitUntil("the run is recorded as done after its push", func() bool {
		runs, err := r.db.InterruptRuns(r.ctx) // none may be left running
		return err == nil && len(runs) == 0
	})
}

// A commit the remote never got (the bot died between commit
// and push) is pushed after the next run, even one that changes nothing, and
// !status says it is missing until then.
func TestUnpushedCommitIsPushedAfterARunThatChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Push(writeThenAnswer("a.txt", "a", "wrote a")...)
	th := testThread("71.1")
	r.say(th, alice, "write a", true)
	r.waitText(th, "⬆️ pushed")
	r.waitRuns(th, 1)
	rec, _ := r.thread(th)

	// A commit made before a crash, never pushed.
	if err := os.WriteFile(filepath.Join(rec.WorkspacePath, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitremote.Git(t, rec.WorkspacePath, "add", "b.txt")
	gitremote.Git(t, rec.WorkspacePath, "-c", "user.name=threadsmith", "-c", "user.email=threadsmith@localhost", "commit", "-q", "-m", "b before the crash")

	r.say(th, alice, "!status", false)
	r.waitText(th, "1 commit not on the remote yet")

	r.llm.Push(llmfake.TextReply("nothing to change"))
	r.say(th, alice, "anything else?", false)
	r.waitRuns(th, 2)
	r.waitCount(th, "⬆️ pushed", 2)
	if got := r.remote.Files(t, rec.Branch)["b.txt"]; got != "b" {
		t.Errorf("remote b.txt = %q, want the commit from before the crash pushed", got)
	}
	if p, err := r.db.LastPush(r.ctx, rec.ID); err != nil || p.Result != storage.PushOK {
		t.Errorf("last push = %+v, %v; want ok", p, err)
	}
}

// A thread whose !compact still runs in the background is not evicted: the
// next message would start a second owner over the same session, and the
// compaction entry would be lost.
// (The check that nothing happens needs the idle timer to fire: it waits
// several IdleEvict periods, real time.)
func TestThreadIsNotEvictedWhileACompactionRuns(t *testing.T) {
	t.Parallel()
	const evict = 50 * time.Millisecond
	r := newRig(t, func(c *Config, _ *Platform) {
		c.IdleEvict = evict
		c.Agent.Compaction.KeepRecentTokens = 10
	})
	g := newGate(t)
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if len(req.Tools) == 0 { // the summary request
			g.hold()
			return llmfake.TextReply("## Goal\nthe summary")
		}
		return llmfake.TextReply("reply to: " + req.LastMessage().Content + strings.Repeat(" and more", 50))
	})
	th := testThread("72.1")
	for i, text := range []string{"first request", "second request", "third request"} {
		if i == 0 {
			r.say(th, alice, text, true)
		} else {
			r.say(th, alice, text, false)
		}
		r.waitRuns(th, i+1)
	}
	r.say(th, alice, "!compact", false)
	r.waitArrived(g)
	time.Sleep(6 * evict)
	if !r.live(th) {
		t.Fatal("the thread was evicted while its compaction ran")
	}
	g.release()
	r.waitText(th, "compacted")
	rec, _ := r.thread(th)
	r.waitUntil("the compaction is stored", func() bool {
		es, err := r.db.LoadEntries(r.ctx, rec.SessionID)
		return err == nil && len(es) > 0 && es[len(es)-1].Type == transcript.EntryCompaction
	})
	r.waitUntil("the idle thread is evicted once the compaction is done", func() bool { return !r.live(th) })
}
