package bridge

import (
	"strconv"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// !sessions lists the asker's own sessions, newest first, each with its
// page; it is answered in a thread without a session without opening one,
// and in a thread with one; another person's sessions never show.
func TestSessionsListsTheAskersOwn(t *testing.T) {
	r := newRig(t, func(c *Config, _ *Platform) {
		c.PageLink = func(id int64) string { return "https://bot.example.com/s/" + strconv.FormatInt(id, 10) }
	})
	page := func(n string) string {
		t.Helper()
		rec, err := r.thread(testThread(n))
		if err != nil {
			t.Fatal(err)
		}
		return "[page](https://bot.example.com/s/" + strconv.FormatInt(rec.ID, 10) + ")"
	}
	for _, a := range []struct {
		n   string
		who chatfake.Person
	}{{"80.1", alice}, {"80.2", bob}, {"80.3", alice}} {
		r.llm.Push(llmfake.TextReply("done"))
		r.say(testThread(a.n), a.who, "look around", true)
		r.waitRuns(testThread(a.n), 1)
	}

	th := testThread("80.4")
	r.say(th, alice, "!sessions", true)
	r.waitText(th, "Your sessions")
	list := lastBotText(r, th, "Your sessions")
	lines := strings.Split(list, "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], page("80.3")) || !strings.Contains(lines[2], page("80.1")) {
		t.Errorf("alice's list = %q, want her threads 80.3 then 80.1", list)
	}
	if strings.Contains(list, page("80.2")) {
		t.Errorf("alice's list shows bob's session:\n%s", list)
	}
	// The run may still be recorded as ending: running or idle.
	if !strings.Contains(lines[1], " · `app` · `bot/") || !strings.Contains(lines[1], " · just now · $0.00 · ") {
		t.Errorf("a line lacks state, repository, branch or cost: %q", lines[1])
	}
	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SessionID != "" || rec.WorkspacePath != "" {
		t.Errorf("!sessions opened a session (%q) or a workspace (%q)", rec.SessionID, rec.WorkspacePath)
	}

	// In a thread with a session, bob's list is his one thread.
	r.say(testThread("80.1"), bob, "!sessions", false)
	r.waitText(testThread("80.1"), "Your sessions")
	if got := lastBotText(r, testThread("80.1"), "Your sessions"); strings.Count(got, "\n") != 1 || !strings.Contains(got, page("80.2")) {
		t.Errorf("bob's list = %q, want his thread 80.2 only", got)
	}
	if n := len(r.requests()); n != 3 {
		t.Errorf("LLM requests = %d, want 3 (!sessions makes none)", n)
	}
}

// lastBotText is the bot's newest message in th that contains s.
func lastBotText(r *rig, th chat.ThreadRef, s string) string {
	texts := r.chat.BotTexts(th)
	for i := len(texts) - 1; i >= 0; i-- {
		if strings.Contains(texts[i], s) {
			return texts[i]
		}
	}
	return ""
}
