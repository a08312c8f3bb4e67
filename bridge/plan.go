package bridge

// Plan mode. `!plan <request>` (and, in a repository with Approval.Plan,
// every new request) runs the agent read-only: the session is offered only
// the built-in tools that write nothing (tools.ReadOnly: no write, no edit,
// no MCP server's tool; a call to them anyway is "not found"), and bash sees
// the worktree read-only in the sandbox. The run's answer is the plan; its
// status message gets Approve, Revise and Cancel (!approve, !revise,
// !cancel), and nothing is committed or pushed after it. While the plan
// waits:
//   - Approve (the requester or an approver) starts the work, a run told to
//     carry out the plan above, with the session's own tools back.
//   - A message for the model is feedback: the agent plans again, read-only,
//     with the message. Revise says so in the thread (and records who asked).
//   - Cancel (the requester or an approver) drops the plan; a plan run still
//     going is stopped.
//
// Others who click get the private refusal note. Each decision is recorded
// (storage.Decision) with who made it; what waits is read back from those
// records after a restart, so Approve on the old message still works.

import (
	"context"
	"fmt"
	"strings"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/storage"
)

// planning is the thread's plan mode: the plan being made or waiting for a
// decision, and the session's own tools while a plan run has the read-only
// ones (plan.go only).
type planning struct {
	plan       *planState
	planLoaded bool // plan was read from the thread's decisions
	planTools  *heldTools
}

// planState is a plan being made or waiting for a decision.
type planState struct {
	sessionID string      // the session it was made in: a !reset drops it
	requester chat.Author // who asked for it
	request   string      // what for
	making    int64       // the inbound id of the plan run going on; 0: the plan waits
	revising  bool        // someone asked to revise it: the next message is feedback
}

// heldTools are a session's own tools, set aside while a plan run has the
// read-only ones.
type heldTools struct {
	sess    *agent.Session
	tools   []agent.Tool
	inbound int64 // the plan run's input
}

// planActions are the buttons of a plan that waits for a decision.
var planActions = []chat.Action{
	{ID: "approve", Label: "Approve"},
	{ID: "revise", Label: "Revise"},
	{ID: "cancel", Label: "Cancel", Danger: true},
}

// maxPlanRequest caps the request a plan's record keeps.
const maxPlanRequest = 4000

// planKind is what input for the model becomes in plan mode.
type planKind int

const (
	planNone     planKind = iota // a run as any
	planMake                     // a read-only run that makes (or remakes) a plan
	planCarryOut                 // the approved plan's work
)

// planStep is input for the model as plan mode sees it.
type planStep struct {
	kind      planKind
	requester chat.Author // planMake: who asked for the plan
	request   string      // what the run is for (its commit message, its title)
	feedback  bool        // planMake: the text is feedback on the plan waiting
	approver  string      // planCarryOut: who approved
}

// prompt is the text the model gets for input text in this step.
func (s planStep) prompt(text string) string {
	const readOnly = "Your tools are read-only for this: look around the repository as you need (read, grep, find, ls, bash), but change no file; the work starts only once the plan is approved."
	switch s.kind {
	case planMake:
		if s.feedback {
			return "Revise your plan above with this feedback, and answer with the whole revised plan; do not carry it out. " + readOnly + "\n\nFeedback:\n" + text
		}
		return "Make a plan for the request below; do not carry it out. " + readOnly +
			" Answer with the plan: the steps, the files each one changes, how you will check the work, and any question that must be settled first. It is then approved, revised or cancelled in the thread.\n\nRequest:\n" + text
	case planCarryOut:
		return fmt.Sprintf("%s approved your plan. Carry out the plan above now: your tools can change files again.", s.approver)
	}
	return text
}

// currentPlan is the plan being made or waiting in the thread's session, or
// nil; the first call of an owner reads it from the thread's decisions.
func (t *thread) currentPlan(ctx context.Context) *planState {
	if !t.planLoaded && t.sess != nil {
		t.planLoaded = true
		t.plan = t.loadPlan(ctx)
	}
	if t.plan != nil && (t.sess == nil || t.plan.sessionID != t.sess.ID()) {
		t.plan = nil // another conversation (!reset) began since
	}
	return t.plan
}

