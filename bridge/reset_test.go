package bridge

import (
	"slices"
	"testing"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// !reset during a run cancels the input queued for the old
// conversation, visibly (❌ instead of ⏳, listed in the thread) and for good
// (recorded as dropped, so a restart does not replay it into the new
// conversation). Before, ⏳ stayed and the row stayed queued.
func TestResetCancelsQueuedInputVisiblyAndForGood(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGate(t)
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		if slices.Contains(userTexts(req), "a long job") && !slices.Contains(userTexts(req), "fresh start") {
			g.hold()
			return llmfake.Stream(llmfake.Content("working"), llmfake.Hang())
		}
		return llmfake.TextReply("ok")
	})
	th := testThread("90.1")
	r.say(th, alice, "a long job", true)
	r.waitArrived(g)
	later := r.say(th, alice, "later please", false)
	r.waitUntil("the follow-up is queued with ⏳", func() bool {
		return slices.Contains(r.chat.Reactions(later), reactFollowUp)
	})
	g.release()

	r.say(th, alice, "!reset", false)
	r.waitText(th, "Cancelled 1 queued message")
	r.waitText(th, "later please")
	r.waitUntil("the follow-up shows ❌ instead of ⏳", func() bool {
		rs := r.chat.Reactions(later)
		return slices.Contains(rs, reactCancelled) && !slices.Contains(rs, reactFollowUp)
	})
	rec, _ := r.thread(th)
	pending, err := r.db.PendingInbound(r.ctx, rec.ID)
	if err != nil || len(pending) != 0 {
		t.Fatalf("pending input after !reset = %+v, %v; want none (a restart would replay it)", pending, err)
	}
	all, err := r.db.AllPendingInbound(r.ctx)
	if err != nil || len(all) != 0 {
		t.Fatalf("input a restart would replay = %+v, %v; want none", all, err)
	}

	r.say(th, alice, "fresh start", false)
	r.waitUntil("the new conversation runs", func() bool {
		reqs := r.requests()
		return len(reqs) > 0 && slices.Contains(userTexts(reqs[len(reqs)-1]), "fresh start")
	})
	if got := userTexts(r.lastRequest()); slices.Contains(got, "later please") || slices.Contains(got, "a long job") {
		t.Errorf("the new conversation got %q, want neither the old prompt nor the cancelled follow-up", got)
	}
}
