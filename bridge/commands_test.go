package bridge

import (
	"sort"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// writeThenAnswer scripts one run that writes path and then answers.
func writeThenAnswer(path, content, answer string) []llmfake.Response {
	args := `{"path":"` + path + `","content":"` + content + `\n"}`
	return []llmfake.Response{
		llmfake.ToolCallReply(llmfake.Call{ID: "w-" + path, Name: "write", Args: args}),
		llmfake.TextReply(answer),
	}
}

func TestCommandsInAThreadWithoutSession(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	th := testThread("50.1")
	r.say(th, alice, "!help", true)
	r.waitText(th, "Commands:")
	help := r.chat.Transcript(th)
	var names []string
	for _, c := range commands {
		if !strings.Contains(help, "`!"+c.Name) {
			t.Errorf("!help does not list !%s:\n%s", c.Name, help)
		}
		if c.mode != storage.ModePrompt {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	if got, want := names, []string{"cancel", "compact", "diff", "followup", "help", "link", "model", "pr", "push", "repo", "reset", "revise", "schedules", "sessions", "status", "steer", "stop", "tools"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("commands = %v, want docs/behaviour.md §3's, §2's (!revise, !cancel), §1's (!repo), !schedules and §9's (!tools, !link) %v", got, want)
	}

	// The thread is known now: later commands need no mention.
	r.say(th, alice, "!status", false)
	r.waitText(th, "Nothing is running in this thread yet")
	r.say(th, alice, "!diff", false)
	r.waitCount(th, "Nothing is running in this thread yet", 2)
	// A mistyped command is answered, not sent to the model; !model says how.
	r.say(th, alice, "!stauts", false)
	r.waitText(th, "Unknown command `!stauts`")
	// !model lists the models before the first request too, and says which
	// one the first request starts with.
	r.say(th, alice, "!model", false)
	r.waitText(th, "No conversation here yet: mention me with a request and I start with `"+mainModel+"`; then `!model <name>` switches it")
	r.waitText(th, "• `"+mainModel+"` — openai, 128k context ← current")

	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SessionID != "" || rec.WorkspacePath != "" {
		t.Errorf("commands alone created a session (%q) or a workspace (%q)", rec.SessionID, rec.WorkspacePath)
	}
	if n := len(r.requests()); n != 0 {
		t.Errorf("commands made %d LLM requests, want 0", n)
	}
	for _, b := range r.remote.Branches(t) {
		if strings.HasPrefix(b, "bot/") {
			t.Errorf("commands created branch %s", b)
		}
	}
}

func TestHelpAndStatusAfterARun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Push(writeThenAnswer("hello.txt", "hello world", "I wrote hello.txt.")...)
	th := testThread("51.1")
	r.say(th, alice, "add a hello file", true)
	r.waitText(th, "⬆️ pushed")
	r.waitRuns(th, 1)

	r.say(th, alice, "!help", false)
	r.waitText(th, "Commands:")
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*")

	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	sha := r.remote.Rev(t, "refs/heads/"+rec.Branch)
	if sha == "" {
		t.Fatalf("branch %s is not on the remote", rec.Branch)
	}
	var status string
	for _, s := range r.chat.BotTexts(th) {
		if strings.HasPrefix(s, "📊") {
			status = s
		}
	}
	for _, want := range []string{
		"📊 *Status*: idle",
		"• Model: `" + mainModel + "`",
		"• Repository: `app` · branch `" + rec.Branch + "` (from `main`)",
		"• Context: ",
		" of 128k tokens (",
		"• Queue: empty",
		"• Last push: `" + rec.Branch + "` @ `" + sha[:7] + "`",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("!status lacks %q:\n%s", want, status)
		}
	}
	if n := len(r.requests()); n != 2 {
		t.Errorf("LLM requests = %d, want 2 (commands make none)", n)
	}
}

func TestStatusListsTheQueueWhileBusy(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGate(t)
	r.llm.Handle(g.holdFirst(llmfake.TextReply("done")))
	th := testThread("52.1")
	r.say(th, alice, "long job", true)
	r.waitArrived(g)
	r.say(th, bob, "then rename the package", false)
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*: working")
	r.waitText(th, "• Queue: 0 steer, 1 follow-up\n1. then rename the package")
	g.release()
	r.waitRuns(th, 1)
}

func TestModelCommand(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) { c.Agent.Models[0].Provider = "anthropic" })
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("53.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	if got := r.lastRequest().Model; got != mainModel {
		t.Fatalf("first request used %q, want %q", got, mainModel)
	}

	r.say(th, alice, "!model nope", false)
	r.waitText(th, `unknown model "nope"; known models: `+mainModel+", "+otherModel)
	// Without a name: the models, their provider, the current one marked,
	// how to switch; answered without asking the model.
	r.say(th, alice, "!model", false)
	r.waitText(th, "🤖 *Models*\n• `"+mainModel+"` — openai, 128k context ← current\n• `"+otherModel+"` — anthropic, 64k context\nSwitch with `!model <name>`")
	if n := len(r.requests()); n != 1 {
		t.Errorf("LLM requests after !model = %d, want 1", n)
	}

	r.say(th, alice, "!model "+otherModel, false)
	r.waitText(th, "This thread now uses `"+otherModel+"`")
	r.say(th, alice, "and now?", false)
	r.waitRuns(th, 2)
	if got := r.lastRequest().Model; got != otherModel {
		t.Errorf("request after !model used %q, want %q", got, otherModel)
	}
	rec, _ := r.thread(th)
	if s, err := r.db.GetSession(r.ctx, rec.SessionID); err != nil || s.Model != otherModel {
		t.Errorf("stored session model = %q, %v; want %q", s.Model, err, otherModel)
	}
	if n := len(r.requests()); n != 2 {
		t.Errorf("LLM requests = %d, want 2", n)
	}
	r.say(th, alice, "!model", false)
	r.waitText(th, "• `"+otherModel+"` — anthropic, 64k context ← current")
}

