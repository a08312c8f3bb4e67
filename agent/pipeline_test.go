package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func TestInputHooksRunInOrder(t *testing.T) {
	var order []string
	hook := func(name string, res func(in agent.Input) agent.InputResult) agent.Extension {
		return agent.Extension{Name: name, Input: func(_ context.Context, in agent.Input) agent.InputResult {
			order = append(order, name+":"+in.Text)
			return res(in)
		}}
	}
	exts := []agent.Extension{
		hook("pass", func(agent.Input) agent.InputResult { return agent.InputResult{Action: agent.InputContinue} }),
		hook("upper", func(in agent.Input) agent.InputResult {
			return agent.InputResult{Action: agent.InputTransform, Text: strings.ToUpper(in.Text)}
		}),
		hook("swallow", func(in agent.Input) agent.InputResult {
			if strings.HasPrefix(in.Text, "SECRET") {
				return agent.InputResult{Action: agent.InputHandled}
			}
			return agent.InputResult{}
		}),
		hook("last", func(agent.Input) agent.InputResult { return agent.InputResult{} }),
	}
	h := newHarness(t, func(c *agent.Config) { c.Extensions = exts })
	h.llm.Push(llmfake.TextReply("ok"))
	h.prompt("hello")
	if got := userTexts(h.llm.Requests()[0]); got[0] != "HELLO" {
		t.Fatalf("model got %v, want the transformed text", got)
	}
	if got := strings.Join(order, ","); got != "pass:hello,upper:hello,swallow:HELLO,last:HELLO" {
		t.Fatalf("hook order = %s", got)
	}
	order = nil
	if out := h.start("secret stuff", agent.PromptOptions{}); out != agent.Handled {
		t.Fatalf("handled input outcome %v", out)
	}
	if got := strings.Join(order, ","); got != "pass:secret stuff,upper:secret stuff,swallow:SECRET STUFF" {
		t.Fatalf("hooks after handled ran: %s", got)
	}
	if n := len(h.llm.Requests()); n != 1 {
		t.Fatalf("handled input reached the model (%d requests)", n)
	}
}

func TestSkipExpansionSkipsHooksAndTemplates(t *testing.T) {
	hookRan := false
	ext := agent.Extension{
		Name: "x",
		Input: func(context.Context, agent.Input) agent.InputResult {
			hookRan = true
			return agent.InputResult{}
		},
	}
	h := newHarness(t, func(c *agent.Config) {
		c.Extensions = []agent.Extension{ext}
		c.Resources = agent.Resources{Templates: []agent.Template{{Name: "cmd", Body: "expanded"}}}
	})
	h.llm.Push(llmfake.TextReply("ok"))
	if err := h.sess.Prompt(context.Background(), "/cmd raw", agent.PromptOptions{SkipExpansion: true}); err != nil {
		t.Fatal(err)
	}
	if hookRan {
		t.Fatal("input hook ran with SkipExpansion")
	}
	if got := userTexts(h.llm.Requests()[0]); got[0] != "/cmd raw" {
		t.Fatalf("model got %v, want the raw text", got)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSkillAndTemplateExpansion(t *testing.T) {
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, ".threadsmith/skills/deploy/SKILL.md"), "---\nname: deploy\ndescription: Ship a release\n---\n# Deploy\nRun ./scripts/ship.sh\n")
	writeFile(t, filepath.Join(ws, ".agents/skills/review/SKILL.md"), "---\nname: review\ndescription: \"Review code\"\n---\nLook carefully.\n")
	writeFile(t, filepath.Join(ws, ".threadsmith/prompts/fix.md"), "---\ndescription: Fix an issue\n---\nFix $1 in $2. All: $@. Args: $ARGUMENTS. Rest: ${@:2}. One: ${@:2:1}. Missing: [$5]")
	extra := t.TempDir()
	writeFile(t, filepath.Join(extra, "lint/SKILL.md"), "---\ndescription: Lint things\n---\nRun the linter.")
	res, err := agent.LoadResources(ws, []string{extra}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skills) != 3 || len(res.Templates) != 1 {
		t.Fatalf("loaded %d skills, %d templates: %+v", len(res.Skills), len(res.Templates), res)
	}

	h := newHarness(t, func(c *agent.Config) { c.Resources = res })
	h.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })

	h.prompt("/skill:deploy to staging now")
	req := h.llm.Requests()[0]
	got := userTexts(req)[0]
	want := "<skill name=\"deploy\" location=\".threadsmith/skills/deploy/SKILL.md\">\nReferences are relative to .threadsmith/skills/deploy.\n\n# Deploy\nRun ./scripts/ship.sh\n</skill>\n\nto staging now"
	if got != want {
		t.Fatalf("skill expansion:\ngot  %q\nwant %q", got, want)
	}
	sys := req.Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "<name>deploy</name>") || !strings.Contains(sys.Content, "<description>Lint things</description>") {
		t.Fatalf("system prompt does not list the skills: %q", sys.Content)
	}

	h.prompt("/skill:unknown do it")
	if got := lastUser(h); got != "/skill:unknown do it" {
		t.Fatalf("unknown skill changed the text: %q", got)
	}

	h.prompt(`/fix "the bug" main.go extra $1`)
	want = `Fix the bug in main.go. All: the bug main.go extra $1. Args: the bug main.go extra $1. Rest: main.go extra $1. One: main.go. Missing: []`
	if got := lastUser(h); got != want {
		t.Fatalf("template:\ngot  %q\nwant %q", got, want)
	}
}

