package bridge

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// approvePushes makes the rig's repository wait for approval before a push,
// with approvers besides the requester.
func approvePushes(approvers ...string) rigOption {
	return func(c *Config, _ *Platform) {
		c.Approvals = map[string]Approval{"app": {Push: true, Approvers: approvers}}
	}
}

// An approver who did not ask for the work may push it; someone else who
// neither asked nor approves is told privately, and the branch stays off
// the remote until the approver's !push.
func TestPushApprovalByAnApprover(t *testing.T) {
	t.Parallel()
	carol := chatfake.Person{ID: "U3", Name: "Carol"}
	r := newRig(t, approvePushes(carol.ID))
	r.llm.Push(writeThenAnswer("a.txt", "a", "I wrote a.txt.")...)
	th := testThread("95.1")
	r.say(th, alice, "write a.txt", true)
	r.waitText(th, "⏸️ Not pushed yet: 1 commit")
	rec, _ := r.thread(th)

	r.say(th, bob, "!push", false)
	r.waitUntil("bob's note", func() bool { return len(r.chat.Whispers()) == 1 })
	if w := r.chat.Whispers()[0]; !strings.HasPrefix(w, bob.ID+": ") || !strings.Contains(w, "only the person who asked") {
		t.Errorf("note = %q, want bob's refusal", w)
	}
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*")
	if slices.Contains(r.remote.Branches(t), rec.Branch) {
		t.Fatalf("bob's !push pushed %s", rec.Branch)
	}

	r.say(th, carol, "!push", false)
	r.waitText(th, "⬆️ pushed")
	r.waitText(th, "Approved by `Carol`.")
	if got := r.remote.Files(t, rec.Branch)["a.txt"]; got != "a" {
		t.Errorf("a.txt on the remote = %q", got)
	}
	if lp, err := r.db.LastPush(r.ctx, rec.ID); err != nil || lp.Result != storage.PushOK || lp.Detail != "approved by Carol" {
		t.Errorf("last push %+v, %v; want it approved by Carol", lp, err)
	}
	if n := len(r.chat.Whispers()); n != 1 {
		t.Errorf("notes = %d, want bob's only", n)
	}
	if got := decisions(t, r, th); !slices.Equal(got, []string{"push:Carol"}) {
		t.Errorf("decisions %v, want carol's push", got)
	}
}

// In a repository that pushes by itself, !push says so and does nothing.
func TestPushCommandWithoutApproval(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Push(writeThenAnswer("a.txt", "a", "I wrote a.txt.")...)
	th := testThread("95.2")
	r.say(th, alice, "write a.txt", true)
	r.waitText(th, "⬆️ pushed")
	r.say(th, alice, "!push", false)
	r.waitText(th, "push by themselves")
	if n := strings.Count(r.chat.Transcript(th), "⬆️ pushed"); n != 1 {
		t.Errorf("pushed %d times, want once", n)
	}
}

// Only the authors of runs since the last push requested the work that
// waits: the requester of work already pushed may not push the next
// person's work.
func TestPushApprovalRequestersAreSinceTheLastPush(t *testing.T) {
	t.Parallel()
	carol := chatfake.Person{ID: "U3", Name: "Carol"}
	r := newRig(t, approvePushes(carol.ID))
	th := testThread("95.3")
	r.llm.Push(writeThenAnswer("a.txt", "a", "I wrote a.txt.")...)
	r.say(th, alice, "write a.txt", true)
	r.waitText(th, "⏸️ Not pushed yet: 1 commit")
	r.say(th, carol, "!push", false)
	r.waitText(th, "Approved by `Carol`.")
	rec, _ := r.thread(th)

	r.llm.Push(writeThenAnswer("b.txt", "b", "I wrote b.txt.")...)
	r.say(th, bob, "write b.txt", false)
	r.waitCount(th, "⏸️ Not pushed yet: 1 commit", 2)

	r.say(th, alice, "!push", false)
	r.waitUntil("alice's note", func() bool { return len(r.chat.Whispers()) == 1 })
	if w := r.chat.Whispers()[0]; !strings.HasPrefix(w, alice.ID+": ") || !strings.Contains(w, "only the person who asked") {
		t.Errorf("note = %q, want alice's refusal", w)
	}
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*")
	if _, ok := r.remote.Files(t, rec.Branch)["b.txt"]; ok {
		t.Fatal("alice's !push pushed bob's work")
	}

	r.say(th, bob, "!push", false)
	r.waitCount(th, "⬆️ pushed", 2)
	if got := r.remote.Files(t, rec.Branch)["b.txt"]; got != "b" {
		t.Errorf("b.txt on the remote = %q", got)
	}
	if lp, err := r.db.LastPush(r.ctx, rec.ID); err != nil || lp.Result != storage.PushOK || lp.Detail != "approved by Bob" {
		t.Errorf("last push %+v, %v; want it approved by Bob", lp, err)
	}
}

// The approval note names the files the model wrote: a name made to break
// out of its code span and mention everyone stays one span on one line.
func TestPushApprovalNoteKeepsFileNamesInCodeSpans(t *testing.T) {
	t.Parallel()
	r := newRig(t, approvePushes())
	th := testThread("95.4")
	args, _ := json.Marshal(map[string]string{"command": "printf 'a\\n' > 'x`<!channel> @here\ny.txt'"})
	r.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "b1", Name: "bash", Args: string(args)}),
		llmfake.TextReply("done"),
	)
	r.say(th, alice, "write it", true)
	r.waitText(th, "⏸️ Not pushed yet: 1 commit")
	want := "\n• `x'<!channel> @here?y.txt` +1 −0\nThe requester"
	if tr := r.chat.Transcript(th); !strings.Contains(tr, want) {
		t.Errorf("the approval note does not hold %q:\n%s", want, tr)
	}
}

// noWhispers is the in-process platform without private notes.
type noWhispers struct{ chat.Adapter }

// On a platform that cannot send a private note, a refusal is still
// answered, in the thread: the person is not left without a reply.
func TestARefusalIsAnsweredWhereNoPrivateNoteExists(t *testing.T) {
	t.Parallel()
	r := newRig(t, approvePushes(), func(_ *Config, p *Platform) { p.Adapter = noWhispers{p.Adapter} })
	r.llm.Push(writeThenAnswer("a.txt", "a", "I wrote a.txt.")...)
	th := testThread("95.9")
	r.say(th, alice, "write a.txt", true)
	r.waitText(th, "⏸️ Not pushed yet: 1 commit")
	r.say(th, bob, "!push", false)
	r.waitText(th, "only the person who asked for this work or an approver")
}
