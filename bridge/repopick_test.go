package bridge

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/workspace"
)

// menuChat is the in-process platform with select menus of room options:
// it records each message's latest actions, options and all.
type menuChat struct {
	*chatfake.Adapter
	room int
	mu   sync.Mutex
	acts map[string][]chat.Action
}

func (m *menuChat) Limits() chat.Limits {
	l := m.Adapter.Limits()
	l.MaxChoices = m.room
	return l
}

func (m *menuChat) SetActions(ctx context.Context, th chat.ThreadRef, id, text string, actions []chat.Action) error {
	if err := m.Edit(ctx, th, id, text); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acts[id] = actions
	return nil
}

// menu returns the id and options of the message carrying the repository
// menu, if any.
func (m *menuChat) menu() (string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, acts := range m.acts {
		for _, a := range acts {
			if a.ID == repoMenuID {
				var vs []string
				for _, o := range a.Options {
					vs = append(vs, o.Value)
				}
				return id, vs
			}
		}
	}
	return "", nil
}

// pickRig is a rig with several repositories and no default: app, web
// and, with more, lib-1, lib-2, … (each its own remote);
// its platform has menus of room options. It returns the rig, the menus and
// the remotes by name.
func pickRig(t *testing.T, room int, more int, opts ...rigOption) (*rig, *menuChat, map[string]*gitremote.Repo) {
	t.Helper()
	remotes := map[string]*gitremote.Repo{}
	var mc *menuChat
	withRepos := func(c *Config, p *Platform) {
		mc = &menuChat{Adapter: p.Adapter.(*chatfake.Adapter), room: room, acts: map[string][]chat.Action{}}
		p.Adapter = mc
		var repos []workspace.Repo
		names := []string{"app", "web"}
		for i := range more {
			names = append(names, "lib-"+string(rune('1'+i)))
		}
		for _, n := range names {
			remotes[n] = gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# " + n + "\n"}})
			repos = append(repos, workspace.Repo{Name: n, URL: remotes[n].Path, DefaultBranch: "main"})
		}
		wsm, err := workspace.New(workspace.Config{DataDir: filepath.Join(t.TempDir(), "workspaces"), Repos: repos, CleanupInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = wsm.Close(context.Background()) })
		c.Workspaces = wsm
		c.DefaultRepo = ""
	}
	r := newRig(t, append([]rigOption{withRepos}, opts...)...)
	return r, mc, remotes
}

// A new thread that names no repository, with several open, gets the menu
// and runs nothing; a choice by someone who did not ask, or of a repository
// not configured, is refused privately; the requester's choice starts the
// held request in the repository chosen, whose branch gets the work.
func TestUnresolvedRepositoryGetsTheMenuAndTheChoiceStartsTheRun(t *testing.T) {
	t.Parallel()
	r, mc, remotes := pickRig(t, 25, 0)
	th := testThread("96.1")
	r.say(th, alice, "write a.txt", true)
	r.waitText(th, "📁 Which repository should I work in?")
	r.waitUntil("the menu", func() bool { id, _ := mc.menu(); return id != "" })
	if _, opts := mc.menu(); !slices.Equal(opts, []string{"app", "web"}) {
		t.Errorf("menu options = %v, want app, web", opts)
	}
	if rec, err := r.thread(th); err != nil || rec.Repo != "" {
		t.Fatalf("thread %+v, %v; want it stored without a repository", rec, err)
	}

	r.say(th, bob, "!repo web", false)
	r.waitUntil("bob's note", func() bool { return len(r.chat.Whispers()) == 1 })
	if w := r.chat.Whispers()[0]; !strings.HasPrefix(w, bob.ID+": ") || !strings.Contains(w, "only someone who asked") {
		t.Errorf("note = %q, want bob's refusal", w)
	}
	r.say(th, alice, "!repo secret", false)
	r.waitUntil("the unknown repository's note", func() bool { return len(r.chat.Whispers()) == 2 })
	if w := r.chat.Whispers()[1]; !strings.HasPrefix(w, alice.ID+": ") || !strings.Contains(w, "`secret` can't be opened") {
		t.Errorf("note = %q, want the refusal of secret", w)
	}
	// A name made to mention everyone is not echoed back.
	r.say(th, alice, "!repo x`<!channel> @here", false)
	r.waitUntil("the mention's note", func() bool { return len(r.chat.Whispers()) == 3 })
	if w := r.chat.Whispers()[2]; !strings.Contains(w, "Sorry, that repository can't be opened") || strings.Contains(w, "channel>") || strings.Contains(w, "@here") {
		t.Errorf("note = %q, want the refusal without the name", w)
	}
	r.say(th, alice, "!status", false)
	r.waitText(th, "📁 Your request waits for its repository")
	if n := len(r.requests()); n != 0 {
		t.Fatalf("the model was asked %d times before a repository was chosen", n)
	}

	r.llm.Push(writeThenAnswer("a.txt", "a", "I wrote a.txt.")...)
	r.say(th, alice, "!repo web", false)
	r.waitText(th, "📁 Working in `web`, chosen by `Alice`.")
	r.waitText(th, "⬆️ pushed")
	rec, _ := r.thread(th)
	if rec.Repo != "web" {
		t.Errorf("thread repo = %q, want web", rec.Repo)
	}
	if got := remotes["web"].Files(t, rec.Branch)["a.txt"]; got != "a\n" && got != "a" {
		t.Errorf("a.txt on web's branch = %q", got)
	}
	if slices.Contains(remotes["app"].Branches(t), rec.Branch) {
		t.Errorf("app got the branch %s", rec.Branch)
	}
	if id, _ := mc.menu(); id != "" {
		t.Errorf("the menu still stands on %s after the choice", id)
	}
	if req := r.lastRequest(); !strings.Contains(string(req.Body), "write a.txt") {
		t.Errorf("the run's request does not hold the held message:\n%s", string(req.Body))
	}

	// Pushed: the repository stays.
	r.say(th, alice, "!repo app", false)
	r.waitText(th, "⛔ `"+rec.Branch+"` was pushed to `web` already")
	if rec, _ := r.thread(th); rec.Repo != "web" {
		t.Errorf("thread repo = %q after a refused change, want web", rec.Repo)
	}
}