func lastUser(h *harness) string {
	reqs := h.llm.Requests()
	u := userTexts(reqs[len(reqs)-1])
	return u[len(u)-1]
}

func TestSubstituteArgs(t *testing.T) {
	tests := []struct{ body, args, want string }{
		{"$1-$2", "a b", "a-b"},
		{"$@", `one "two words" 'three'`, "one two words three"},
		{"${@:2}", "a b c", "b c"},
		{"${@:2:1}", "a b c", "b"},
		{"${@:0}", "a b", "a b"},
		{"${@:9}", "a b", ""},
		{"$ARGUMENTS", "x  y", "x y"},
		{"$3", "a", ""},
		{"$1", `"$2 literal"`, "$2 literal"},
		{"$@ and $1", "$ARGUMENTS", "$ARGUMENTS and $ARGUMENTS"},
	}
	for _, tt := range tests {
		if got := agent.SubstituteArgs(tt.body, agent.ParseArgs(tt.args)); got != tt.want {
			t.Errorf("SubstituteArgs(%q, %q) = %q, want %q", tt.body, tt.args, got, tt.want)
		}
	}
}

func TestBeforeAgentStartChainsAndResetsTheSystemPrompt(t *testing.T) {
	turn := 0
	exts := []agent.Extension{
		{Name: "a", BeforeAgentStart: func(_ context.Context, ev agent.BeforeAgentStart) agent.BeforeAgentStartResult {
			turn++
			if turn > 1 {
				return agent.BeforeAgentStartResult{} // second prompt: no change
			}
			return agent.BeforeAgentStartResult{
				SystemPrompt: ev.SystemPrompt + "\n[a]",
				Messages:     []llm.Message{{Role: llm.RoleCustom, CustomType: "ctx", Content: []llm.Content{llm.Text("context from a")}}},
			}
		}},
		{Name: "b", BeforeAgentStart: func(_ context.Context, ev agent.BeforeAgentStart) agent.BeforeAgentStartResult {
			if turn > 1 {
				return agent.BeforeAgentStartResult{}
			}
			if !strings.HasSuffix(ev.SystemPrompt, "[a]") {
				t.Errorf("hook b saw %q, want a's prompt", ev.SystemPrompt)
			}
			return agent.BeforeAgentStartResult{
				SystemPrompt: ev.SystemPrompt + "\n[b]",
				Messages:     []llm.Message{{Content: []llm.Content{llm.Text("context from b")}}},
			}
		}},
	}
	h := newHarness(t, func(c *agent.Config) { c.Extensions = exts })
	h.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	h.prompt("first")
	req := h.llm.Requests()[0]
	if got := req.Messages[0].Content; got != "You are a test agent.\n[a]\n[b]" {
		t.Fatalf("system prompt = %q", got)
	}
	if got := strings.Join(userTexts(req), "|"); got != "first|context from a|context from b" {
		t.Fatalf("users = %q, want prompt then both custom messages", got)
	}
	h.prompt("second")
	if got := h.llm.Requests()[1].Messages[0].Content; got != "You are a test agent." {
		t.Fatalf("second prompt system = %q, want the base prompt again", got)
	}
	// Custom messages are part of the record.
	var customs int
	for _, e := range h.store.all() {
		if e.Message != nil && e.Message.Role == llm.RoleCustom {
			customs++
		}
	}
	if customs != 2 {
		t.Fatalf("persisted custom messages = %d, want 2", customs)
	}
}

func TestPanickingListenerDoesNotStopTheQueue(t *testing.T) {
	h := newHarness(t)
	h.sess.Subscribe(func(ev agent.Event) {
		if _, ok := ev.(agent.MessageStart); ok {
			panic("listener bug")
		}
	})
	var mu sync.Mutex
	var after []string
	h.sess.Subscribe(func(ev agent.Event) {
		mu.Lock()
		after = append(after, ev.Type())
		mu.Unlock()
	})
	h.llm.Push(llmfake.TextReply("still ", "here"))
	h.prompt("hi")
	mu.Lock()
	defer mu.Unlock()
	if len(after) == 0 || after[len(after)-1] != "agent_end" {
		t.Fatalf("later listener saw %v, want everything through agent_end", after)
	}
	if len(h.store.all()) != 2 {
		t.Fatalf("persistence stopped: %d entries", len(h.store.all()))
	}
}

