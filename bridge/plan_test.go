package bridge

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

var carol = chatfake.Person{ID: "U3", Name: "Carol"}

// planRig is a rig whose platform has buttons, whose agent runs in the real
// sandbox, and whose repository's threads plan first when planFirst is set;
// carol approves.
func planRig(t *testing.T, planFirst bool, opts ...rigOption) (*rig, *buttonChat) {
	t.Helper()
	sb := sandboxtest.New(t, sandbox.Config{})
	var bc *buttonChat
	r := newRig(t, append([]rigOption{func(c *Config, p *Platform) {
		bc = &buttonChat{Adapter: p.Adapter.(*chatfake.Adapter), acts: map[string][]string{}}
		p.Adapter = bc
		c.Sandbox = sb
		c.Approvals = map[string]Approval{"app": {Plan: planFirst, Approvers: []string{carol.ID}}}
	}}, opts...)...)
	return r, bc
}

// plannedTools are the tools a plan run is offered.
var plannedTools = []string{"read", "bash", "grep", "find", "ls"}

func toolNames(req llmfake.Request) []string {
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// attackReply is the model, planning, trying to change the worktree anyway:
// with the tools it was not offered and with bash.
func attackReply() llmfake.Response {
	bash, _ := json.Marshal(map[string]string{"command": "echo planted > a.txt; echo more >> README.md; rm -f main.go; git commit -qam sneaky; echo tried"})
	return llmfake.ToolCallReply(
		llmfake.Call{ID: "p1", Name: "write", Args: `{"path":"a.txt","content":"planted\n"}`},
		llmfake.Call{ID: "p2", Name: "edit", Args: `{"path":"README.md","oldText":"# app","newText":"# hacked"}`},
		llmfake.Call{ID: "p3", Name: "bash", Args: string(bash)},
	)
}

// worktreeUnchanged fails t when the thread's worktree differs from the
// remote's main: a file changed, added or removed, or a commit made.
func worktreeUnchanged(t *testing.T, r *rig, th chat.ThreadRef) {
	t.Helper()
	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", rec.WorkspacePath, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("the worktree changed while planning: %s %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(rec.WorkspacePath, "README.md")); string(b) != "# app\n" {
		t.Errorf("README.md = %q", b)
	}
	out, err = exec.Command("git", "-C", rec.WorkspacePath, "rev-list", "--count", "HEAD", "--not", "--remotes").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("commits made while planning: %q %v", out, err)
	}
}

// waitButtons waits until a message of the thread carries exactly ids.
func waitButtons(r *rig, bc *buttonChat, th chat.ThreadRef, ids ...string) string {
	r.tb.Helper()
	var id string
	r.waitUntil("buttons "+strings.Join(ids, ","), func() bool {
		for _, m := range r.chat.Messages(th) {
			if slices.Equal(bc.buttons(m.ID), ids) {
				id = m.ID
				return true
			}
		}
		return false
	})
	return id
}

// planMessages counts the thread's messages with the plan's buttons.
func planMessages(r *rig, bc *buttonChat, th chat.ThreadRef) int {
	n := 0
	for _, m := range r.chat.Messages(th) {
		if slices.Contains(bc.buttons(m.ID), "approve") {
			n++
		}
	}
	return n
}

func decisions(t *testing.T, r *rig, th chat.ThreadRef) []string {
	t.Helper()
	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := r.db.ThreadDecisions(r.ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Kind)+":"+d.UserName)
	}
	return out
}