func TestResetStartsANewConversationAndKeepsTheOld(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(req llmfake.Request) llmfake.Response {
		return llmfake.TextReply("reply to: " + req.LastMessage().Content)
	})
	th := testThread("54.1")
	r.say(th, alice, "my name is Ada", true)
	r.waitRuns(th, 1)
	before, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}

	r.say(th, alice, "!reset", false)
	r.waitText(th, "Started a new conversation on the same branch")
	r.say(th, alice, "what is my name?", false)
	r.waitRuns(th, 2)

	if users := userTexts(r.lastRequest()); len(users) != 1 || users[0] != "what is my name?" {
		t.Errorf("user messages after !reset = %q, want only the new one", users)
	}
	after, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	if after.SessionID == before.SessionID || after.Branch != before.Branch {
		t.Errorf("after !reset: session %q → %q, branch %q → %q; want a new session on the same branch",
			before.SessionID, after.SessionID, before.Branch, after.Branch)
	}
	old, err := r.db.LoadEntries(r.ctx, before.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, e := range old {
		if e.Message != nil && e.Message.TextContent() == "my name is Ada" {
			kept = true
		}
	}
	if !kept {
		t.Errorf("the old session's entries were not kept in storage (%d entries)", len(old))
	}
}

func TestDiffPostsTheStatAndUploadsThePatch(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Push(writeThenAnswer("hello.txt", "hello world", "done")...)
	th := testThread("55.1")
	r.say(th, alice, "add a hello file", true)
	r.waitRuns(th, 1)
	rec, _ := r.thread(th)

	r.say(th, alice, "!diff", false)
	r.waitText(th, "📄 `"+rec.Branch+"` vs `main`: 1 file changed (+1 −0)\n• `hello.txt` +1 −0")
	if err := r.chat.WaitFor(r.ctx, func() bool { return len(r.chat.Uploads()) > 0 }); err != nil {
		t.Fatalf("no patch was uploaded: %v", err)
	}
	up := r.chat.Uploads()
	if len(up) != 1 || up[0].Thread != th || up[0].Name != strings.ReplaceAll(rec.Branch, "/", "-")+".diff" {
		t.Fatalf("uploads = %+v, want one .diff named after the branch in the thread", up)
	}
	if !strings.Contains(up[0].Content, "+++ b/hello.txt") || !strings.Contains(up[0].Content, "+hello world") {
		t.Errorf("the upload is not the patch:\n%s", up[0].Content)
	}
}

func TestCompactOnAShortConversation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("hi") })
	th := testThread("56.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "!compact keep the API notes", false)
	r.waitText(th, "Nothing to compact yet")
	if n := len(r.requests()); n != 1 {
		t.Errorf("LLM requests = %d, want 1 (no summary for a short conversation)", n)
	}
}

// TestCompactOnAShortConversationIsNotAFailure: "nothing to compact" is an
// answer, not an error; the thread should not also say the compaction failed.
func TestCompactOnAShortConversationIsNotAFailure(t *testing.T) {
	t.Parallel()

	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("hi") })
	th := testThread("57.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "!compact", false)
	r.waitText(th, "Nothing to compact yet")
	r.flush()
	if tr := r.chat.Transcript(th); strings.Contains(tr, "failed") {
		t.Errorf("a short conversation is reported as a failed compaction:\n%s", tr)
	}
}

