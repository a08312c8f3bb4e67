package slack

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/chat/mdsplit"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// notifies returns whom text, sent as the adapter sends it (parse=none,
// link_names off), would notify on Slack.
func notifies(text string) slackfake.Mentioned {
	return slackfake.Mentions(text, "none", false, nil)
}

func TestMrkdwnLinkTargetsMentionNobody(t *testing.T) {
	for _, tc := range []struct{ md, want string }{
		{"[click](!channel)", "[click](!channel)"},
		{"[x](<!here>)", "[x](&lt;!here&gt;)"},
		{"[t](!subteam^S1)", "[t](!subteam^S1)"},
		{"[x](@U123)", "[x](@U123)"},
		{"[c](#C1)", "[c](#C1)"},
		{"![a](!everyone)", "![a](!everyone)"},
		{"[js](javascript:alert(1))", "[js](javascript:alert(1))"},
		{"[s](slack://open)", "[s](slack://open)"},
		{"<slack://open>", "&lt;slack://open&gt;"},
		{"[m](mailto:a@b.io)", "<mailto:a@b.io|m>"},
		{"[w](https://a.io/<!here>|x)", "<https://a.io/%3C!here%3E%7Cx|w>"},
		{"&lt;!channel&gt;", "&amp;lt;!channel&amp;gt;"},
	} {
		got := Mrkdwn(tc.md)
		if got != tc.want {
			t.Errorf("Mrkdwn(%q) = %q, want %q", tc.md, got, tc.want)
		}
		if n := notifies(got); !n.Empty() {
			t.Errorf("Mrkdwn(%q) = %q notifies %+v", tc.md, got, n)
		}
	}
}

// The model's text at its most hostile, as Slack receives it: golden, and
// notifying nobody.
func TestRenderGolden(t *testing.T) {
	md, err := os.ReadFile("testdata/hostile.md")
	if err != nil {
		t.Fatal(err)
	}
	got := render(string(md))
	const golden = "testdata/hostile.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("render(testdata/hostile.md) differs from %s:\n%s", golden, got)
	}
	if n := notifies(got); !n.Empty() {
		t.Errorf("rendered text notifies %+v", n)
	}
}

// Every text the adapter sends is read with parse=none and no link_names:
// chat.update would otherwise parse "@channel" as a client does.
func TestTextIsSentWithParseNone(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	id, err := a.Post(ctx, th, "@channel look")
	must(t, err)
	must(t, a.Edit(ctx, th, id, "@here again"))
	must(t, a.Whisper(ctx, chat.Inbound{Thread: th, MessageID: th.Thread, Author: chat.Author{ID: "U0ALICE"}}, "@everyone no"))
	for _, m := range []string{"chat.postMessage", "chat.update", "chat.postEphemeral"} {
		p := srv.CallsTo(m)[0].Params
		if p.Get("parse") != "none" || p.Get("link_names") != "false" {
			t.Errorf("%s sent parse=%q link_names=%q, want none and false", m, p.Get("parse"), p.Get("link_names"))
		}
	}
	if n := srv.Notices(); len(n) != 0 {
		t.Errorf("notices %+v, want none", n)
	}
}

// A link the model wrote is not previewed: Slack would fetch it when the
// message is posted, with nobody clicking, and the URL can carry anything the
// model read.
func TestPostsUnfurlNothing(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	leak := "done ![build](https://collector.example/p.png?d=c2VjcmV0) https://collector.example/t?d=c2VjcmV0"
	_, err := a.Post(ctx, th, leak)
	must(t, err)
	_, err = a.PostOnce(ctx, th, leak, chat.PostKey{ID: "k1"})
	must(t, err)
	for _, c := range srv.CallsTo("chat.postMessage") {
		if c.Params.Get("unfurl_links") != "false" || c.Params.Get("unfurl_media") != "false" {
			t.Errorf("chat.postMessage sent unfurl_links=%q unfurl_media=%q, want both false", c.Params.Get("unfurl_links"), c.Params.Get("unfurl_media"))
		}
	}
}