// A plan run is offered no tool that writes, and changes nothing on disk
// however the model tries; its plan carries Approve, Revise and Cancel. Bob,
// who neither asked nor approves, is refused privately; Alice's Approve
// starts the work with the plan in the conversation, and it is pushed.
func TestPlanIsReadOnlyAndApproveCarriesItOut(t *testing.T) {
	t.Parallel()
	r, bc := planRig(t, false)
	r.llm.Push(attackReply(), llmfake.TextReply("PLAN: 1. write a.txt"))
	th := testThread("130.1")
	r.say(th, alice, "!plan add a.txt", true)
	r.waitText(th, "📝 Plan ready for `Alice`'s request")
	status := waitButtons(r, bc, th, "approve", "revise", "cancel")

	reqs := r.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want the plan run's 2", len(reqs))
	}
	for _, req := range reqs {
		if got := toolNames(req); !slices.Equal(got, plannedTools) {
			t.Errorf("a plan request offers %v, want %v", got, plannedTools)
		}
	}
	if u := userTexts(reqs[0]); len(u) == 0 || !strings.Contains(u[len(u)-1], "Make a plan for the request below") || !strings.HasSuffix(u[len(u)-1], "Request:\nadd a.txt") {
		t.Errorf("the plan's prompt: %q", u)
	}
	var results []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 3 || !strings.Contains(results[0], "tool write not found") || !strings.Contains(results[1], "tool edit not found") {
		t.Errorf("tool results = %q, want write and edit not found", results)
	}
	worktreeUnchanged(t, r, th)
	rec, _ := r.thread(th)
	if slices.Contains(r.remote.Branches(t), rec.Branch) {
		t.Errorf("the plan run pushed %s", rec.Branch)
	}

	r.say(th, bob, "!approve", false)
	r.waitUntil("bob's note", func() bool { return len(r.chat.Whispers()) == 1 })
	if w := r.chat.Whispers()[0]; !strings.HasPrefix(w, bob.ID+": ") || !strings.Contains(w, "only the person who asked for this plan") {
		t.Errorf("note = %q, want bob's refusal", w)
	}
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*")
	if n := len(r.requests()); n != 2 {
		t.Fatalf("bob's !approve started a run: %d requests", n)
	}

	r.llm.Push(writeThenAnswer("a.txt", "a", "I wrote a.txt.")...)
	r.say(th, alice, chat.ActionText("approve"), false)
	r.waitText(th, "✅ Plan approved by `Alice`")
	r.waitText(th, "⬆️ pushed")
	work := r.requests()[2]
	if got := toolNames(work); !slices.Contains(got, "write") || !slices.Contains(got, "edit") {
		t.Errorf("the approved work is offered %v, want write and edit back", got)
	}
	u := userTexts(work)
	if len(u) == 0 || !strings.Contains(u[len(u)-1], "Alice approved your plan. Carry out the plan above now") {
		t.Errorf("the work's prompt: %q", u)
	}
	if !slices.ContainsFunc(work.Messages, func(m llmfake.Message) bool {
		return m.Role == "assistant" && strings.Contains(m.Content, "PLAN: 1. write a.txt")
	}) {
		t.Error("the plan is not in the approved run's context")
	}
	if got := r.remote.Files(t, rec.Branch)["a.txt"]; got != "a" {
		t.Errorf("a.txt on the remote = %q", got)
	}
	if got := bc.buttons(status); len(got) != 0 {
		t.Errorf("the plan still has buttons %v after Approve", got)
	}
	if got, want := decisions(t, r, th), []string{"plan:Alice", "approve:Alice"}; !slices.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
	r.say(th, alice, "!approve", false)
	r.waitText(th, "No plan waits for approval here")
}

// With approval: plan every new request plans first. Revise makes the next
// message feedback, and the agent plans again with it, read-only; an
// approver may approve; Cancel by the requester drops a plan and removes its
// buttons; then a new request plans first again.
func TestPlanFirstReviseAndCancel(t *testing.T) {
	t.Parallel()
	r, bc := planRig(t, true)
	r.llm.Push(llmfake.TextReply("PLAN A"))
	th := testThread("130.2")
	r.say(th, alice, "add a flag", true)
	r.waitText(th, "📝 Plan ready")
	waitButtons(r, bc, th, "approve", "revise", "cancel")

	r.say(th, bob, "!revise", false)
	r.waitUntil("bob's note", func() bool { return len(r.chat.Whispers()) == 1 })
	r.say(th, alice, "!revise", false)
	r.waitText(th, "✏️ `Alice` asked for a revision")

	r.llm.Push(llmfake.TextReply("PLAN B"))
	r.say(th, bob, "call it --verbose", false)
	r.waitCount(th, "📝 Plan ready", 2)
	r.flush()
	if n := planMessages(r, bc, th); n != 1 {
		t.Errorf("%d messages carry the plan's buttons after the revision, want the new plan's only", n)
	}
	req := r.lastRequest()
	if got := toolNames(req); !slices.Equal(got, plannedTools) {
		t.Errorf("the revision is offered %v, want %v", got, plannedTools)
	}
	u := userTexts(req)
	if len(u) == 0 || !strings.Contains(u[len(u)-1], "Revise your plan above with this feedback") || !strings.Contains(u[len(u)-1], "Feedback:\ncall it --verbose") {
		t.Errorf("the revision's prompt: %q", u)
	}
	worktreeUnchanged(t, r, th)

	r.say(th, alice, "!cancel", false)
	r.waitText(th, "🚫 Plan cancelled by `Alice`.")
	r.flush()
	for _, m := range r.chat.Messages(th) {
		if got := bc.buttons(m.ID); slices.Contains(got, "approve") {
			t.Errorf("message %s still has %v after Cancel", m.ID, got)
		}
	}
	r.say(th, carol, "!approve", false)
	r.waitText(th, "No plan waits for approval here")

	// A new request plans first again; carol, an approver, approves it.
	r.llm.Push(llmfake.TextReply("PLAN C"))
	r.say(th, bob, "add b.txt", false)
	r.waitCount(th, "📝 Plan ready", 3)
	r.llm.Push(writeThenAnswer("b.txt", "b", "I wrote b.txt.")...)
	r.say(th, carol, "!approve", false)
	r.waitText(th, "⬆️ pushed")
	if got, want := decisions(t, r, th), []string{"plan:Alice", "revise:Alice", "plan:Alice", "cancel:Alice", "plan:Bob", "approve:Carol"}; !slices.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
}

