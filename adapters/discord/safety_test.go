package discord_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/chat/mdsplit"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// wireMentions is allowed_mentions as the adapter sends it, read back as
// Discord reads it.
func wireMentions(t testing.TB, a *discord.Adapter, channel string) *discordfake.AllowedMentions {
	raw, err := json.Marshal(discord.AllowedMentionsIn(a, channel))
	if err != nil {
		t.Fatal(err)
	}
	var am discordfake.AllowedMentions
	if err := json.Unmarshal(raw, &am); err != nil {
		t.Fatal(err)
	}
	return &am
}

var fenceInfo = regexp.MustCompile("(?m)^( {0,3}(?:```+|~~~+))[^`\n]*$")

// visible is what a message shows, for comparing content: fences without
// their language (a reopened block repeats it), no whitespace and no
// zero-width space (Text breaks backtick runs in code with it).
func visible(s string) string {
	s = strings.ReplaceAll(s, "\u200b", "")
	s = fenceInfo.ReplaceAllString(s, "")
	return strings.Join(strings.Fields(strings.NewReplacer("```", "", "~~~", "").Replace(s)), "")
}

// FuzzSplitMentions splits any model text at Discord's limit as the bridge
// does and checks each message as the adapter sends it (Text): at most 2,000
// characters, pinging nobody but the requester whatever it names, no ```
// left inside a block (Discord would end it there), and all together
// showing exactly what the model wrote.
func FuzzSplitMentions(f *testing.F) {
	for _, seed := range []string{
		"hello",
		"@everyone @here <@&1000000000000000030> <@1000000000000000041> <@!1000000000000000041> <@1000000000000000040>",
		strings.Repeat("ping <@1000000000000000041> @everyone ", 200),
		"````md\n" + strings.Repeat("```go\nx := 1 // <@1000000000000000041>\n```\n", 200) + "````\n",
		"```go\n" + strings.Repeat("x", 3000) + "\n```",
		"```\nunclosed " + strings.Repeat("@here ", 800),
		"~~~\n" + strings.Repeat("~~~~~~\n", 10),
		"~~~python\nprint(a * b * c)\n~~~\n````md\n```go\n" + strings.Repeat("x := \"```\"\n", 400) + "```\n````",
	} {
		f.Add(seed)
	}
	fake := discordfake.New(f)
	a, err := discord.New(discord.Config{Token: fake.Token()}, discord.Options{})
	if err != nil {
		f.Fatal(err)
	}
	const channel, requester = "1000000000000000100", discordfake.AliceID
	discord.SetRequester(a, channel, requester)
	am := wireMentions(f, a, channel)
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) {
			return
		}
		chunks := mdsplit.Chunks(md, discord.MaxMessageChars, a.Limits().Measure)
		for i := range chunks {
			chunks[i] = discord.Text(chunks[i])
		}
		for i, c := range chunks {
			if n := utf8.RuneCountInString(c); n > discord.MaxMessageChars {
				t.Fatalf("message %d has %d characters, over %d", i, n, discord.MaxMessageChars)
			}
			open := false
			for _, l := range strings.Split(c, "\n") {
				lt := strings.TrimLeft(l, " ")
				switch {
				case !open && len(l)-len(lt) <= 3 && strings.HasPrefix(lt, "```") && !strings.Contains(lt[3:], "`"):
					open = true
				case open && strings.TrimSpace(l) == "```":
					open = false
				case open && strings.Contains(l, "```"):
					t.Fatalf("message %d has a ``` inside a code block, where Discord would end it: %q", i, l)
				}
			}
			got := discordfake.Notified(c, am)
			if got.Everyone || len(got.Roles) > 0 || len(got.Users) > 1 || (len(got.Users) == 1 && got.Users[0] != requester) {
				t.Fatalf("message %d pings %+v, want at most the requester", i, got)
			}
		}
		if want, got := visible(md), visible(strings.Join(chunks, "\n")); got != want {
			t.Fatalf("the messages do not show what the model wrote:\nwant %q\n got %q", want, got)
		}
	})
}

