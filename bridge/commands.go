package bridge

// The chat commands (docs/behaviour.md §3) as one table: what people see of
// each (chat.CommandSpec: its word, help line, slash description and
// argument), how its input is routed, and its handler. The table feeds
// !help, input classification (classify), the answer in a thread without a
// session, the answers while a request waits for a run slot, and the
// commands an adapter registers (Commands). Handlers are in
// command_handlers.go. A new command is one entry here, its handler, and its
// test; no other code lists the commands.

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/storage"
)

// command is one entry of the table.
type command struct {
	chat.CommandSpec
	// mode is how its input is stored and routed:
	//   - ModeCommand: run answers it here; the model never sees it.
	//   - ModeSteer, ModeFollowUp: the words after the command word go to
	//     the model as that kind of input, starting a run when none goes on.
	//   - ModePrompt: the whole text is a request to the model (an input hook
	//     expands it), queued and run like a message: not a command.
	mode storage.InboundMode
	// run answers a ModeCommand command on the owner goroutine, with the
	// thread's session open. Work that takes long runs on a goroutine of
	// t.bg, and run returns.
	run func(t *thread, c commandCall)
	// noSession answers it in a thread that has no session yet (start says
	// how to start one); nil gives the common answer.
	noSession func(t *thread, start string) string
	// whileWaiting answers it at once while the thread's request waits for a
	// run slot, and reports whether it did; nil: it waits its turn.
	whileWaiting func(t *thread) bool
	// sessionless says the command needs no session: run answers it in a
	// thread whose session is not open, or that has none (commandCall.s is
	// nil then), without opening it; and sessionless itself answers it in
	// a thread the bridge has no record of, with the message to post ("":
	// none), off any thread.
	sessionless func(b *Bridge, ctx context.Context, p *platform, in chat.Inbound) string
	// unopened is sessionless for a thread of the bridge only: in a thread
	// it has no record of, the command is not answered.
	unopened bool
}

// commandCall is one use of a command.
type commandCall struct {
	ctx    context.Context
	s      *agent.Session
	args   string       // the text after the command word
	author chat.Author  // who typed it
	in     chat.Inbound // the input itself (a private answer goes to it)
}

// commands is the table, in !help's order. It is filled by init because the
// help handler reads it.
var commands []command

func init() {
	commands = []command{
		{
			CommandSpec: chat.CommandSpec{Name: "help", Help: "`!help` — this list", Description: "List the commands"},
			mode:        storage.ModeCommand,
			run:         (*thread).helpCommand,
			noSession:   func(*thread, string) string { return helpText("!") },
		},
		{
			CommandSpec: chat.CommandSpec{Name: "status",
				Help:        "`!status` — model, repository, branch, context used, queue, last push",
				Description: "Show model, repo, branch, context use, queue and last push"},
			mode:         storage.ModeCommand,
			run:          (*thread).statusCommand,
			whileWaiting: (*thread).statusWhileWaiting,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "stop",
				Help:        "`!stop` — stop the current run (queued messages stay queued)",
				Description: "Stop the current run (queued messages stay queued)"},
			mode:         storage.ModeCommand,
			run:          (*thread).stopCommand,
			whileWaiting: (*thread).stopWhileWaiting,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "steer",
				Help:        "`!steer <text>` — tell me now: delivered at my next step; the tool calls I had planned for this step are skipped",
				Description: "Redirect the running agent at its next step",
				Arg:         &chat.CommandArg{Name: "text", Description: "What to tell it", Placeholder: "message", Required: true}},
			mode: storage.ModeSteer,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "followup",
				Help:        "`!followup <text>` — queue for when the current run ends",
				Description: "Queue a message for when the current run ends",
				Arg:         &chat.CommandArg{Name: "text", Description: "The message", Placeholder: "message", Required: true}},
			mode: storage.ModeFollowUp,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "compact",
				Help:        "`!compact [focus]` — summarize older history now; the focus steers the summary",
				Description: "Compact the conversation to free context",
				Arg:         &chat.CommandArg{Name: "focus", Description: "What the summary should keep", Placeholder: "text"}},
			mode: storage.ModeCommand,
			run:  (*thread).compactCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "diff",
				Help:        "`!diff` — this thread's changes against the default branch (the full patch as a file)",
				Description: "Show the branch's changes against the default branch"},
			mode: storage.ModeCommand,
			run:  (*thread).diffCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "reset",
				Help:        "`!reset` — start a new conversation on the same branch (the old one is kept)",
				Description: "Start a new session on this thread and branch"},
			mode: storage.ModeCommand,
			run:  (*thread).resetCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "model",
				Help:        "`!model [name]` — list the models, or switch this thread to one",
				Description: "List the models, or switch this session's model",
				Arg:         &chat.CommandArg{Name: "name", Description: "Model name (leave out to list the models)", Placeholder: "model"}},
			mode:      storage.ModeCommand,
			run:       (*thread).modelCommand,
			noSession: (*thread).modelWithoutSession,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "repo",
				Help:        "`!repo [name]` — choose this thread's repository, or change it before its first push (alone: the menu)",
				Description: "Choose or change this thread's repository before its first push",
				Arg:         &chat.CommandArg{Name: "name", Description: "Repository name (leave out for the menu)", Placeholder: "repo"}},
			mode:     storage.ModeCommand,
			run:      (*thread).repoCommand,
			unopened: true,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "tools",
				Help:        "`!tools` — the tools I have here, built in and from MCP servers",
				Description: "List the tools this session has, built in and from MCP servers"},
			mode: storage.ModeCommand,
			run:  (*thread).toolsCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "pr",
				Help:        "`!pr` — this thread's pull request (opened now if the branch has none)",
				Description: "Show this thread's pull request (opened now if the branch has none)"},
			mode: storage.ModeCommand,
			run:  (*thread).prCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "push",
				Help:        "`!push` — push the commits waiting for approval (repositories with `push: approve`; the requester or an approver)",
				Description: "Push the commits waiting for approval"},
			mode: storage.ModeCommand,
			run:  (*thread).pushCommand,
		},
		{
			// A request to the model, made read-only (plan.go).
			CommandSpec: chat.CommandSpec{Name: "plan",
				Help:        "`!plan <request>` — look around read-only and propose a plan, to approve, revise or cancel before I change anything",
				Description: "Propose a plan (read-only) to approve before any change",
				Arg:         &chat.CommandArg{Name: "request", Description: "What to plan", Placeholder: "request", Required: true}},
			mode: storage.ModePrompt,
		},
		{
			// Starts the approved plan's run (plan.go).
			CommandSpec: chat.CommandSpec{Name: "approve",
				Help:        "`!approve` — carry out the plan waiting (the requester or an approver)",
				Description: "Carry out the plan waiting for approval"},
			mode: storage.ModePrompt,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "revise",
				Help:        "`!revise` — make the plan again with your next message as feedback (the requester or an approver)",
				Description: "Make the plan again with your next message as feedback"},
			mode: storage.ModeCommand,
			run:  (*thread).reviseCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "cancel",
				Help:        "`!cancel` — drop the plan waiting for approval (the requester or an approver)",
				Description: "Drop the plan waiting for approval"},
			mode: storage.ModeCommand,
			run:  (*thread).cancelCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "link",
				Help:        "`!link` — a fresh link to this session's web page (everything it did, in full)",
				Description: "A fresh link to this session's web page"},
			mode: storage.ModeCommand,
			run:  (*thread).linkCommand,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "sessions",
				Help:        fmt.Sprintf("`!sessions` — your last %d sessions here: state, repository, branch, last activity, cost and links", sessionsShown),
				Description: fmt.Sprintf("List your last %d sessions with their state, repo, branch, activity, cost and links", sessionsShown)},
			mode:        storage.ModeCommand,
			run:         (*thread).sessionsCommand,
			sessionless: (*Bridge).answerSessions,
		},
		{
			CommandSpec: chat.CommandSpec{Name: "schedules",
				Help:        "`!schedules` — the configured schedules and when each fires next",
				Description: "List the configured schedules and when each fires next"},
			mode: storage.ModeCommand,
			run:  (*thread).schedulesCommand,
			sessionless: func(b *Bridge, _ context.Context, _ *platform, _ chat.Inbound) string {
				return b.schedulesText()
			},
		},
		{
			// A request to the model, expanded by an input hook (reviewInput).
			CommandSpec: chat.CommandSpec{Name: "review",
				Help:        "`!review` — give me the pull request's new review comments to address",
				Description: "Give the agent the pull request's new review comments to address"},
			mode: storage.ModePrompt,
		},
	}
}

