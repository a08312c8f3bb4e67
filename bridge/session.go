package bridge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// baseSystemPrompt is what every session starts from; the thread's context is
// added before each prompt by the bridge's before_agent_start hook.
var baseSystemPrompt = `You are threadsmith, a coding agent that works in a chat thread on a git repository. People in the thread ask you to read, change, build and test code; you do it with your tools and report back in the thread.

` + tools.PromptGuide() + `

How to work:
- Explore before you change: read the relevant files and conventions first, then make focused changes that match the code around them.
- Verify your work: build and run the tests that cover what you changed, and say what you ran and what happened.
- Keep the working tree in a state you would commit. When a run ends, the bot commits everything you changed to this thread's branch and pushes it for review, so do not run git commit, git push, or create or switch branches yourself.
- Paths are relative to the repository root. Files people share with you are saved outside the repository; their paths are given with the message.
- If a request is ambiguous or risky, ask a short question instead of guessing.

Writing in the thread:
- Be concise: people read you in a chat. Lead with the answer or the result, then the details that matter.
- Use Markdown: short paragraphs, bullet lists, inline code for names, fenced code blocks (with a language) for code and command output. No tables, no HTML.
- Never paste whole files or long logs; quote the few relevant lines.`

// open prepares the thread's workspace and session (creating the session on
// the first message, reloading it from storage otherwise).
func (t *thread) open(ctx context.Context, in chat.Inbound) error {
	b := t.b
	ws, err := t.openWorkspace(ctx)
	if err != nil {
		return err
	}
	if t.rec.WorkspacePath != ws.Root() || t.rec.Branch != ws.Branch() {
		if err := b.cfg.Store.SetThreadWorkspace(ctx, t.rec.ID, storage.ThreadInit{Repo: ws.Repo(), Branch: ws.Branch(), WorkspacePath: ws.Root()}); err != nil {
			t.log.Warn("recording the workspace", "err", err)
		}
		t.rec.Branch, t.rec.WorkspacePath = ws.Branch(), ws.Root()
	}
	quota := b.cfg.Agent.DiskQuota
	// Called by the tool that met the quota, off the owner: the thread is
	// told through its inbox.
	quota.Notify = func(n tools.QuotaNotice) {
		t.log.Warn("disk quota", "limit", n.Limit, "bytes", n.Usage.Bytes, "files", n.Usage.Files, "free", n.Free)
		t.post(msgSay{n.Message()})
	}
	tws, err := tools.NewWorkspace(tools.WorkspaceConfig{
		Quota:       quota,
		Root:        ws.Root(),
		Scratch:     ws.ScratchDir(),
		BashTimeout: b.cfg.Agent.BashTimeout,
		Env:         b.cfg.Agent.BashEnv,
		GitName:     b.cfg.Agent.GitName,
		GitEmail:    b.cfg.Agent.GitEmail,
		Sandbox:     b.cfg.Sandbox,
		// The repository's build and package caches, shared by its threads
		// only (docs/behaviour.md §8).
		Cache: ws.CacheDir(),
		// Read-only git metadata, so that git status/diff/log work inside:
		// the thread's own repository and the remote's objects, nothing of
		// other threads.
		Mounts: func() []sandbox.Mount {
			var ms []sandbox.Mount
			for _, p := range ws.ReadOnlyGitPaths() {
				ms = append(ms, sandbox.Mount{Path: p, Access: sandbox.ReadOnly})
			}
			return ms
		},
	})
	if err != nil {
		return err
	}
	t.tws = tws
	t.openMCP(ctx)

	if t.rec.SessionID == "" {
		if err := t.newConversation(ctx); err != nil {
			return err
		}
		t.addHistory(ctx, in)
	} else if err := t.startSession(ctx, t.rec.SessionID, true); err != nil {
		return err
	}
	t.noteLastPush(ctx)
	return nil
}

