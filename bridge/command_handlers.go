package bridge

// The handlers of the chat commands in the table (commands.go). They run on
// the owner goroutine.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/safefile"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

func (t *thread) helpCommand(commandCall) { t.say(helpText("!")) }

func (t *thread) statusCommand(c commandCall) { t.say(t.statusText(c.ctx, c.s, c.author)) }

func (t *thread) linkCommand(commandCall) { t.say(t.linkText()) }

func (t *thread) toolsCommand(c commandCall) { t.say(t.toolsText(c.s)) }

// stopCommand ends the run going on; queued input stays queued and is listed.
func (t *thread) stopCommand(c commandCall) {
	s := c.s
	running := t.stopRun(nil)
	steer, follow := s.Queued()
	text := "⏹ stopped."
	if !running {
		text = "⏹ stopped — nothing was running."
	}
	if q := append(steer, follow...); len(q) > 0 {
		text += fmt.Sprintf("\nStill queued (%d), delivered with your next message:%s", len(q), quoteList(q))
	}
	t.say(text)
}

// stopWhileWaiting cancels the request waiting for a run slot, or ends the
// thread's wait for the model (thread_modelwait.go), before it starts
// (docs/behaviour.md §3), with what was parked behind it.
func (t *thread) stopWhileWaiting() bool {
	if t.awaiting {
		texts := t.dropModelWait(t.b.ctx)
		text := "⏹ stopped: I no longer wait for the model to answer this thread; send a message to ask again once it is back."
		if len(texts) > 0 {
			text += fmt.Sprintf("\nDropped (%d message%s):%s", len(texts), plural(len(texts)), quoteTexts(texts))
		}
		t.say(text)
		return true
	}
	cancelled := t.cancelWaiting()
	var texts []string
	for _, w := range cancelled {
		t.markInbound(w.id, storage.InboundDropped, "stopped before it started")
		texts = append(texts, w.in.Text)
	}
	t.endPendingStatus("⏹ stopped before it started.")
	t.say(fmt.Sprintf("⏹ stopped: the request waiting for a run slot was cancelled before it started (%d message%s):%s", len(texts), plural(len(texts)), quoteTexts(texts)))
	return true
}

// statusWhileWaiting answers !status for a thread waiting for a run slot or
// for the model before it has a session; with one, the full status says it
// waits.
func (t *thread) statusWhileWaiting() bool {
	if t.sess != nil {
		return false
	}
	if t.awaiting {
		t.say("📊 *Status*: " + t.modelWaitState())
		return true
	}
	t.say(fmt.Sprintf("📊 *Status*: waiting for a run slot (%d of %d busy; %d thread%s ahead)", t.b.slots.size, t.b.slots.size, t.b.slots.ahead(t), plural(t.b.slots.ahead(t))))
	return true
}

func (t *thread) compactCommand(c commandCall) {
	s, focus := c.s, c.args
	t.background(func() msgCommandDone {
		_, err := s.Compact(t.b.ctx, focus)
		switch {
		case err == nil:
		case errors.Is(err, compaction.ErrNothingToCompact):
			return msgCommandDone{say: "🗜️ Nothing to compact yet: the conversation is still short."}
		case errors.Is(err, agent.ErrRunActive):
			return msgCommandDone{say: "🗜️ " + agent.ErrRunActive.Error()}
		default:
			t.log.Warn("compaction failed", "err", err) // the thread heard it from the event
		}
		return msgCommandDone{}
	})
}

// diffCommand answers !diff: git works off the owner, the answer is posted
// on it (showDiff).
func (t *thread) diffCommand(commandCall) {
	if t.ws == nil {
		t.say("No workspace yet.")
		return
	}
	ws, ctx := t.ws, t.b.ctx
	t.background(func() msgCommandDone {
		d, err := ws.Diff(ctx)
		return msgCommandDone{diff: &diffResult{d, err}}
	})
}

func (t *thread) resetCommand(c commandCall) { t.reset(c.ctx) }

// modelCommand lists the models, or switches the session to the one named.
func (t *thread) modelCommand(c commandCall) {
	s, name := c.s, c.args
	if name == "" {
		t.say(t.modelList(s.ModelName()))
		return
	}
	if err := s.SetModel(name); err != nil {
		t.say("❌ " + userError(err))
		return
	}
	if err := t.b.cfg.Store.SetSessionModel(t.b.ctx, s.ID(), name); err != nil {
		t.log.Warn("recording the model", "err", err)
	}
	// The history carries over, converted for the new provider; its
	// prompt cache starts cold, so the next reply costs more once.
	info := t.b.modelInfo(name)
	provider := ""
	if info.Provider != "" {
		provider = " (" + info.Provider + ")"
	}
	t.say(fmt.Sprintf("🔀 This thread now uses `%s`%s. The conversation carries over; the next request is not served from the prompt cache.", name, provider))
}