func TestStopWhenIdleSaysNothingWasRunning(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("hi") })
	th := testThread("58.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "!stop", false)
	r.waitText(th, "stopped — nothing was running")
	if n := len(r.requests()); n != 1 {
		t.Errorf("LLM requests = %d, want 1", n)
	}
}

// TestEmptyFollowupIsAnswered: input that cannot be taken is answered in the
// thread, and the answer stays there.
func TestEmptyFollowupIsAnswered(t *testing.T) {
	t.Parallel()

	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("hi") })
	th := testThread("59.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	id := r.say(th, chatfake.Person{ID: "U3", Name: "Carol"}, "!followup", false)
	r.waitUntil("the empty !followup is recorded as dropped", func() bool {
		return inboundByMessage(t, r, id).State == storage.InboundDropped
	})
	r.flush()
	if tr := r.chat.Transcript(th); !strings.Contains(tr, "say what: `!steer <text>` or `!followup <text>`") {
		t.Errorf("the thread does not say why the input was not taken:\n%s", tr)
	}
}

// inboundByMessage finds the stored input of a chat message (ids count up
// from 1).
func inboundByMessage(t *testing.T, r *rig, messageID string) storage.Inbound {
	t.Helper()
	for id := int64(1); id < 1000; id++ {
		in, err := r.db.GetInbound(r.ctx, id)
		if err != nil {
			break
		}
		if in.MessageID == messageID {
			return in
		}
	}
	t.Fatalf("no stored input for message %s", messageID)
	return storage.Inbound{}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"!stauts": true, "!frob x y": true, "!status": false, "!review": false, "!steer now": false,
		"hello": false, "/skill:x": false, "!!!": false, "! wow": false, "!Ünicode": false,
	} {
		if got := classify(in).unknown; got != want {
			t.Errorf("classify(%q).unknown = %v, want %v", in, got, want)
		}
	}
}

// A command is read by the bridge alone, as classify reads it: in any case
// and with its argument on the next line, it is answered by its handler and
// never reaches the model.
func TestCommandsAreAnsweredAsClassified(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("hi") })
	th := testThread("60.1")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)

	r.say(th, alice, "!Status", false)
	r.waitText(th, "📊 *Status*: idle")
	r.say(th, alice, "!compact\nkeep the API notes", false)
	r.waitText(th, "Nothing to compact yet")
	r.flush()
	if n := len(r.requests()); n != 1 {
		t.Errorf("LLM requests = %d, want 1 (commands make none): %q", n, userTexts(r.lastRequest()))
	}
	if n := strings.Count(r.chat.Transcript(th), "_⏱"); n != 1 {
		t.Errorf("runs = %d, want 1", n)
	}
}

// Every entry of the table is whole: what people see of it, and a handler
// exactly when the bot answers it. Classification follows the table.
func TestCommandTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		if seen[c.Name] || c.Name != strings.ToLower(c.Name) || !mistypedCommand("!"+c.Name, c.Name) {
			t.Errorf("%q: a command word must be a unique plain lower-case word", c.Name)
		}
		seen[c.Name] = true
		if !strings.HasPrefix(c.Help, "`!"+c.Name) || c.Description == "" || len(c.Description) > 100 {
			t.Errorf("!%s: help %q and description %q, want a help line that starts with `!%s and a description of 1 to 100 characters (Discord's limit)",
				c.Name, c.Help, c.Description, c.Name)
		}
		if a := c.Arg; a != nil && (a.Name == "" || a.Description == "" || a.Placeholder == "") {
			t.Errorf("!%s: argument %+v, want its name, description and placeholder", c.Name, *a)
		}
		answered := c.mode == storage.ModeCommand
		if (c.run != nil) != answered || (!answered && (c.noSession != nil || c.whileWaiting != nil || c.sessionless != nil)) {
			t.Errorf("!%s (mode %q): a handler exactly when the bot answers it", c.Name, c.mode)
		}
		if (c.mode == storage.ModeSteer || c.mode == storage.ModeFollowUp) && (c.Arg == nil || !c.Arg.Required) {
			t.Errorf("!%s: input for the model needs its text as a required argument", c.Name)
		}
		got := classify("!" + c.Name + " x")
		if got.command != (c.mode != storage.ModePrompt) || got.startsRun == answered || got.unknown || got.mode() != c.mode {
			t.Errorf("classify(!%s) = %+v, mode %q; want what the table says (mode %q)", c.Name, got, got.mode(), c.mode)
		}
	}
	for i, s := range Commands() {
		if c := commands[i]; s.Name != c.Name || s.Input != (c.mode != storage.ModeCommand) {
			t.Errorf("Commands()[%d] = %+v, want !%s with Input %v", i, s, c.Name, c.mode != storage.ModeCommand)
		}
	}
}