// loadPlan reads from the thread's decisions the plan that waits: the last
// one offered, unless approved or cancelled since.
func (t *thread) loadPlan(ctx context.Context) *planState {
	ds, err := t.b.cfg.Store.ThreadDecisions(ctx, t.rec.ID)
	if err != nil {
		t.log.Warn("reading the thread's decisions", "err", err)
		return nil
	}
	var p *planState
	for _, d := range ds {
		switch d.Kind {
		case storage.DecisionPlan:
			p = &planState{sessionID: d.SessionID, requester: chat.Author{ID: d.UserID, Name: d.UserName}, request: d.Detail}
		case storage.DecisionRevise:
			if p != nil {
				p.revising = true
			}
		case storage.DecisionApprove, storage.DecisionCancel:
			p = nil
		}
	}
	return p
}

// recordDecision adds a decision to the session's record.
func (t *thread) recordDecision(kind storage.DecisionKind, who chat.Author, detail string) {
	d := storage.Decision{ThreadID: t.rec.ID, Kind: kind, UserID: who.ID, UserName: who.Name, Detail: detail}
	if t.sess != nil {
		d.SessionID = t.sess.ID()
	}
	if _, err := t.b.cfg.Store.RecordDecision(t.b.ctx, d); err != nil {
		t.log.Warn("recording a decision", "kind", kind, "err", err)
	}
}

// planRoute decides what input for the model (c.startsRun) becomes in plan
// mode, on the owner before deliver gives it to the session. ok is false when
// it was answered here (nothing to approve, or a refusal): its run slot is
// given back and it is recorded as delivered.
func (t *thread) planRoute(pi *pendingInput, c inputClass, slot bool) (step planStep, ok bool) {
	if !c.startsRun || c.name == "review" {
		// A pull request's review comments address work already approved.
		return planStep{}, true
	}
	p := t.currentPlan(t.b.ctx)
	_, args := commandWord(pi.in.Text)
	request := pi.in.Text
	if c.command || c.name == "plan" {
		request = args // !steer, !followup and !plan: the words after them
	}
	switch {
	case c.name == "approve":
		return t.approvePlan(pi, p, slot)
	case c.name == "plan" && strings.TrimSpace(args) == "" && len(pi.in.Attachments) == 0:
		t.answerHere(pi, slot, "📝 Say what to plan: `!plan <request>`.")
		return planStep{}, false
	case t.running():
		if c.name == "plan" {
			// A plan starts the next run, not this one.
			if slot {
				t.releaseSlot()
			}
			t.hold(pi)
			return planStep{}, false
		}
		return planStep{}, true // joins the run going on
	case c.name == "plan":
		if p != nil {
			t.offer(nil) // a new plan takes the place of the one waiting
		}
		return planStep{kind: planMake, requester: pi.in.Author, request: planRequest(request)}, true
	case p != nil && p.making == 0:
		// A message while a plan waits is feedback on it.
		if !p.revising {
			t.recordDecision(storage.DecisionRevise, pi.in.Author, planRequest(request))
		}
		t.offer(nil)
		return planStep{kind: planMake, requester: p.requester, request: p.request, feedback: true}, true
	case t.approval().Plan:
		return planStep{kind: planMake, requester: pi.in.Author, request: planRequest(request)}, true
	}
	return planStep{}, true
}

// planRequest is a request as a plan's record keeps it: trimmed and capped
// at maxPlanRequest runes (its lines kept).
func planRequest(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxPlanRequest {
		s = string(r[:maxPlanRequest]) + "…"
	}
	return s
}

// approvePlan answers !approve (the Approve button): the requester or an
// approver starts the plan's work; anyone else is told privately that they
// may not.
func (t *thread) approvePlan(pi *pendingInput, p *planState, slot bool) (planStep, bool) {
	switch {
	case p != nil && p.making != 0:
		t.answerHere(pi, slot, "📝 The plan is still being made: approve it once it is posted.")
	case p == nil:
		t.answerHere(pi, slot, "📝 No plan waits for approval here: `!plan <request>` makes one.")
	case t.running():
		t.answerHere(pi, slot, "⏳ A run goes on: approve the plan once it has ended.")
	case !t.mayDecide(pi.in, p):
		t.answerHere(pi, slot, "")
	default:
		who := pi.in.Author
		t.recordDecision(storage.DecisionApprove, who, "")
		t.plan = nil
		t.offer(nil)
		name := displayName(who)
		t.say("✅ Plan approved by `" + codeSafe(name) + "`: I carry it out now.")
		return planStep{kind: planCarryOut, request: p.request, approver: headerName(name)}, true
	}
	return planStep{}, false
}

// answerHere answers input for the model that does not reach it: its slot is
// given back, it is recorded as delivered (a restart must not replay it), and
// text, if any, is told in the thread.
func (t *thread) answerHere(pi *pendingInput, slot bool, text string) {
	if slot {
		t.releaseSlot()
	}
	t.markInbound(pi.id, storage.InboundDelivered, "")
	if text == "" {
		text = "…"
		if t.pendingStatus == nil {
			return
		}
	}
	if !t.endPendingStatus(text) {
		t.say(text)
	}
}