// modelWithoutSession lists the models as !model does later, and says which
// one the first request starts with.
func (t *thread) modelWithoutSession(start string) string {
	first := t.b.cfg.Agent.Model.Name
	return t.modelLines(first) + fmt.Sprintf("\nNo conversation here yet: %s and I start with `%s`; then `!model <name>` switches it.", start, first)
}

// modelList answers `!model` without a name: the configured models with
// their provider and context window, the current one marked, and how to switch.
func (t *thread) modelList(current string) string {
	return t.modelLines(current) + "\nSwitch with `!model <name>`: the conversation carries over, and the first request after a switch is not served from the prompt cache."
}

// modelLines lists the configured models, current marked.
func (t *thread) modelLines(current string) string {
	var b strings.Builder
	b.WriteString("🤖 *Models*")
	seen := map[string]bool{}
	for _, m := range append([]ModelInfo{t.b.cfg.Agent.Model}, t.b.cfg.Agent.Models...) {
		if m.Name == "" || seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		provider := m.Provider
		if provider == "" {
			provider = "openai"
		}
		fmt.Fprintf(&b, "\n• `%s` — %s", m.Name, provider)
		if m.ContextWindow > 0 {
			fmt.Fprintf(&b, ", %s context", tokens(m.ContextWindow))
		}
		if m.Name == current {
			b.WriteString(" ← current")
		}
	}
	return b.String()
}

// statusText is the answer to !status asked by author.
func (t *thread) statusText(ctx context.Context, s *agent.Session, author chat.Author) string {
	st := s.Status()
	var b strings.Builder
	state := "idle"
	switch {
	case t.awaiting:
		state = t.modelWaitState()
	case t.waitingForSlot():
		state = fmt.Sprintf("waiting for a run slot (all %d busy)", t.b.slots.size)
	case st.Compacting:
		state = "compacting"
	case st.Running:
		state = "working"
	}
	fmt.Fprintf(&b, "📊 *Status*: %s\n", state)
	fmt.Fprintf(&b, "• Model: `%s`\n", st.Model)
	if t.ws != nil {
		fmt.Fprintf(&b, "• Repository: `%s` · branch `%s` (from `%s`)\n", t.ws.Repo(), t.ws.Branch(), t.ws.DefaultBranch())
		switch name, _, err := repoInstructions(t.ws.Root()); {
		case err != nil:
			if e, ok := safefile.Refused(err); ok {
				fmt.Fprintf(&b, "• Instructions: `%s` %s\n", codeSafe(name), strings.TrimPrefix(e.Error(), e.Path+" "))
			}
		case name != "":
			fmt.Fprintf(&b, "• Instructions: `%s`\n", name)
		}
	}
	fmt.Fprintf(&b, "• Context: %s of %s tokens (%d%%)\n", tokens(st.ContextTokens), tokens(st.ContextWindow), percent(st.ContextTokens, st.ContextWindow))
	if u, err := t.b.cfg.Store.ThreadUsage(ctx, t.rec.ID); err == nil && u.Replies > 0 {
		b.WriteString("• Usage" + usageLine(u))
	}
	if u, ok := t.lastRunUsage(ctx); ok && u.Replies > 0 {
		line := usageLine(u.Usage)
		if len(u.Models) > 0 {
			line = strings.TrimSuffix(line, "\n") + " · `" + strings.Join(u.Models, "`, `") + "`\n"
		}
		b.WriteString("• Last run" + line)
	}
	if author.ID != "" {
		if u, err := t.b.cfg.Store.UserUsage(ctx, t.ref.Platform, author.ID); err == nil && u.Replies > 0 {
			b.WriteString("• Your usage, all threads" + usageLine(u))
		}
	}
	b.WriteString(t.budgetLines(ctx, author.ID))
	q := append(st.Steer, st.FollowUp...)
	if len(q) == 0 {
		b.WriteString("• Queue: empty\n")
	} else {
		fmt.Fprintf(&b, "• Queue: %d steer, %d follow-up%s\n", len(st.Steer), len(st.FollowUp), quoteList(q))
	}
	if p, err := t.b.cfg.Store.LastPush(ctx, t.rec.ID); err == nil {
		when := t.b.cfg.Now().Sub(p.At).Round(time.Second)
		switch p.Result {
		case storage.PushOK:
			fmt.Fprintf(&b, "• Last push: `%s` @ `%s`, %s ago%s", p.Branch, shortSHA(p.SHA), when, t.unpushedNote(ctx))
		default:
			fmt.Fprintf(&b, "• Last push: failed %s ago (%s); retried after the next run", when, p.Detail)
		}
	} else {
		b.WriteString("• Last push: none yet")
	}
	if link := t.pageLink(); link != "" {
		b.WriteString("\n• Session page: [everything this thread did](" + link + ")")
	}
	return b.String()
}