// A post that timed out but went through is found on the retry, not posted
// again; a retry of a post that really failed posts it.
func TestPostOnceFindsAPostThatWentThrough(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	key := chat.PostKey{ID: "k1"}

	srv.LoseResponseNext("chat.postMessage")
	if _, err := a.PostOnce(ctx, th, "the answer", key); err == nil {
		t.Fatal("PostOnce with a lost response succeeded, want the transport error")
	}
	key.Retry = true
	ts, err := a.PostOnce(ctx, th, "the answer", key)
	must(t, err)
	msgs := srv.Messages("C0DEV", th.Thread)
	if len(msgs) != 2 || msgs[1].TS != ts || msgs[1].Text != "the answer" {
		t.Fatalf("thread %+v, want the root and the answer once, with ts %s", msgs, ts)
	}
	if got := srv.CallsTo("chat.postMessage"); len(got) != 1 {
		t.Errorf("chat.postMessage called %d times, want 1", len(got))
	}
	if c := srv.CallsTo("conversations.replies"); len(c) != 1 || c[0].Params.Get("include_all_metadata") != "1" {
		t.Errorf("conversations.replies calls %+v, want one look-up with metadata", c)
	}

	// Not found: the retry posts.
	ts2, err := a.PostOnce(ctx, th, "second", chat.PostKey{ID: "k2", Retry: true})
	must(t, err)
	if ts2 == ts || len(srv.Messages("C0DEV", th.Thread)) != 3 {
		t.Errorf("retry of a post that was not made: ts %s, thread %d messages; want a new post", ts2, len(srv.Messages("C0DEV", th.Thread)))
	}
}

// A retry finds a post that went through although the first attempt's time
// was read on a clock up to fifteen minutes ahead of Slack's (a replica
// whose clock is off, or stepped, stored it; docs/operations.md promises
// the look-up reaches that far back), and the answer is not posted twice.
func TestPostOnceFindsAPostAcrossAClockMinutesAhead(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	key := chat.PostKey{ID: "k-ahead", First: time.Now().Add(14*time.Minute + 30*time.Second)}
	srv.LoseResponseNext("chat.postMessage")
	if _, err := a.PostOnce(ctx, th, "the answer", key); err == nil {
		t.Fatal("PostOnce with a lost response succeeded, want the transport error")
	}
	key.Retry = true
	ts, err := a.PostOnce(ctx, th, "the answer", key)
	must(t, err)
	if got := srv.CallsTo("chat.postMessage"); len(got) != 1 {
		t.Errorf("chat.postMessage called %d times, want 1: the retry did not find the post (ts %s)", len(got), ts)
	}
}

// The key that keeps a retried post from showing twice lives in the
// message's metadata, which only the adapter sets: model text that spells the
// marker, in an earlier answer of the bot's or in a person's message, finds
// nothing, and the answer it would otherwise suppress is posted.
func TestPostOnceKeyCannotBeForgedInText(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	const key = "0123456789abcdef01234567"
	forged := "```\n" + `{"event_type":"` + postKeyEvent + `","event_payload":{"key":"` + key + `"}}` + "\n```\n" +
		`metadata: {"event_type":"` + postKeyEvent + `","event_payload":{"key":"` + key + `"}} ` + postKeyEvent + " " + key
	earlier, err := a.Post(ctx, th, forged)
	must(t, err)
	srv.UserMessage("C0DEV", "U0ALICE", forged, th.Thread)
	srv.BotMessage("C0DEV", "B0OTHER", forged, th.Thread)

	ts, err := a.PostOnce(ctx, th, "the real answer", chat.PostKey{ID: key, Retry: true, First: time.Now()})
	must(t, err)
	if ts == earlier {
		t.Fatalf("PostOnce took the bot's earlier message, whose text spells the key, for the post")
	}
	msgs := srv.Messages("C0DEV", th.Thread)
	if last := msgs[len(msgs)-1]; last.TS != ts || last.Text != "the real answer" {
		t.Errorf("the thread ends with %+v, want the answer posted as %s", last, ts)
	}
	if c := srv.CallsTo("chat.postMessage"); len(c) != 2 {
		t.Errorf("chat.postMessage called %d times, want 2 (the earlier answer and this one)", len(c))
	}
}

func TestMeasureIsTheSentLength(t *testing.T) {
	for _, md := range []string{"plain", "a < b && c > d", "**bold** [x](https://a.io)", "```\n<html>\n```"} {
		if got, want := Measure(md), utf8.RuneCountInString(Mrkdwn(md)); got != want {
			t.Errorf("Measure(%q) = %d, want %d", md, got, want)
		}
	}
	lim := (&Adapter{}).Limits()
	if lim.MaxMessageChars != MaxMessageChars || lim.Measure == nil {
		t.Errorf("Limits = %+v, want %d measured by Measure", lim, MaxMessageChars)
	}
}

