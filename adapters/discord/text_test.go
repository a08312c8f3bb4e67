package discord_test

import (
	"testing"

	"github.com/threadsmith/threadsmith/adapters/discord"
	"github.com/threadsmith/threadsmith/chat"
	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// Discord's code blocks are ``` only and end at the next ```: the fences the
// model may use otherwise are sent as ```, and backtick runs inside a block
// cannot end it.
func TestTextFencesAsDiscordReadsThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, md, want string }{
		{"plain text unchanged", "a `b` **c** ~~d~~ <@1>", "a `b` **c** ~~d~~ <@1>"},
		{"three backticks unchanged", "```go\nx := 1\n```", "```go\nx := 1\n```"},
		{"tilde fence", "~~~python\na * b * c\n~~~", "```python\na * b * c\n```"},
		{"four backticks hold three", "````md\n```go\nx\n```\n````", "```md\n``\u200b`go\nx\n``\u200b`\n```"},
		{"longer closing fence", "```\ncode\n`````\nafter", "```\ncode\n```\nafter"},
		{"shorter fence inside is code", "~~~~\n~~~\n~~~~", "```\n~~~\n```"},
		{"indented fence keeps its indent", "1. step\n   ```sh\n   make\n   ```", "1. step\n   ```sh\n   make\n   ```"},
		{"unclosed block", "````\nx ``` y", "```\nx ``\u200b` y"},
		{"inline triple backticks outside code", "use ```x``` here", "use ```x``` here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := discord.Text(tc.md); got != tc.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", tc.md, got, tc.want)
			}
			if got, want := discord.Measure(tc.md), len([]rune(tc.want)); got != want {
				t.Errorf("Measure(%q) = %d, want %d", tc.md, got, want)
			}
		})
	}
}

// Every way the adapter sends the model's text (a post, an edit, a status
// with buttons) sends it as Text: a ~~~ block shows as code, and a ``` line
// inside a ```` block does not end it.
func TestPostsAndEditsSendText(t *testing.T) {
	t.Parallel()
	fake := discordfake.New(t)
	e := start(t, fake, baseConfig(fake))
	ctx := ctxT(t)
	ref := chat.ThreadRef{Platform: "discord", Team: guild, Channel: general, Thread: general}
	md := "~~~python\nprint(a * b)\n~~~\n````md\n```go\nx := 1\n```\n````"
	want := discord.Text(md)
	if want == md {
		t.Fatal("Text leaves the sample as it is: the test would prove nothing")
	}
	check := func(how, id string) {
		t.Helper()
		if m, _ := fake.Message(id); m.Content != want {
			t.Errorf("%s sent %q, want %q", how, m.Content, want)
		}
	}
	id, err := e.a.Post(ctx, ref, md)
	if err != nil {
		t.Fatal(err)
	}
	check("Post", id)
	if err := e.a.Edit(ctx, ref, id, "x"); err != nil {
		t.Fatal(err)
	}
	if err := e.a.Edit(ctx, ref, id, md); err != nil {
		t.Fatal(err)
	}
	check("Edit", id)
	if err := e.a.Edit(ctx, ref, id, "x"); err != nil {
		t.Fatal(err)
	}
	if err := e.a.SetActions(ctx, ref, id, md, []chat.Action{{ID: "stop", Label: "Stop"}}); err != nil {
		t.Fatal(err)
	}
	check("SetActions", id)
}