// openWorkspace opens the thread's workspace, unless it is open already
// (to push an interrupted run's work).
func (t *thread) openWorkspace(ctx context.Context) (*workspace.Workspace, error) {
	if t.ws != nil {
		return t.ws, nil
	}
	ws, err := t.b.cfg.Workspaces.Open(ctx, t.rec.Repo, wsKey(t.ref))
	if err != nil {
		return nil, err
	}
	t.ws = ws
	return ws, nil
}

// startSession creates the agent session with the given id, loading its
// entries when resume is set.
func (t *thread) startSession(ctx context.Context, id string, resume bool) error {
	b := t.b
	cfg := b.cfg.Agent
	var entries []transcript.Entry
	if resume {
		es, err := b.cfg.Store.LoadLiveEntries(ctx, id)
		if err != nil {
			return err
		}
		entries = es
	}
	// The worktree's skills, templates and instructions are read here
	// (the owner's goroutine): through safefile, which neither waits on a
	// pipe nor follows a link, so none of them can hold the thread.
	res, rerr := agent.LoadResources(t.ws.Root(), cfg.SkillsDirs, cfg.PromptsDirs)
	if rerr != nil {
		t.log.Warn("loading skills and prompt templates", "err", rerr)
	}
	_, _, ierr := repoInstructions(t.ws.Root())
	if ierr != nil {
		t.log.Warn("reading the repository's instructions", "err", ierr)
	}
	if t.view == nil {
		t.view = newView(t.p.limit, t.p.measure, b.cfg.Now, b.redact)
	}
	// Told once a session start; each prompt after leaves the files out
	// without a word.
	if note := refusalNote(refusals(rerr, ierr)); note != "" {
		t.say(note)
	}
	models := make([]agent.ModelSpec, 0, 1+len(cfg.Models))
	for _, m := range append([]ModelInfo{cfg.Model}, cfg.Models...) {
		models = append(models, agent.ModelSpec{Name: m.Name, Provider: m.Provider, ContextWindow: m.ContextWindow, MaxTokens: m.MaxOutputTokens})
	}
	var sess *agent.Session // set before any prompt, when the hook reads its context
	sess, err := agent.New(agent.Config{
		ID:            id,
		Model:         b.cfg.Model,
		ModelName:     cfg.Model.Name,
		Models:        models,
		SystemPrompt:  baseSystemPrompt + instructions(cfg.Instructions),
		Tools:         t.sessionTools(),
		MaxTokens:     cfg.Model.MaxOutputTokens,
		ContextWindow: cfg.Model.ContextWindow,
		Store:         t.store,
		Entries:       entries,
		Extensions:    []agent.Extension{t.extension(func() []llm.Message { return sess.Messages() })},
		Resources:     res,
		SteerMode:     cfg.SteerMode,
		FollowUpMode:  cfg.FollowUpMode,
		Retry:         cfg.Retry,
		Compaction:    cfg.Compaction,
		Logger:        t.log,
		Now:           b.cfg.Now,
		Sleep:         b.cfg.Sleep,
		// An append while the database restarts waits for it; one the
		// disk has no room for gets the disk's reserve, or waits for room.
		StoreUnavailable: b.appendRepeatable,
	})
	if err != nil {
		return err
	}
	if t.sess != nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = t.sess.Close(cctx)
		cancel()
		t.unsubscribe()
	}
	t.sess = sess
	// The session's events reach the owner in the order it emitted them;
	// its Wait returns once they are all posted (so a run's end comes after
	// its events).
	t.unsubscribe = sess.Subscribe(func(ev agent.Event) { t.post(msgEvent{sess, ev}) })
	return nil
}

// newConversation starts a new session of the thread (its first, or one
// after !reset) on its workspace and branch.
func (t *thread) newConversation(ctx context.Context) error {
	s, err := t.b.cfg.Store.CreateSession(ctx, t.rec.ID, storage.SessionInit{Model: t.b.cfg.Agent.Model.Name, SystemPrompt: baseSystemPrompt})
	if err != nil {
		return err
	}
	t.rec.SessionID = s.ID
	return t.startSession(ctx, s.ID, false)
}