// What waits is read back from storage by a new owner (after an eviction, as
// after a restart): the requester's Approve then carries the plan out.
func TestPlanApproveAfterTheOwnerWasEvicted(t *testing.T) {
	t.Parallel()
	r, _ := planRig(t, false, func(c *Config, _ *Platform) { c.IdleEvict = 200 * time.Millisecond })
	r.llm.Push(llmfake.TextReply("PLAN: write c.txt"))
	th := testThread("130.3")
	r.say(th, alice, "!plan add c.txt", true)
	r.waitText(th, "📝 Plan ready")
	r.waitUntil("the owner's eviction", func() bool { return !r.live(th) })

	r.llm.Push(writeThenAnswer("c.txt", "c", "I wrote c.txt.")...)
	r.say(th, alice, "!approve", false)
	r.waitText(th, "✅ Plan approved by `Alice`")
	r.waitText(th, "⬆️ pushed")
	rec, _ := r.thread(th)
	if got := r.remote.Files(t, rec.Branch)["c.txt"]; got != "c" {
		t.Errorf("c.txt on the remote = %q", got)
	}
	if got, want := decisions(t, r, th), []string{"plan:Alice", "approve:Alice"}; !slices.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
}

// Cancel while the plan is being made stops its run: no plan waits after it,
// and the session has its own tools again. !plan sent while a run goes on
// waits for that run's end and then plans.
func TestPlanCancelWhileMakingAndPlanWhileRunning(t *testing.T) {
	t.Parallel()
	r, _ := planRig(t, false)
	g := newGate(t)
	var n atomic.Int32
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
		}
		return llmfake.TextReply("reply " + strings.Join(toolNames(req), ","))
	})
	th := testThread("130.4")
	r.say(th, alice, "!plan add d.txt", true)
	r.waitArrived(g)
	r.say(th, bob, "!cancel", false)
	r.waitUntil("bob's note", func() bool { return len(r.chat.Whispers()) == 1 })
	r.say(th, alice, "!cancel", false)
	r.waitText(th, "🚫 Plan cancelled by `Alice`.")
	g.release()
	r.waitRuns(th, 1)
	r.say(th, alice, "!approve", false)
	r.waitText(th, "No plan waits for approval here")

	// A request runs with every tool; a !plan sent meanwhile plans after it.
	g2 := newGate(t)
	n.Store(0)
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g2.hold()
		}
		return llmfake.TextReply("reply " + strings.Join(toolNames(req), ","))
	})
	r.say(th, alice, "what is in main.go?", false)
	r.waitArrived(g2)
	r.say(th, alice, "!plan add e.txt", false)
	g2.release()
	r.waitText(th, "📝 Plan ready")
	reqs := r.requests()
	last := reqs[len(reqs)-1]
	if got := toolNames(last); !slices.Equal(got, plannedTools) {
		t.Errorf("the held !plan was offered %v, want %v", got, plannedTools)
	}
	if got := toolNames(reqs[len(reqs)-2]); !slices.Contains(got, "write") {
		t.Errorf("the request before it was offered %v, want every tool (the cancelled plan gave them back)", got)
	}
	if got, want := decisions(t, r, th), []string{"cancel:Alice", "plan:Alice"}; !slices.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
}