// mayDecide says whether the author of in may approve, revise or cancel p:
// its requester or an approver of the repository. Anyone else is told
// privately that they may not.
func (t *thread) mayDecide(in chat.Inbound, p *planState) bool {
	if in.Author.ID == p.requester.ID || t.approves(t.rec.Repo, in.Author.ID) {
		return true
	}
	t.log.Info("refused a plan decision by someone who neither asked for the plan nor approves it", "user", in.Author.ID)
	t.whisper(in, "Sorry, only the person who asked for this plan or an approver of this repository can approve, revise or cancel it.")
	return false
}

// displayName is how the thread names a person.
func displayName(a chat.Author) string {
	if a.Name != "" {
		return a.Name
	}
	return a.ID
}

// planStarting gives the session its read-only tools for a plan run about
// to start with input inbound.
func (t *thread) planStarting(inbound int64) {
	s := t.sess
	own := s.Tools()
	t.planTools = &heldTools{sess: s, tools: own, inbound: inbound}
	s.SetTools(tools.ReadOnly(own, t.tws, tools.Options{Secrets: t.b.cfg.Secrets, Logger: t.log}))
}

// planStarted records the plan being made by the run Start just started.
func (t *thread) planStarted(step planStep, inbound int64) {
	t.plan = &planState{sessionID: t.sess.ID(), requester: step.requester, request: step.request, making: inbound}
}

// giveToolsBack returns the session its own tools after a plan run (or one
// that did not start), with the MCP servers' current tools.
func (t *thread) giveToolsBack() {
	h := t.planTools
	if h == nil {
		return
	}
	t.planTools = nil
	h.sess.SetTools(h.tools)
	if t.mcp != nil && h.sess == t.sess {
		t.refreshTools()
	}
}

// planRunEnded runs when run r ended, after its transcript: a plan run gets
// the session's tools back and, when it finished, its plan waits for a
// decision with the buttons on its status message. It reports whether r was
// a plan run (its work is neither committed nor pushed).
func (t *thread) planRunEnded(r *activeRun, outcome storage.RunOutcome) bool {
	h := t.planTools
	if h == nil || h.inbound != r.inboundID {
		return false
	}
	t.giveToolsBack()
	p := t.plan
	if p == nil || p.making != r.inboundID {
		return true // cancelled meanwhile
	}
	if outcome != storage.RunDone {
		t.plan = nil
		t.say("📝 The plan was not finished, so nothing waits for approval: `!plan <request>` asks again.")
		return true
	}
	p.making, p.revising = 0, false
	t.recordDecision(storage.DecisionPlan, p.requester, p.request)
	t.offer(planActions)
	t.say(fmt.Sprintf("📝 Plan ready for `%s`'s request. **Approve** carries it out, **Revise** (or any message here) makes it again with your feedback, **Cancel** drops it — or `!approve`, `!revise`, `!cancel`. The requester or an approver of this repository decides.", codeSafe(displayName(p.requester))))
	return true
}

// reviseCommand answers !revise (the Revise button): the next message is
// feedback on the plan waiting.
func (t *thread) reviseCommand(c commandCall) {
	p := t.currentPlan(c.ctx)
	switch {
	case p == nil:
		t.say("📝 No plan waits for approval here: `!plan <request>` makes one.")
	case p.making != 0:
		t.say("📝 The plan is still being made: revise it once it is posted.")
	case t.mayDecide(c.in, p):
		if !p.revising {
			t.recordDecision(storage.DecisionRevise, c.author, "")
			p.revising = true
		}
		t.say("✏️ `" + codeSafe(displayName(c.author)) + "` asked for a revision: tell me what to change in your next message here, and I plan again.")
	}
}

// cancelCommand answers !cancel (the Cancel button): the plan waiting is
// dropped, a plan run going on is stopped.
func (t *thread) cancelCommand(c commandCall) {
	p := t.currentPlan(c.ctx)
	if p == nil {
		t.say("📝 No plan waits for approval here: nothing to cancel.")
		return
	}
	if !t.mayDecide(c.in, p) {
		return
	}
	t.recordDecision(storage.DecisionCancel, c.author, "")
	if p.making != 0 {
		t.stopRun(nil)
	}
	t.plan = nil
	t.offer(nil)
	t.say("🚫 Plan cancelled by `" + codeSafe(displayName(c.author)) + "`.")
}