// Before the first push, !repo moves the thread to another repository: the
// next run works in a fresh worktree of it, and the conversation goes on.
func TestRepoCommandSwitchesBeforeTheFirstPush(t *testing.T) {
	t.Parallel()
	r, _, remotes := pickRig(t, 25, 0)
	th := testThread("96.2")
	r.llm.Push(llmfake.TextReply("Which file?"))
	r.say(th, alice, "repo=web look around", true)
	r.waitRuns(th, 1)

	r.say(th, alice, "!repo app", false)
	r.waitText(th, "📁 This thread now works in `app` (was `web`)")
	r.llm.Push(writeThenAnswer("b.txt", "b", "I wrote b.txt.")...)
	r.say(th, alice, "write b.txt", false)
	r.waitText(th, "⬆️ pushed")
	rec, _ := r.thread(th)
	if rec.Repo != "app" {
		t.Errorf("thread repo = %q, want app", rec.Repo)
	}
	if got := remotes["app"].Files(t, rec.Branch)["b.txt"]; got != "b\n" && got != "b" {
		t.Errorf("b.txt on app's branch = %q", got)
	}
	if slices.Contains(remotes["web"].Branches(t), rec.Branch) {
		t.Errorf("web got the branch %s", rec.Branch)
	}
	if req := r.lastRequest(); !strings.Contains(string(req.Body), "look around") || !strings.Contains(string(req.Body), "Repository: app") {
		t.Errorf("the run after the move lost the conversation or the repository:\n%s", string(req.Body))
	}
}

// More repositories than a menu holds: the menu shows what fits and the
// text names the others, which !repo takes.
func TestRepoMenuSaysWhatDoesNotFit(t *testing.T) {
	t.Parallel()
	r, mc, _ := pickRig(t, 2, 2)
	th := testThread("96.3")
	r.say(th, alice, "hello", true)
	r.waitText(th, "the menu holds 2 of 4")
	r.waitUntil("the menu", func() bool { id, _ := mc.menu(); return id != "" })
	if _, opts := mc.menu(); !slices.Equal(opts, []string{"app", "lib-1"}) {
		t.Errorf("menu options = %v, want the first two by name", opts)
	}
	if tr := r.chat.Transcript(th); !strings.Contains(tr, "`lib-2`, `web`") {
		t.Errorf("the others are not named:\n%s", tr)
	}
	r.llm.Push(llmfake.TextReply("hi"))
	r.say(th, alice, "!repo lib-2", false)
	r.waitText(th, "📁 Working in `lib-2`, chosen by `Alice`.")
	r.waitRuns(th, 1)
}

// Commits waiting for Push are work of the thread's own: the repository
// stays, and the commits with it.
func TestRepoCommandKeepsWorkWaitingForPush(t *testing.T) {
	t.Parallel()
	r, _, remotes := pickRig(t, 25, 0, func(c *Config, _ *Platform) {
		c.Approvals = map[string]Approval{"web": {Push: true}}
	})
	th := testThread("96.4")
	r.llm.Push(writeThenAnswer("a.txt", "a", "I wrote a.txt.")...)
	r.say(th, alice, "repo=web write a.txt", true)
	r.waitText(th, "⏸️ Not pushed yet: 1 commit")
	r.say(th, alice, "!repo app", false)
	rec, _ := r.thread(th)
	r.waitText(th, "⛔ `"+rec.Branch+"` has work not pushed yet: this thread stays in `web`")
	r.say(th, alice, "!push", false)
	r.waitText(th, "⬆️ pushed")
	if got := remotes["web"].Files(t, rec.Branch)["a.txt"]; got != "a\n" && got != "a" {
		t.Errorf("a.txt on web's branch = %q", got)
	}
}

// An approver of a repository may choose it for someone else's request,
// and only that one.
func TestAnApproverChoosesTheirRepository(t *testing.T) {
	t.Parallel()
	carol := chatfake.Person{ID: "U3", Name: "Carol"}
	r, _, _ := pickRig(t, 25, 0, func(c *Config, _ *Platform) {
		c.Approvals = map[string]Approval{"web": {Approvers: []string{carol.ID}}}
	})
	th := testThread("96.5")
	r.say(th, alice, "hello", true)
	r.waitText(th, "📁 Which repository should I work in?")
	r.say(th, carol, "!repo app", false)
	r.waitUntil("carol's note", func() bool { return len(r.chat.Whispers()) == 1 })
	if w := r.chat.Whispers()[0]; !strings.HasPrefix(w, carol.ID+": ") || !strings.Contains(w, "approver of `app`") {
		t.Errorf("note = %q, want carol refused app", w)
	}
	r.llm.Push(llmfake.TextReply("hi"))
	r.say(th, carol, "!repo web", false)
	r.waitText(th, "📁 Working in `web`, chosen by `Carol`.")
	r.waitRuns(th, 1)
}

// With one repository open, !repo alone says so instead of offering a menu
// of one.
func TestRepoCommandWithOneRepositorySaysSo(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	th := testThread("96.9")
	r.llm.Push(llmfake.TextReply("Hello."))
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "!repo", false)
	r.waitText(th, "📁 This thread works in `app`, the only repository open here.")
}
