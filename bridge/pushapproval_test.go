package bridge

import (
	"slices"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
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
}

// In a repository that pushes by itself, !push says so and does nothing.
func TestPushCommandWithoutApproval(t *testing.T) {
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