// Without a requester nobody may be pinged; with one, only they.
func TestAllowedMentionsAtMostTheRequester(t *testing.T) {
	t.Parallel()
	a, err := discord.New(discord.Config{Token: "x"}, discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	content := "@everyone <@&1> <@2> <@3>"
	if got := discordfake.Notified(content, wireMentions(t, a, "C")); !got.Empty() {
		t.Errorf("no requester: pings %+v, want nobody", got)
	}
	discord.SetRequester(a, "C", "3")
	if got := discordfake.Notified(content, wireMentions(t, a, "C")); got.Everyone || len(got.Roles) > 0 || len(got.Users) != 1 || got.Users[0] != "3" {
		t.Errorf("requester 3: pings %+v, want 3 only", got)
	}
}

// A post whose response was lost is retried with the same nonce: one message.
func TestPostOnceWithLostResponse(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	key := chat.PostKey{ID: "0123456789abcdef01234567"}
	fake.LoseResponseNext("POST /api/v9/channels/{channel}/messages")
	if _, err := e.a.PostOnce(ctx, ref, "exactly once", key); err == nil {
		t.Fatal("PostOnce with a lost response succeeded, want the transport error")
	}
	key.Retry = true
	id, err := e.a.PostOnce(ctx, ref, "exactly once", key)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range fake.Messages(general) {
		if m.Content == "exactly once" {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) != 1 || ids[0] != id {
		t.Errorf("messages %v, want one, %s", ids, id)
	}
}

// An upload whose response was lost is retried with the same nonce: the
// file is posted once, and the retry sends the file again unread.
func TestUploadOnceWithLostResponse(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	key := chat.PostKey{ID: "0123456789abcdef0123456u"}
	fake.LoseResponseNext("POST /api/v9/channels/{channel}/messages")
	if err := e.a.UploadOnce(ctx, ref, "change.diff", []byte("+a\n"), "the patch", key); err == nil {
		t.Fatal("UploadOnce with a lost response succeeded, want the transport error")
	}
	key.Retry = true
	if err := e.a.UploadOnce(ctx, ref, "change.diff", []byte("+a\n"), "the patch", key); err != nil {
		t.Fatal(err)
	}
	var files int
	for _, m := range fake.Messages(general) {
		for _, a := range m.Attachments {
			if a.Filename == "change.diff" && string(a.Data) == "+a\n" {
				files++
			}
		}
	}
	if files != 1 {
		t.Errorf("change.diff posted %d times, want 1", files)
	}
	var nonces int
	for _, r := range fake.Requests() {
		if r.Method == "POST" && len(r.Files) == 1 && strings.Contains(string(r.Body), `"enforce_nonce":true`) && strings.Contains(string(r.Body), key.ID) {
			nonces++
		}
	}
	if nonces != 2 {
		t.Errorf("%d multipart requests with the nonce enforced, want 2 (the attempt and its retry)", nonces)
	}
}

// A conversation Discord no longer has (Unknown Channel on catch-up) is
// closed, so later reconnects do not ask for it.
func TestCatchUpClosesConversationsThatAreGone(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	gone := chat.ThreadRef{Platform: "discord", Team: guild, Channel: "1999999999999999999", Thread: "1999999999999999999"}
	e.h.set(func(h *recorder) { h.sessions[gone.Key()] = &cursor{ref: gone, lastSeen: gone.Channel} })
	// Whether the reconnect resumes or (when the drop lands mid-handshake
	// on a loaded machine) identifies anew, it catches up, and that closes
	// the conversation.
	fake.DropGateway()
	e.h.waitFor(t, "the gone conversation closed", func() bool { return len(e.h.closed) == 1 && e.h.closed[0] == gone })
}

// Someone who takes no direct messages gets a ⛔ on their message, and
// nothing in the channel names them.
func TestWhisperWithoutDMsReacts(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	fake.RefuseDMs(bob)
	m := fake.UserMessage(general, bob, "let me in")
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	err := e.a.Whisper(ctxT(t), chat.Inbound{Thread: ref, MessageID: m.ID, Author: chat.Author{ID: bob}}, "not for you")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range fake.Reactions(general, m.ID) {
		got = append(got, r.Emoji)
	}
	if len(got) != 1 || got[0] != "⛔" {
		t.Errorf("reactions on bob's message: %q, want ⛔", got)
	}
	for _, x := range fake.Messages(general) {
		if x.AuthorBot {
			t.Errorf("the bot wrote in the channel: %q", x.Content)
		}
	}
}

// The requester, the one person the model's text may ping, is whoever the
// handler last accepted input from in the conversation: someone refused (or
// ignored) there cannot make themselves the requester by writing in the
// thread, and @everyone, roles and other people stay unpinged whatever the
// model writes.
func TestRefusedInputDoesNotMakeARequester(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	e.h.set(func(h *recorder) { h.refuse = func(in chat.Inbound) bool { return in.Author.ID == bob } })
	id := fake.SlashCommand(general, alice, "code", map[string]any{"prompt": "fix it"})
	ref := e.h.inbound(t, id).Thread
	fake.UserMessage(ref.Channel, bob, "me too")
	// Bob's second message is handled after the first's Receive returned.
	e.h.inbound(t, fake.UserMessage(ref.Channel, bob, "and again").ID)

	before := len(fake.Notices())
	if _, err := e.a.Post(ctxT(t), ref, "<@"+alice+"> <@"+bob+"> <@&"+discordfake.DevRoleID+"> @everyone @here"); err != nil {
		t.Fatal(err)
	}
	notices := fake.Notices()[before:]
	if len(notices) != 1 || notices[0].Everyone || len(notices[0].Roles) != 0 || !slices.Equal(notices[0].Users, []string{alice}) {
		t.Errorf("the answer pings %+v, want alice only", notices)
	}
}

// A link the model wrote is not previewed: Discord would fetch it as soon as
// the message shows, with nobody clicking, and the URL can carry anything the
// model read. Posts, edits and the edits that set buttons all suppress embeds.
func TestMessagesEmbedNothing(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	leak := "done https://collector.example/t?d=c2VjcmV0"
	id, err := e.a.Post(ctx, ref, leak)
	if err != nil {
		t.Fatal(err)
	}
	once, err := e.a.PostOnce(ctx, ref, leak, chat.PostKey{ID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	flags := func(what, id string) {
		t.Helper()
		for _, m := range fake.Messages(general) {
			if m.ID == id && m.Flags&suppressEmbeds == 0 {
				t.Errorf("%s: flags %b, want SUPPRESS_EMBEDS", what, m.Flags)
			}
		}
	}
	flags("post", id)
	flags("post once", once)
	// Edits and buttons keep it.
	if err := e.a.Edit(ctx, ref, id, leak+" again"); err != nil {
		t.Fatal(err)
	}
	flags("edit", id)
	if err := e.a.SetActions(ctx, ref, once, leak, []chat.Action{{ID: "stop", Label: "Stop"}}); err != nil {
		t.Fatal(err)
	}
	flags("buttons", once)
}

// suppressEmbeds is Discord's SUPPRESS_EMBEDS message flag.
const suppressEmbeds = 1 << 2

// PostKey.Notify puts the bot's own mention of that person in front of the
// post and lets only them be pinged; a value that is not a user id adds
// nothing, so it cannot smuggle markup in.
func TestPostOnceNotifiesOnlyAUserID(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	if _, err := e.a.PostOnce(ctx, ref, "done, <@"+discordfake.BobID+">", chat.PostKey{ID: "k1", Notify: discordfake.AliceID}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"@everyone", discordfake.BobID + "> @everyone <@" + discordfake.BobID, "&" + discordfake.DevRoleID} {
		if _, err := e.a.PostOnce(ctx, ref, "hi", chat.PostKey{ID: "k2", Notify: bad}); err != nil {
			t.Fatal(err)
		}
	}
	n := fake.Notices()
	if len(n) != 1 || !slices.Equal(n[0].Users, []string{discordfake.AliceID}) || n[0].Everyone || len(n[0].Roles) > 0 ||
		!strings.HasPrefix(n[0].Content, "<@"+discordfake.AliceID+"> done") {
		t.Fatalf("notices = %+v, want one post starting with the mention of alice and pinging only her", n)
	}
}

// The adapter's memory of who asked in each channel does not grow with the
// threads served (every Discord thread is a channel): past its bound the
// oldest channels are forgotten, and their messages ping nobody until the
// next input there.
func TestRequestersAreBoundedByTheChannelsSeenLast(t *testing.T) {
	fake := discordfake.New(t)
	a, err := discord.New(discord.Config{Token: fake.Token()}, discord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 3
	discord.SetConversationMemory(a, bound)
	channel := func(i int) string { return fmt.Sprintf("10000000000000002%02d", i) }
	for i := range 2 * bound {
		discord.SetRequester(a, channel(i), discordfake.AliceID)
	}
	if n, _ := discord.RememberedChannels(a); n > bound {
		t.Fatalf("the adapter remembers %d channels' requesters after %d, want at most %d", n, 2*bound, bound)
	}
	if am := discord.AllowedMentionsIn(a, channel(0)); len(am.Users) != 0 {
		t.Errorf("the first channel, forgotten, may ping %v; want nobody", am.Users)
	}
	if am := discord.AllowedMentionsIn(a, channel(2*bound-1)); len(am.Users) != 1 || am.Users[0] != discordfake.AliceID {
		t.Errorf("the last channel may ping %v; want its requester", am.Users)
	}
}