// moveTo makes repo the thread's repository (repopick.go): the session,
// its tools and the workspace of the repository it had are closed, that
// workspace's files are forgotten (the caller made sure none of its work
// matters: nothing of it was pushed), and the next input opens a fresh
// workspace of repo on the thread's branch, resuming the conversation.
func (t *thread) moveTo(ctx context.Context, repo string) error {
	branch := t.b.cfg.Workspaces.BranchFor(wsKey(t.ref))
	if err := t.b.cfg.Store.SetThreadWorkspace(ctx, t.rec.ID, storage.ThreadInit{Repo: repo, Branch: branch}); err != nil {
		return err
	}
	old := t.rec.Repo
	t.closeWork(ctx)
	if old != "" {
		if err := t.b.cfg.Workspaces.Forget(ctx, old, wsKey(t.ref)); err != nil {
			t.log.Warn("removing the workspace of the thread's former repository", "repo", old, "err", err)
		}
	}
	t.rec.Repo, t.rec.Branch, t.rec.WorkspacePath = repo, branch, ""
	return nil
}

// stopRendering stops the session's events from reaching the thread
// (another replica has it and shows it now).
func (t *thread) stopRendering() {
	if t.unsubscribe != nil {
		t.unsubscribe()
		t.unsubscribe = func() {}
	}
}

// sessionEvent runs on the owner for each event of session sess (the
// current one, or one a reset replaced): the view renders it, and the
// thread's run follows the session's: a run the session started by itself
// is adopted at its agent_start; every run ends when the session is idle
// (msgRunEnded, after all its events).
func (t *thread) sessionEvent(sess *agent.Session, ev agent.Event) {
	if !t.owned(context.Background(), 0) {
		return // another replica has the thread: it shows it now
	}
	// A reply without its cost is priced with the session's model.
	price := t.b.modelInfo(sess.ModelName()).Price
	t.showing(func(v *view) viewResult { return v.handle(ev, price) })
	switch ev := ev.(type) {
	case agent.AgentStart:
		if sess == t.sess && !t.running() {
			t.adoptRun()
		}
	case agent.Halted:
		if sess == t.sess {
			t.runHalted(ev.Reason)
		}
	case agent.PersistFailed:
		if !t.postGuard.lost() {
			t.log.Error("session entries were not stored", "count", ev.Entries, "err", ev.ErrorMessage)
			t.say("⚠️ I couldn't save part of this conversation; it is missing if I restart (the details are in the bot's log).")
		}
	}
	countEvent(t.b.cfg.Metrics, ev)
}

// hookState is what the session's before_agent_start hook, which runs off
// the owner, needs of the thread: taken on the owner (msgHook), by value.
type hookState struct {
	context string // the thread's context (context)
	root    string // the workspace's root, "" without one
	header  string // the request header (requestHeader)
	// runAuthor is who the run going on is for (its spend counts for them:
	// budget.go), "" when none is known.
	runAuthor string
}

// hookState answers a hook's msgHook. The owner takes it after the message
// it is handling, so a run started by deliver is recorded (StartRun) before
// the hook returns and the run's prompt, whose append marks the input
// delivered, is stored: a crash between the two would leave input delivered
// with no run to report as interrupted.
func (t *thread) hookState() hookState {
	st := hookState{context: t.context(), header: t.requestHeader()}
	if a, ok := t.runAuthor(); ok {
		st.runAuthor = a.ID
	} else if t.requester != nil {
		st.runAuthor = t.requester.ID
	}
	if t.ws != nil {
		st.root = t.ws.Root()
	}
	return st
}

