package bridge

import (
	"encoding/base64"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

func TestAllowlistsRefuseWithOnePrivateNote(t *testing.T) {
	t.Parallel()
	outsider := chatfake.Person{ID: "U9", Name: "Mallory", Roles: []string{"R-guest"}}
	for _, tc := range []struct {
		name    string
		opt     rigOption
		refused chat.Inbound // from outsider
		allowed chat.Inbound
	}{
		{
			name:    "allowed_users",
			opt:     func(_ *Config, p *Platform) { p.AllowedUsers = []string{alice.ID} },
			refused: chat.Inbound{Thread: testThread("10.1"), Author: outsider},
			allowed: chat.Inbound{Thread: testThread("10.2"), Author: alice},
		},
		{
			name:    "allowed_roles",
			opt:     func(_ *Config, p *Platform) { p.AllowedRoles = []string{"R-dev"} },
			refused: chat.Inbound{Thread: testThread("11.1"), Author: outsider},
			allowed: chat.Inbound{Thread: testThread("11.2"), Author: chat.Author{ID: "U7", Name: "Dev", Roles: []string{"R-guest", "R-dev"}}},
		},
		{
			name:    "allowed_channels",
			opt:     func(_ *Config, p *Platform) { p.AllowedChannels = []string{"C-ok"} },
			refused: chat.Inbound{Thread: chat.ThreadRef{Platform: "test", Team: "T1", Channel: "C-other", Thread: "12.1"}, Author: outsider},
			// A direct conversation is not a channel the list could name.
			allowed: chat.Inbound{Thread: chat.ThreadRef{Platform: "test", Team: "T1", Channel: "D-1", Thread: "12.2"}, Author: outsider, DM: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.opt)
			r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("hello") })
			h := r.b.Handler("test")

			in := tc.refused
			in.EventID, in.MessageID, in.Text, in.Mention = "ev-r", "200.1", "please delete prod", true
			rc, err := h.Receive(r.ctx, in)
			if err != nil || rc != chat.Refused {
				t.Fatalf("Receive from an outsider = %v, %v; want refused", rc, err)
			}
			if w := r.chat.Whispers(); len(w) != 1 || !strings.HasPrefix(w[0], outsider.ID+": ") || !strings.Contains(w[0], "not allowed") {
				t.Errorf("private notes = %q, want one note to %s", w, outsider.ID)
			}
			if texts := r.chat.BotTexts(in.Thread); len(texts) != 0 {
				t.Errorf("the refusal was posted in the thread: %q", texts)
			}
			if _, err := r.thread(in.Thread); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("a refused message created a thread in storage (err = %v)", err)
			}
			if r.live(in.Thread) {
				t.Error("a refused message started a thread owner")
			}

			ok := tc.allowed
			ok.EventID, ok.MessageID, ok.Text, ok.Mention = "ev-a", "201.1", "hi", true
			rc, err = h.Receive(r.ctx, ok)
			if err != nil || rc != chat.Accepted {
				t.Fatalf("Receive from an allowed person = %v, %v; want accepted", rc, err)
			}
			r.waitRuns(ok.Thread, 1)
			if n := len(r.requests()); n != 1 {
				t.Errorf("LLM requests = %d, want 1 (the allowed message only)", n)
			}
			if n := len(r.chat.Whispers()); n != 1 {
				t.Errorf("private notes = %d after an allowed message, want still 1", n)
			}
		})
	}
}

func TestThreadWithoutSessionIgnoresPlainMessages(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	th := testThread("20.1")
	_, rc, err := r.chat.Say(r.ctx, th, alice, "just chatting with Bob here", false)
	if err != nil || rc != chat.Ignored {
		t.Fatalf("receipt = %v, %v; want ignored", rc, err)
	}
	if _, err := r.thread(th); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("an ignored message was stored (err = %v)", err)
	}
	if pending, err := r.db.AllPendingInbound(r.ctx); err != nil || len(pending) != 0 {
		t.Errorf("pending input = %v, %v; want none", pending, err)
	}
	if texts := r.chat.BotTexts(th); len(texts) != 0 || r.live(th) {
		t.Errorf("the bot reacted to a message not meant for it: %q", texts)
	}
}