// diffResult is what !diff's git work found.
type diffResult struct {
	d   workspace.DiffResult
	err error
}

// showDiff posts !diff's answer: the stat in the thread, the patch as a file.
func (t *thread) showDiff(r diffResult) {
	d, err := r.d, r.err
	if err != nil {
		t.say("❌ " + userError(err))
		return
	}
	t.say(diffStat(d, t.ws.Branch(), t.ws.DefaultBranch()))
	if len(d.Stat) == 0 || d.Patch == "" {
		return
	}
	name := strings.NewReplacer("/", "-").Replace(t.ws.Branch()) + ".diff"
	if _, ok := t.p.Adapter.(chat.Uploader); ok {
		comment := ""
		if d.Truncated {
			comment = "(the patch was cut at 4 MB)"
		}
		t.p.Outbox.Upload(t.ref, name, []byte(d.Patch), comment)
		return
	}
	t.say("```diff\n" + strings.TrimRight(d.Patch, "\n") + "\n```")
}

// reset starts a new session on the same thread and branch.
func (t *thread) reset(ctx context.Context) {
	if t.stopRun(ctx) {
		return
	}
	if t.sess != nil {
		// A compaction may hold the session: it stops first.
		t.sess.Abort()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = t.sess.Wait(wctx)
		cancel()
	}
	// Input still queued for the old conversation is cancelled, visibly (its
	// ⏳/↪️ becomes ❌ and the thread lists it) and for good: it is recorded
	// as dropped, so a restart does not replay it into the new conversation.
	var cancelled []llm.Message
	if t.sess != nil {
		steer, follow := t.sess.ClearQueue()
		cancelled = append(steer, follow...)
		t.cancelQueued(cancelled, "cancelled by !reset")
	}
	if err := t.newConversation(ctx); err != nil {
		t.say("❌ " + userError(err))
		return
	}
	text := "🆕 Started a new conversation on the same branch. The previous one is kept in the history."
	if len(cancelled) > 0 {
		text += fmt.Sprintf("\nCancelled %d queued message%s (send again what still matters):%s", len(cancelled), plural(len(cancelled)), quoteList(cancelled))
	}
	t.say(text)
}

// cancelQueued records queued input as dropped and swaps its queued reaction
// for ❌.
func (t *thread) cancelQueued(msgs []llm.Message, reason string) {
	for _, m := range msgs {
		if m.InputID == "" {
			continue
		}
		if id, err := strconv.ParseInt(m.InputID, 10, 64); err == nil {
			t.markInbound(id, storage.InboundDropped, reason)
		}
		ack, ok := t.takeAck(m.InputID)
		if ok && ack.messageID != "" {
			t.p.Outbox.React(t.ref, ack.messageID, ack.emoji, false)
			t.p.Outbox.React(t.ref, ack.messageID, reactCancelled, true)
		}
	}
}

// reactCancelled marks input that was queued and will never be delivered.
const reactCancelled = "x"

// lastRunUsage is the usage record of the thread's last ended run.
func (t *thread) lastRunUsage(ctx context.Context) (storage.RunUsage, bool) {
	all, err := t.b.cfg.Store.ThreadRunUsage(ctx, t.rec.ID)
	if err != nil || len(all) == 0 {
		return storage.RunUsage{}, false
	}
	last := int64(-1)
	for id := range all {
		last = max(last, id)
	}
	return all[last], true
}

// usageLine is the thread's totals for !status: every reply of every session
// the thread had, how much of the prompts the provider's cache served, and the
// cost where the models' prices are known.
func usageLine(u storage.Usage) string {
	replies := "replies"
	if u.Replies == 1 {
		replies = "reply"
	}
	line := fmt.Sprintf(": %s in (%d%% from cache), %s out over %d %s",
		tokens(int(u.Input+u.CacheRead+u.CacheWrite)), int(math.Round(100*u.CacheHitRate())), tokens(int(u.Output)), u.Replies, replies)
	if u.Cost > 0 {
		line += fmt.Sprintf(", $%.4f", u.Cost)
	}
	return line + "\n"
}
