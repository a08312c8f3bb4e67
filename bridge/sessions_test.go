package bridge

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// !sessions lists the asker's own sessions, newest first, each with its
// page, in a note only they see; it is answered in a thread with a session,
// and without opening one in a thread that has none; another person's
// sessions never show.
func TestSessionsListsTheAskersOwn(t *testing.T) {
	t.Parallel()
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

	// A whisper of who's list that contains s.
	whisper := func(who chatfake.Person, s string) string {
		t.Helper()
		var got string
		err := r.chat.WaitFor(r.ctx, func() bool {
			for _, w := range r.chat.Whispers() {
				if text, ok := strings.CutPrefix(w, who.ID+": "); ok && strings.Contains(text, s) {
					got = text
					return true
				}
			}
			return false
		})
		if err != nil {
			t.Fatalf("no whisper to %s with %q; whispers %q", who.ID, s, r.chat.Whispers())
		}
		return got
	}

	// A mention in a new thread: answered privately, no thread opened.
	th := testThread("80.4")
	r.say(th, alice, "!sessions", true)
	list := whisper(alice, "Your sessions")
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
	if _, err := r.thread(th); err == nil {
		t.Error("!sessions in a new thread stored a thread")
	}

	// In a thread with a session, bob's list is his one thread; without a
	// mention in a thread that is no session, alice's again.
	r.say(testThread("80.1"), bob, "!sessions", false)
	if got := whisper(bob, "Your sessions"); strings.Count(got, "\n") != 1 || !strings.Contains(got, page("80.2")) {
		t.Errorf("bob's list = %q, want his thread 80.2 only", got)
	}
	r.say(testThread("80.5"), alice, "!sessions", false)
	if err := r.chat.WaitFor(r.ctx, func() bool { return len(r.chat.Whispers()) == 3 }); err != nil {
		t.Errorf("whispers = %q, want alice's list a second time", r.chat.Whispers())
	}
	for _, th := range []string{"80.1", "80.4", "80.5"} {
		if tr := r.chat.Transcript(testThread(th)); strings.Contains(tr, "Your sessions") {
			t.Errorf("the list was posted in thread %s for all to see:\n%s", th, tr)
		}
	}
	if n := len(r.requests()); n != 3 {
		t.Errorf("LLM requests = %d, want 3 (!sessions makes none)", n)
	}
}

// mute is a chat platform whose private notes fail to go out.
type mute struct{ *chatfake.Adapter }

func (mute) Whisper(context.Context, chat.Inbound, string) error {
	return errors.New("ephemeral message refused")
}

// A list of sessions that cannot be sent privately is never posted for the
// thread to see instead: the asker hears it failed, in a thread with a
// session and in one without.
func TestSessionsNeverPostedWhenAPrivateNoteFails(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, p *Platform) {
		c.PageLink = func(id int64) string { return "https://bot.example.com/s/" + strconv.FormatInt(id, 10) }
		p.Adapter = mute{p.Adapter.(*chatfake.Adapter)}
	})
	th := testThread("81.1")
	r.llm.Push(llmfake.TextReply("done"))
	r.say(th, alice, "look around", true)
	r.waitRuns(th, 1)

	const failed = "couldn't send you your sessions privately"
	r.say(th, alice, "!sessions", false)
	r.waitText(th, failed)
	other := testThread("81.2")
	r.say(other, alice, "!sessions", true)
	r.waitText(other, failed)
	for _, th := range []chat.ThreadRef{th, other} {
		if tr := r.chat.Transcript(th); strings.Contains(tr, "Your sessions") || strings.Contains(tr, "[page](") {
			t.Errorf("the list was posted in thread %s for all to see:\n%s", th.Key(), tr)
		}
	}
	if w := r.chat.Whispers(); len(w) != 0 {
		t.Errorf("whispers = %q, want none (they fail)", w)
	}
}

// noWhisper is a chat platform without private notes, as the console is:
// its field hides the fake's Whisper method.
type noWhisper struct {
	*chatfake.Adapter
	Whisper struct{}
}

// On a platform without private notes (one person's, as the console) the
// list is the thread's answer.
func TestSessionsAnsweredInTheThreadWithoutPrivateNotes(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, p *Platform) {
		c.PageLink = func(id int64) string { return "https://bot.example.com/s/" + strconv.FormatInt(id, 10) }
		p.Adapter = noWhisper{Adapter: p.Adapter.(*chatfake.Adapter)}
	})
	if _, ok := any(noWhisper{}).(chat.Whisperer); ok {
		t.Fatal("noWhisper is a chat.Whisperer")
	}
	th := testThread("82.1")
	r.llm.Push(llmfake.TextReply("done"))
	r.say(th, alice, "look around", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "!sessions", false)
	r.waitText(th, "Your sessions")
	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	if tr := r.chat.Transcript(th); !strings.Contains(tr, "[page](https://bot.example.com/s/"+strconv.FormatInt(rec.ID, 10)+")") {
		t.Errorf("the list in the thread lacks its session's page:\n%s", tr)
	}
}