func TestListenersSeeEventsInEmissionOrder(t *testing.T) {
	// Several listeners, a parallel tool batch with updates: each listener must
	// see exactly the same sequence, with updates of a message between its start
	// and end.
	upd := &testTool{name: "upd", readOnly: true, run: func(ctx context.Context, _ map[string]any) (agent.ToolResult, error) {
		return agent.TextResult("u"), nil
	}}
	h := newHarness(t, withTools(upd))
	var mu sync.Mutex
	seqs := make([][]string, 3)
	for i := range seqs {
		i := i
		h.sess.Subscribe(func(ev agent.Event) {
			mu.Lock()
			seqs[i] = append(seqs[i], ev.Type())
			mu.Unlock()
		})
	}
	h.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "a", Name: "upd", Args: `{}`}, llmfake.Call{ID: "b", Name: "upd", Args: `{}`}, llmfake.Call{ID: "c", Name: "upd", Args: `{}`}),
		llmfake.TextReply("x", "y", "z"),
	)
	h.prompt("go")
	mu.Lock()
	defer mu.Unlock()
	all := h.recorded()
	var want []string
	for _, ev := range all {
		want = append(want, ev.Type())
	}
	for i := range seqs {
		equalStrings(t, "listener sequence", seqs[i], want)
	}
	// message_update of the assistant only between its start and end.
	open := false
	for _, ev := range all {
		switch e := ev.(type) {
		case agent.MessageStart:
			open = e.Message.Role == llm.RoleAssistant
		case agent.MessageEnd:
			open = false
		case agent.MessageUpdate:
			if !open {
				t.Fatal("message_update outside its message")
			}
		}
	}
}

func TestValidationErrorsSayWhatToSet(t *testing.T) {
	h := newHarness(t, func(c *agent.Config) { c.ModelName = "" })
	err := h.sess.Prompt(context.Background(), "hi", agent.PromptOptions{})
	if err == nil || !strings.Contains(err.Error(), "llm.model") {
		t.Fatalf("Prompt without a model = %v, want an error naming llm.model", err)
	}
	if h.sess.IsRunning() {
		t.Fatal("a refused prompt left the session running")
	}
}

func TestModelSwitch(t *testing.T) {
	h := newHarness(t, func(c *agent.Config) {
		c.Models = []agent.ModelSpec{{Name: "fake-model", ContextWindow: 1000, MaxTokens: 100}, {Name: "big-model", ContextWindow: 200000, MaxTokens: 4096}}
	})
	err := h.sess.SetModel("nope")
	var unknown *agent.UnknownModelError
	if err == nil || !strings.Contains(err.Error(), "big-model") || !asUnknown(err, &unknown) {
		t.Fatalf("SetModel(nope) = %v, want an error listing the models", err)
	}
	if err := h.sess.SetModel("big-model"); err != nil {
		t.Fatal(err)
	}
	h.llm.Push(llmfake.TextReply("ok"))
	h.prompt("hi")
	if got := h.llm.Requests()[0]; got.Model != "big-model" || got.MaxTokens != 4096 {
		t.Fatalf("request model = %q max_tokens %d, want big-model with 4096", got.Model, got.MaxTokens)
	}
	if st := h.sess.Status(); st.ContextWindow != 200000 {
		t.Fatalf("context window after switch = %d", st.ContextWindow)
	}
	var changes int
	for _, e := range h.store.all() {
		if e.ModelChange != nil && e.ModelChange.Model == "big-model" {
			changes++
		}
	}
	if changes != 1 {
		t.Fatalf("model_change entries = %d, want 1", changes)
	}
}

func asUnknown(err error, target **agent.UnknownModelError) bool {
	u, ok := err.(*agent.UnknownModelError)
	if ok {
		*target = u
	}
	return ok
}

func TestResumeFromEntries(t *testing.T) {
	h := newHarness(t)
	h.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("remembered") })
	h.prompt("my name is Ada")
	entries := h.store.all()

	h2 := newHarness(t, func(c *agent.Config) { c.Entries = entries })
	h2.llm.Push(llmfake.TextReply("Ada"))
	h2.prompt("what is my name?")
	got := userTexts(h2.llm.Requests()[0])
	if strings.Join(got, "|") != "my name is Ada|what is my name?" {
		t.Fatalf("resumed context users = %v", got)
	}
	if stored := h2.store.all(); len(stored) != 2 || stored[0].Seq != 2 {
		t.Fatalf("resumed session appended %+v, want seq to continue at 2", stored)
	}
}
