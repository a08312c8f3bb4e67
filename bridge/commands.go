package bridge

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
)

// commandHelp lists the chat commands (docs/behaviour.md §3) with their help line.
var commandHelp = map[string]string{
	"help":     "`!help` — this list",
	"status":   "`!status` — model, repository, branch, context used, queue, last push",
	"stop":     "`!stop` — stop the current run (queued messages stay queued)",
	"steer":    "`!steer <text>` — tell me now: delivered at my next step; the tool calls I had planned for this step are skipped",
	"followup": "`!followup <text>` — queue for when the current run ends",
	"compact":  "`!compact [focus]` — summarize older history now; the focus steers the summary",
	"diff":     "`!diff` — this thread's changes against the default branch (the full patch as a file)",
	"reset":    "`!reset` — start a new conversation on the same branch (the old one is kept)",
	"model":    "`!model [name]` — list the models, or switch this thread to one",
	"tools":    "`!tools` — the tools I have here, built in and from MCP servers",
	"pr":       "`!pr` — this thread's pull request (opened now if the branch has none)",
	"link":     "`!link` — a fresh link to this session's web page (everything it did, in full)",
}

// reviewHelp is `!review`'s line: it is a request to the model (expanded by
// an input hook), not a command, so it queues and runs like a message.
const reviewHelp = "`!review` — give me the pull request's new review comments to address"

// commandOrder is the order !help lists them in.
var commandOrder = []string{"help", "status", "stop", "steer", "followup", "compact", "diff", "reset", "model", "tools", "pr", "link"}

func helpText(prefix string) string {
	var b strings.Builder
	b.WriteString("I'm a coding agent working on this thread's branch. Tell me what to do in plain words; while I work, messages you send are queued for when I'm done (or use `!steer` to change course now). Commands:")
	for _, name := range commandOrder {
		b.WriteString("\n• " + strings.ReplaceAll(commandHelp[name], "`!", "`"+prefix))
	}
	b.WriteString("\n• " + strings.ReplaceAll(reviewHelp, "`!", "`"+prefix))
	b.WriteString("\nAfter every run that changes files I commit and push them to the thread's branch.")
	return b.String()
}