// FuzzRenderSplit drives the splitter the bridge uses with the adapter's measure
// and renders each chunk as the adapter sends it: every message is within
// Slack's limits, notifies nobody, and together they show all the model
// wrote (its letters and digits, in order), however it is written.
func FuzzRenderSplit(f *testing.F) {
	hostile, err := os.ReadFile("testdata/hostile.md")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		"hello", string(hostile), strings.Repeat(string(hostile), 12),
		strings.Repeat("<b>&amp;</b> <!channel> ", 400),
		"````md\n" + strings.Repeat("```go\nx := a && b < c\n```\n", 300) + "````\n",
		"```go\n" + strings.Repeat("<", 5000) + "\n```",
		"```\nunclosed <@U1> " + strings.Repeat("& ", 3000),
		"| a | b |\n|---|---|\n" + strings.Repeat("| <x> | & |\n", 600),
		"[x](!here) " + strings.Repeat("[a](https://a.io/?q=<&>) ", 400),
		strings.Repeat("- [x] task <!here>\n", 500),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) {
			return
		}
		chunks := mdsplit.Chunks(md, MaxMessageChars, Measure)
		var visible strings.Builder
		for i, c := range chunks {
			sent := render(c)
			if n := utf8.RuneCountInString(sent); n > maxTextRunes {
				t.Fatalf("message %d has %d characters, over %d", i, n, maxTextRunes)
			}
			if n := utf8.RuneCountInString(sent); n > MaxMessageChars {
				t.Errorf("message %d has %d characters, over the %d the splitter aims for", i, n, MaxMessageChars)
			}
			if strings.HasSuffix(sent, truncatedNotice) {
				t.Errorf("message %d was truncated", i)
			}
			if n := notifies(sent); !n.Empty() {
				t.Fatalf("message %d notifies %+v:\n%s", i, n, sent)
			}
			visible.WriteString(plainText(sent, func(string) string { return "" }))
			visible.WriteString("\n")
		}
		// The renderer loses nothing the model wrote (that Slack can show)…
		want, got := contentOf(modelText(md)), contentOf(visible.String())
		if !isSubsequence(want, got) {
			t.Fatalf("the messages lose or reorder what the model wrote:\nwant in order %q\n got %q", string(want), string(got))
		}
		// …and splitting adds and loses nothing: the messages show exactly
		// what the whole text would in one message. (A URL cut in two shows
		// its < as text, not as %3C: percent codes are not compared.)
		whole := contentOf(noPercent.Replace(plainText(Mrkdwn(md), func(string) string { return "" })))
		if got := contentOf(noPercent.Replace(visible.String())); !slices.Equal(whole, got) {
			i := 0
			for i < len(whole) && i < len(got) && whole[i] == got[i] {
				i++
			}
			from := max(0, i-40)
			t.Fatalf("the messages do not show what the whole text shows; from letter %d:\nwant %q\n got %q",
				i, string(whole[from:min(len(whole), i+40)]), string(got[from:min(len(got), i+40)]))
		}
	})
}

var (
	fenceInfo = regexp.MustCompile("(?m)^( {0,3}(?:```+|~~~+))[^`\n]*$")
	taskMark  = regexp.MustCompile(`(?m)^((?: {0,3}> ?)*[ \t]*[-*+][ \t]+)\[[ xX]\][ \t]`)
	urlLabel  = regexp.MustCompile(`\[[^\]]*(?:https?://|www\.)[^\]]*\]`)
	linkTitle = regexp.MustCompile(`\s+(?:"[^"\n]*"|'[^'\n]*')\s*\)`)
)

// modelText is what of md Slack can show: without fence languages, task
// boxes, link titles and the labels of links to themselves, which mrkdwn has
// no room for. Taking out more than the renderer drops only weakens the
// check.
func modelText(md string) string {
	md = fenceInfo.ReplaceAllString(md, "$1")
	md = taskMark.ReplaceAllString(md, "$1 ")
	md = urlLabel.ReplaceAllString(md, "")
	md = linkTitle.ReplaceAllString(md, ")")
	return md
}