// askOwner is the hook's side of msgHook: the thread's hookState, or the
// zero one when the owner ended or ctx (the run) ended first.
func (t *thread) askOwner(ctx context.Context) hookState {
	reply := make(chan hookState, 1)
	if !t.post(msgHook{reply}) {
		return hookState{}
	}
	select {
	case st := <-reply:
		return st
	case <-ctx.Done():
		return hookState{}
	}
}

func instructions(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return "\n\nInstructions from the operator of this bot:\n" + s
}

// extension is the chat's part of every session: the input hook (!review,
// markup, attribution) and the thread context added before each prompt. messages returns the
// session's context (what the model will see before the prompt).
func (t *thread) extension(messages func() []llm.Message) agent.Extension {
	x := agent.Extension{
		Name: "chat",
		BeforeAgentStart: func(ctx context.Context, ev agent.BeforeAgentStart) agent.BeforeAgentStartResult {
			// The run is recorded before its prompt is stored (hookState).
			st := t.askOwner(ctx)
			if st.context == "" {
				return agent.BeforeAgentStartResult{} // the thread ends
			}
			// The system prompt holds only what stays the same for the
			// session, so that every request extends the previous one and the
			// provider's prompt cache serves the history; who asks and the
			// date go into the conversation, when they change.
			prompt := ev.SystemPrompt + "\n\n" + st.context
			if st.root != "" {
				if name, text, err := repoInstructions(st.root); name != "" && err == nil {
					prompt += "\n\n" + text
				}
			}
			res := agent.BeforeAgentStartResult{SystemPrompt: prompt}
			// Told when the context does not carry it last: it changed, or
			// a compaction summarised it away.
			if h := st.header; h != lastRequestHeader(messages()) {
				res.Preface = []llm.Message{{Role: llm.RoleCustom, CustomType: requestHeaderType, Content: []llm.Content{llm.Text(h)}}}
			}
			return res
		},
	}
	if t.b.cfg.Budget.on() {
		x.BeforeModelCall = t.budgetHook(t.rec.ID, t.ref.Platform)
	}
	mc, _ := t.p.Adapter.(chat.MarkupConverter)
	x.Input = func(ctx context.Context, in agent.Input) agent.InputResult {
		if res, ok := t.reviewInput(ctx, in); ok {
			return res
		}
		text := in.Text
		if mc != nil {
			text = mc.PlainText(ctx, text)
		}
		text = t.attributed(text)
		if text == in.Text {
			return agent.InputResult{Action: agent.InputContinue}
		}
		return agent.InputResult{Action: agent.InputTransform, Text: text}
	}
	return x
}

// context describes the thread to the model: who asks, where, on what.
func (t *thread) context() string {
	var b strings.Builder
	b.WriteString("Context of this conversation:\n")
	fmt.Fprintf(&b, "- Platform: %s", platformTitle(t.ref.Platform))
	if t.ref.Platform == "slack" {
		b.WriteString(" (your Markdown is converted to Slack's format)")
	}
	if t.p.limit > 0 {
		fmt.Fprintf(&b, "; messages longer than %d characters are split", t.p.limit)
	}
	b.WriteString("\n")
	if t.ws != nil {
		fmt.Fprintf(&b, "- Repository: %s (default branch %s); you work on branch %s\n", t.ws.Repo(), t.ws.DefaultBranch(), t.ws.Branch())
	}
	b.WriteString("- Several people may write in the thread. A line like [Requested by NAME · DATE] before a request says who asked and today's date (UTC); it is repeated when either changes. A message that joins a request someone else made starts with [From NAME].")
	return b.String()
}

// requestHeaderType is the CustomType of the message that tells who asks and when.
const requestHeaderType = "request_header"

// requestHeader is the per-request part of the thread's context: who asked
// for the current prompt and today's date (UTC).
func (t *thread) requestHeader() string {
	date := t.b.cfg.Now().UTC().Format("2006-01-02")
	if a := t.requester; a != nil {
		if name := headerName(a.Name); name != "" {
			return "[Requested by " + name + " · " + date + "]"
		}
	}
	return "[" + date + "]"
}