// mistypedCommand says whether text, which starts with the command word
// name that is no command, is `!word` all the same: a typo of one should not
// become a request to the model. `!review` is a request (see reviewHelp) and
// anything that is not a plain word is text.
func mistypedCommand(text, name string) bool {
	if !strings.HasPrefix(strings.TrimSpace(text), "!") || name == "" || name == "review" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// unknownCommandReply answers a mistyped command.
func unknownCommandReply(name string) string {
	return fmt.Sprintf("Unknown command `!%s`: `!help` lists the commands. To ask me something, write it without the `!`.", name)
}

// noSessionReply answers a command in a thread that has no session yet.
// `!model` lists the models, as it does later, and says which one the
// first request starts with. In the console there is no one to mention.
func (t *thread) noSessionReply(name string) string {
	start := "mention me with a request"
	if t.ref.Platform == "console" {
		start = "type a request"
	}
	switch name {
	case "help":
		return helpText("!")
	case "model":
		first := t.b.cfg.Agent.Model.Name
		return t.modelLines(first) + fmt.Sprintf("\nNo conversation here yet: %s and I start with `%s`; then `!model <name>` switches it.", start, first)
	}
	return "Nothing is running in this thread yet: " + start + " to start."
}

// commands are the chat commands as session extension commands.
func (t *thread) commands() []agent.Command {
	cmd := func(name string, run func(ctx context.Context, s *agent.Session, args string) error) agent.Command {
		return agent.Command{Name: name, Description: commandHelp[name], Run: run}
	}
	return []agent.Command{
		cmd("help", func(context.Context, *agent.Session, string) error {
			t.say(helpText("!"))
			return nil
		}),
		cmd("status", func(ctx context.Context, s *agent.Session, _ string) error {
			t.say(t.statusText(ctx, s))
			return nil
		}),
		cmd("link", func(context.Context, *agent.Session, string) error {
			t.say(t.linkText())
			return nil
		}),
		cmd("tools", func(_ context.Context, s *agent.Session, _ string) error {
			t.say(t.toolsText(s))
			return nil
		}),
		cmd("pr", func(ctx context.Context, _ *agent.Session, _ string) error {
			t.prCommand(ctx)
			return nil
		}),
		cmd("stop", func(_ context.Context, s *agent.Session, _ string) error {
			running := s.IsRunning()
			if running {
				if t.run != nil {
					t.run.stopped = true
				}
				s.Abort()
			}
			steer, follow := s.Queued()
			text := "⏹ stopped."
			if !running {
				text = "⏹ stopped — nothing was running."
			}
			if q := append(steer, follow...); len(q) > 0 {
				text += fmt.Sprintf("\nStill queued (%d), delivered with your next message:%s", len(q), quoteList(q))
			}
			t.say(text)
			return nil
		}),
		cmd("steer", func(ctx context.Context, s *agent.Session, args string) error {
			return t.queueAs(ctx, s, args, agent.BehaviorSteer)
		}),
		cmd("followup", func(ctx context.Context, s *agent.Session, args string) error {
			return t.queueAs(ctx, s, args, agent.BehaviorFollowUp)
		}),
		cmd("compact", func(_ context.Context, s *agent.Session, focus string) error {
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
			return nil
		}),
		cmd("diff", func(context.Context, *agent.Session, string) error {
			t.background(func() msgCommandDone {
				t.postDiff(t.b.ctx)
				return msgCommandDone{}
			})
			return nil
		}),
		cmd("reset", func(ctx context.Context, s *agent.Session, _ string) error {
			// Replacing the session must wait until Start has returned.
			t.post(msgReset{ctx})
			return nil
		}),
		cmd("model", func(_ context.Context, s *agent.Session, name string) error {
			if name == "" {
				t.say(t.modelList(s.ModelName()))
				return nil
			}
			if err := s.SetModel(name); err != nil {
				t.say("❌ " + userError(err))
				return nil
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
			return nil
		}),
	}
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

// queueAs runs !steer and !followup given to the session itself (chat input
// is classified by handleInput, which starts them directly): the text goes to
// the model as that kind of input.
func (t *thread) queueAs(ctx context.Context, s *agent.Session, text string, b agent.Behavior) error {
	if strings.TrimSpace(text) == "" {
		return plainError{"say what: `!steer <text>` or `!followup <text>`"}
	}
	_, err := s.Start(ctx, text, agent.PromptOptions{Behavior: b})
	return err
}

// statusText is the answer to !status.
func (t *thread) statusText(ctx context.Context, s *agent.Session) string {
	st := s.Status()
	var b strings.Builder
	state := "idle"
	switch {
	case len(t.waiting) > 0:
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
	if pi := t.current; pi != nil && pi.in.Author.ID != "" {
		if u, err := t.b.cfg.Store.UserUsage(ctx, t.ref.Platform, pi.in.Author.ID); err == nil && u.Replies > 0 {
			b.WriteString("• Your usage, all threads" + usageLine(u))
		}
	}
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

// postDiff answers !diff: the stat in the thread, the patch as a file.
func (t *thread) postDiff(ctx context.Context) {
	if t.ws == nil {
		t.say("No workspace yet.")
		return
	}
	d, err := t.ws.Diff(ctx)
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

// reset starts a new session on the same thread and branch. A run going on
// is stopped and ends first, its events all shown (runEnded resets then).
func (t *thread) reset(ctx context.Context) {
	if r := t.run; r != nil {
		r.stopped = true
		r.resetAfter = ctx
		r.sess.Abort()
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
	s, err := t.b.cfg.Store.CreateSession(ctx, t.rec.ID, storage.SessionInit{Model: t.b.cfg.Agent.Model.Name, SystemPrompt: baseSystemPrompt})
	if err != nil {
		t.say("❌ " + userError(err))
		return
	}
	t.rec.SessionID = s.ID
	if err := t.startSession(ctx, s.ID, false); err != nil {
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