// Commands returns the chat commands as people see them, in !help's order,
// for an adapter to register (Discord's slash commands).
func Commands() []chat.CommandSpec {
	out := make([]chat.CommandSpec, len(commands))
	for i, c := range commands {
		out[i] = c.CommandSpec
		out[i].Input = c.mode != storage.ModeCommand
	}
	return out
}

// answeredUnopened says c (nil: none) is answered in a thread whose session
// is not open, without opening it (sessionless, unopened).
func (c *command) answeredUnopened() bool {
	return c != nil && (c.sessionless != nil || c.unopened)
}

// lookupCommand is the table's entry named name, or nil.
func lookupCommand(name string) *command {
	for i := range commands {
		if commands[i].Name == name {
			return &commands[i]
		}
	}
	return nil
}

// behavior is how a ModeSteer or ModeFollowUp command's words reach the
// session.
func (c *command) behavior() agent.Behavior {
	if c.mode == storage.ModeFollowUp {
		return agent.BehaviorFollowUp
	}
	return agent.BehaviorSteer
}

// runCommand runs cmd's handler for pi on the owner goroutine. A handler that
// panics is logged and the thread is told the command failed; the owner
// goes on.
func (t *thread) runCommand(ctx context.Context, cmd *command, pi *pendingInput, args string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			t.log.Error("command panicked", "command", cmd.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("command %s failed", cmd.Name)
		}
	}()
	cmd.run(t, commandCall{ctx: ctx, s: t.sess, args: args, author: pi.in.Author, in: pi.in})
	return nil
}

func helpText(prefix string) string {
	var b strings.Builder
	b.WriteString("I'm a coding agent working on this thread's branch. Tell me what to do in plain words; while I work, messages you send are queued for when I'm done (or use `!steer` to change course now). Commands:")
	for _, c := range commands {
		b.WriteString("\n• " + strings.ReplaceAll(c.Help, "`!", "`"+prefix))
	}
	b.WriteString("\nAfter every run that changes files I commit and push them to the thread's branch.")
	return b.String()
}

// mistypedCommand says whether text, which starts with the command word
// name that is in no entry of the table, is `!word` all the same: a typo of
// one should not become a request to the model. Anything that is not a plain
// word is text.
func mistypedCommand(text, name string) bool {
	if !strings.HasPrefix(strings.TrimSpace(text), "!") || name == "" {
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

// noSessionReply answers a command in a thread that has no session yet. In
// the console there is no one to mention.
func (t *thread) noSessionReply(name string) string {
	start := "mention me with a request"
	if t.ref.Platform == "console" {
		start = "type a request"
	}
	if c := lookupCommand(name); c != nil && c.noSession != nil {
		return c.noSession(t, start)
	}
	return "Nothing is running in this thread yet: " + start + " to start."
}