// attributed is the input being handled (its author is the requester: the
// input hook runs inside Start on the owner, right after deliver sets it) as
// the model gets it: a message that joins a run someone else asked for
// starts with [From NAME], so that the model
// knows who says what; and a line of the person's own that looks like one
// of these headers (or the request header) is not one: its bracket becomes
// a parenthesis, so that nobody can speak as someone else.
func (t *thread) attributed(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " \t")
		if hasPrefixFold(trimmed, "[Requested by") || hasPrefixFold(trimmed, "[From ") || isDateHeader(trimmed) {
			lines[i] = l[:len(l)-len(trimmed)] + "(" + trimmed[1:]
		}
	}
	text = strings.Join(lines, "\n")
	if a, ok := t.runAuthor(); ok && t.requester != nil && a.ID != t.requester.ID {
		if name := headerName(t.requester.Name); name != "" {
			text = "[From " + name + "]\n" + text
		}
	}
	return text
}

// hasPrefixFold is strings.HasPrefix ignoring case: "[requested BY …]"
// reads as a header to the model too.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// isDateHeader reports whether s starts like the request header without a
// name: [YYYY-MM-DD].
func isDateHeader(s string) bool {
	if len(s) < 12 || s[0] != '[' || s[11] != ']' {
		return false
	}
	_, err := time.Parse("2006-01-02", s[1:11])
	return err == nil
}

// headerName is a display name as the request header tells it. The name is
// the person's to choose: brackets and line breaks in it could close the
// header and open another one naming someone else, so they do not reach it.
func headerName(name string) string {
	name = strings.Map(func(r rune) rune {
		switch r {
		case '[':
			return '('
		case ']':
			return ')'
		}
		return r
	}, name)
	return oneLine(strings.Join(strings.Fields(name), " "), 80)
}

// lastRequestHeader is the request header a context told last ("" for
// none), so that it is not repeated while the model still has it.
func lastRequestHeader(messages []llm.Message) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if m := messages[i]; m.Role == llm.RoleCustom && m.CustomType == requestHeaderType {
			return m.TextContent()
		}
	}
	return ""
}

func platformTitle(p string) string {
	switch p {
	case "slack":
		return "Slack"
	case "discord":
		return "Discord"
	case "console":
		return "a terminal"
	}
	return p
}

// addHistory gives the model the human conversation that happened in the
// thread before the bot was first mentioned there.
func (t *thread) addHistory(ctx context.Context, in chat.Inbound) {
	hr, ok := t.p.Adapter.(chat.HistoryReader)
	if !ok || in.MessageID == "" || in.MessageID == in.Thread.Thread {
		return
	}
	msgs, err := hr.History(ctx, t.ref, in.MessageID)
	if err != nil {
		t.log.Warn("reading the thread's earlier messages", "err", err)
		return
	}
	if len(msgs) == 0 {
		return
	}
	mc, _ := t.p.Adapter.(chat.MarkupConverter)
	var b strings.Builder
	b.WriteString("Earlier messages in this thread, before you were asked (oldest first):\n")
	for _, m := range msgs {
		name := m.Author.Name
		if name == "" {
			name = m.Author.ID
		}
		text := m.Text
		if mc != nil {
			text = mc.PlainText(ctx, text)
		}
		fmt.Fprintf(&b, "\n[%s, %s]\n%s\n", name, m.Time.UTC().Format("2006-01-02 15:04"), text)
	}
	t.sess.QueueNextTurn(llm.Message{Role: llm.RoleCustom, CustomType: "thread_history", Content: []llm.Content{llm.Text(b.String())}})
}

// modelInfo returns the configured model of that name (the main one if unknown).
func (b *Bridge) modelInfo(name string) ModelInfo {
	for _, m := range b.cfg.Agent.Models {
		if m.Name == name {
			return m
		}
	}
	return b.cfg.Agent.Model
}