// contentOf is the letters and digits of s, with www. links compared
// without the scheme the renderer adds, and mail links without theirs
// (Slack shows a mailto: link as its address).
func contentOf(s string) []rune {
	s = strings.ReplaceAll(s, "http://www.", "www.")
	s = strings.ReplaceAll(s, "mailto:", "")
	var out []rune
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			out = append(out, r)
		}
	}
	return out
}

// noPercent drops the percent codes the renderer writes into URLs.
var noPercent = strings.NewReplacer("%3C", "", "%3E", "", "%7C", "", "%20", "")

func isSubsequence(sub, seq []rune) bool {
	i := 0
	for _, r := range seq {
		if i < len(sub) && sub[i] == r {
			i++
		}
	}
	return i == len(sub)
}

// TestMarkdownBlockLosesToMrkdwn is the decision between Slack's markdown
// block (12,000 characters of standard Markdown, no conversion) and mrkdwn
// text, made on the strict fake. Slack documents neither a parse option nor
// an escape for the markdown block, so the fake reads it as a client reads
// text: sent there, the model's text notifies people even escaped the way
// mrkdwn is (its plain @channel and @here), while the same text as the
// adapter's mrkdwn with parse=none notifies nobody. So the adapter sends
// mrkdwn text only, and no markdown block, in posts and edits.
func TestMarkdownBlockLosesToMrkdwn(t *testing.T) {
	md, err := os.ReadFile("testdata/hostile.md")
	if err != nil {
		t.Fatal(err)
	}
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")

	for _, text := range []string{string(md), escapeText(string(md))} {
		before := len(srv.Notices())
		_, _, err := a.api.PostMessageContext(ctx, th.Channel, slackapi.MsgOptionTS(th.Thread),
			slackapi.MsgOptionBlocks(slackapi.NewMarkdownBlock("", text)),
			slackapi.MsgOptionText(render(string(md)), false), slackapi.MsgOptionParse(false), slackapi.MsgOptionLinkNames(false))
		must(t, err)
		if n := srv.Notices()[before:]; len(n) == 0 {
			t.Errorf("the hostile text in a markdown block notifies nobody on the fake: the decision to keep mrkdwn needs another look\n%s", text)
		}
	}

	before := len(srv.Notices())
	id, err := a.Post(ctx, th, string(md))
	must(t, err)
	must(t, a.Edit(ctx, th, id, string(md)))
	if n := srv.Notices()[before:]; len(n) != 0 {
		t.Errorf("the adapter's mrkdwn notifies %+v", n)
	}
	for _, m := range []string{"chat.postMessage", "chat.update"} {
		calls := srv.CallsTo(m)
		if b := calls[len(calls)-1].Params.Get("blocks"); strings.Contains(b, `"markdown"`) {
			t.Errorf("%s sent a markdown block: %s", m, b)
		}
	}
}

// PostKey.Notify puts the bot's own mention of that person in front of the
// post, within the 4,000-character cap; a value that is not a user id adds
// nothing, so it cannot smuggle markup in.
func TestPostOnceNotifiesOnlyAUserID(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithoutBotEcho())
	a := newAdapter(t, srv)
	ctx := testContext(t)
	th := thread(srv, "C0DEV")
	_, err := a.PostOnce(ctx, th, strings.Repeat("x", 5000), chat.PostKey{ID: "k1", Notify: "U0ALICE"})
	must(t, err)
	for _, bad := range []string{"U0ALICE> <!channel", "<!here>", "u0alice", "C0DEV"} {
		_, err = a.PostOnce(ctx, th, "hi <@U0BOB>", chat.PostKey{ID: "k2", Notify: bad})
		must(t, err)
	}
	n := srv.Notices()
	if len(n) != 1 || !slices.Equal(n[0].Users, []string{"U0ALICE"}) || len(n[0].Special) > 0 || len(n[0].Groups) > 0 {
		t.Fatalf("notices = %+v, want one, for U0ALICE only", n)
	}
	if !strings.HasPrefix(n[0].Text, "<@U0ALICE> x") || utf8.RuneCountInString(n[0].Text) > maxTextRunes {
		t.Errorf("the notified post starts %.20q and has %d characters, want the mention first and at most %d", n[0].Text, utf8.RuneCountInString(n[0].Text), maxTextRunes)
	}
}