func TestFirstMentionGivesTheEarlierConversation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("on it") })
	th := testThread("30.1")
	for _, m := range []struct {
		who  chatfake.Person
		text string
	}{{alice, "the parser drops the last token"}, {bob, "only when the input ends without a newline"}} {
		if _, rc, err := r.chat.Say(r.ctx, th, m.who, m.text, false); err != nil || rc != chat.Ignored {
			t.Fatalf("earlier message: %v, %v", rc, err)
		}
	}
	r.say(th, alice, "can you fix it?", true)
	r.waitRuns(th, 1)
	req := r.lastRequest()
	all := strings.Join(userTexts(req), "\n")
	for _, want := range []string{"can you fix it?", "Earlier messages in this thread", "[Alice", "the parser drops the last token", "[Bob", "only when the input ends without a newline"} {
		if !strings.Contains(all, want) {
			t.Errorf("the model's request lacks %q; user content:\n%s", want, all)
		}
	}
	if strings.Index(all, "the parser drops") > strings.Index(all, "only when the input") {
		t.Errorf("earlier messages are out of order:\n%s", all)
	}
	// The before_agent_start hook tells the model where (in the system
	// prompt) and who asks (in the conversation, which keeps the prompt cacheable).
	sys := req.Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "you work on branch bot/test-") {
		t.Errorf("the system prompt lacks the thread's context:\n%s", sys.Content)
	}
	if first := req.Messages[1]; first.Role != "user" || !strings.HasPrefix(first.Content, "[Requested by Alice · ") {
		t.Errorf("the request does not say who asks first; it starts with %s: %q", first.Role, first.Content)
	}

	// A later message in the thread does not repeat the history.
	r.say(th, bob, "thanks", false)
	r.waitRuns(th, 2)
	if n := strings.Count(strings.Join(userTexts(r.lastRequest()), "\n"), "Earlier messages in this thread"); n != 1 {
		t.Errorf("the earlier conversation is in the context %d times, want once", n)
	}
}

func TestSharedImageReachesTheModel(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("nice picture") })
	png := "\x89PNG\r\n\x1a\n-fake-image-bytes-"
	r.chat.AddFile("https://files.test/shot.png", png)
	th := testThread("40.1")
	r.say(th, alice, "what is wrong in this screenshot?", true,
		chat.Attachment{Name: "shot.png", MimeType: "image/png", Size: int64(len(png)), URL: "https://files.test/shot.png"})
	r.waitRuns(th, 1)
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte(png))
	var images []string
	for _, m := range r.lastRequest().Messages {
		images = append(images, m.Images()...)
	}
	if len(images) != 1 || images[0] != want {
		t.Errorf("images in the request = %.80q, want one %.80q", images, want)
	}
}

func TestSharedTextFileIsSavedOutsideTheRepository(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("read it") })
	r.chat.AddFile("https://files.test/notes.txt", "hello notes")
	th := testThread("41.1")
	r.say(th, alice, "see my notes", true, chat.Attachment{Name: "../../notes.txt", MimeType: "text/plain", Size: 11, URL: "https://files.test/notes.txt"})
	r.waitRuns(th, 1)
	text := strings.Join(userTexts(r.lastRequest()), "\n")
	m := regexp.MustCompile(`saved outside the repository: (\S+) \(11 bytes\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the model was not given the file's path:\n%s", text)
	}
	path := m[1]
	if got, err := os.ReadFile(path); err != nil || string(got) != "hello notes" {
		t.Errorf("saved file %s = %q, %v; want the shared content", path, got, err)
	}
	if !strings.HasSuffix(path, "/uploads/notes.txt") {
		t.Errorf("saved at %s, want <scratch>/uploads/notes.txt (a name cannot climb out)", path)
	}
	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	if rec.WorkspacePath == "" || strings.HasPrefix(path, rec.WorkspacePath+"/") {
		t.Errorf("the file %s is inside the repository %s", path, rec.WorkspacePath)
	}
	r.flush()
	if strings.Contains(r.chat.Transcript(th), "pushed") {
		t.Error("a shared file was committed and pushed")
	}
}

func TestOversizedFilesAreRefusedWithAMessage(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(c *Config, _ *Platform) { c.MaxDownloadBytes = 1 << 20 })
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	r.chat.AddFile("https://files.test/huge.bin", "never downloaded")
	r.chat.AddFile("https://files.test/liar.txt", strings.Repeat("x", 1<<20+1))
	th := testThread("42.1")
	r.say(th, alice, "look at these", true,
		chat.Attachment{Name: "huge.bin", MimeType: "application/octet-stream", Size: 2 << 20, URL: "https://files.test/huge.bin"},
		// Its declared size is wrong: the download itself is capped.
		chat.Attachment{Name: "liar.txt", MimeType: "text/plain", Size: 10, URL: "https://files.test/liar.txt"})
	r.waitText(th, "I couldn't use these files: huge.bin (larger than the 1 MB limit), liar.txt (larger than the 1 MB limit)")
	r.waitRuns(th, 1)
	text := strings.Join(userTexts(r.lastRequest()), "\n")
	if !strings.Contains(text, "could not be used: huge.bin") || strings.Contains(text, "saved outside the repository") {
		t.Errorf("the model's text about the files:\n%s", text)
	}
}

// TestSmallDownloadLimitIsNamedRight: a limit under 1 MB must not be told as
// "the 0 MB limit".
func TestSmallDownloadLimitIsNamedRight(t *testing.T) {
	t.Parallel()

	r := newRig(t, func(c *Config, _ *Platform) { c.MaxDownloadBytes = 500_000 })
	r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
	th := testThread("43.1")
	r.say(th, alice, "look", true, chat.Attachment{Name: "big.bin", Size: 600_000, URL: "https://files.test/big.bin"})
	r.waitText(th, "I couldn't use these files")
	if tr := r.chat.Transcript(th); strings.Contains(tr, "0 MB") || !strings.Contains(tr, "500 KB") {
		t.Errorf("the limit is named wrongly:\n%s", tr)
	}
}
