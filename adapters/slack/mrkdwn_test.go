package slack

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMrkdwn(t *testing.T) {
	tests := []struct {
		name, md, want string
	}{
		{"plain", "hello world", "hello world"},
		{"bold", "this is **bold** text", "this is *bold* text"},
		{"bold underscores", "this is __bold__ text", "this is *bold* text"},
		{"italic star", "this is *it* text", "this is _it_ text"},
		{"italic underscore", "this is _it_ text", "this is _it_ text"},
		{"bold italic", "***both***", "*_both_*"},
		{"italic inside bold", "**bold *it* more**", "*bold _it_ more*"},
		{"bold inside italic", "*it **bold** it*", "_it *bold* it_"},
		{"strike", "~~gone~~ stays", "~gone~ stays"},
		{"single tilde is about", "about ~5 min or ~10 min", "about ~5 min or ~10 min"},
		{"snake case", "call snake_case_name and __init__", "call snake_case_name and *init*"},
		{"math stars", "2 * 3 * 4 = 24", "2 * 3 * 4 = 24"},
		{"glob", "matches src/**/*.go files", "matches src/**/*.go files"},
		{"unmatched", "a **b without end", "a **b without end"},
		{"bold then punct", "**Note**: read this", "*Note*: read this"},
		{"link", "see [the docs](https://example.com/a?b=1&c=2)", "see <https://example.com/a?b=1&amp;c=2|the docs>"},
		{"link with formatting in label", "[**bold** `x`](https://x.io)", "<https://x.io|bold x>"},
		{"link with parens", "[wiki](https://en.wikipedia.org/wiki/Go_(language))", "<https://en.wikipedia.org/wiki/Go_(language)|wiki>"},
		{"link with title", `[a](https://a.io "Title")`, "<https://a.io|a>"},
		{"link label is url", "[https://a.io](https://a.io)", "<https://a.io>"},
		{"image", "![diagram](https://a.io/d.png)", "<https://a.io/d.png|diagram>"},
		{"not a link", "array[0] (first)", "array[0] (first)"},
		{"bold link", "**see [docs](https://a.io)**", "*see <https://a.io|docs>*"},
		{"autolink", "go to <https://a.io/x_y_z>", "go to <https://a.io/x_y_z>"},
		{"autolink email", "mail <bob@example.com>", "mail <mailto:bob@example.com|bob@example.com>"},
		{"bare url keeps underscores", "open https://a.io/some_path_here.", "open <https://a.io/some_path_here>."},
		{"bare url in parens", "(see https://a.io/x)", "(see <https://a.io/x>)"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"slack markup from the model is shown, not run", "ping <!channel> and <@U123>", "ping &lt;!channel&gt; and &lt;@U123&gt;"},
		{"html", "<br> tag", "&lt;br&gt; tag"},
		{"code span untouched", "run `a **b** <c> & d`", "run `a **b** &lt;c&gt; &amp; d`"},
		{"double backtick span", "``a ` b``", "`a ` b`"},
		{"unmatched backtick", "a ` b **c**", "a ` b *c*"},
		{"escaped star", `not \*italic\*`, "not *italic*"},
		{"heading", "# Title", "*Title*"},
		{"heading with bold", "## The **big** one ##", "*The big one*"},
		{"heading with italic", "### a _b_ c", "*a _b_ c*"},
		{"hashtag is not heading", "#hashtag", "#hashtag"},
		{"bullets", "- one\n* two\n+ three\n  - nested **b**", "• one\n• two\n• three\n  • nested *b*"},
		{"tasks", "- [ ] todo\n- [x] done", "☐ todo\n☑ done"},
		{"ordered", "1. first\n2) second", "1. first\n2. second"},
		{"quote", "> quoted **text**\n> > deeper", "> quoted *text*\n> > deeper"},
		{"rule", "above\n\n---\n\nbelow", "above\n\n──────────\n\nbelow"},
		{"fence drops language", "```go\nfunc main() { a := b && c }\n```", "```\nfunc main() { a := b &amp;&amp; c }\n```"},
		{"fence content not converted", "```\n**not bold** [x](y) # h\n- item\n```", "```\n**not bold** [x](y) # h\n- item\n```"},
		{"tilde fence", "~~~python\nx = 1\n~~~", "```\nx = 1\n```"},
		{"longer fence holds shorter", "````md\n```go\nx\n```\n````", "```\n``\u200b`go\nx\n``\u200b`\n```"},
		{"backtick runs in code cannot end it", "```\nq := \"`````\" + \"``\"\n```", "```\nq := \"``\u200b``\u200b`\" + \"``\"\n```"},
		{"backtick runs in a table", "| a | ``` |\n|---|---|", "```\n| a | ``\u200b` |\n|---|---|\n```"},
		{"indented fence", "1. step\n   ```sh\n   make\n   ```", "1. step\n```\n   make\n```"},
		{"unclosed fence stays code", "```\n**x**", "```\n**x**"},
		{"inline triple backticks", "use ```x``` here", "use `x` here"},
		{"escaped backticks open no block", "\\`\\`\\`\nafter", "``\u200b`\nafter"},
		{"escaped backticks before a block", "  \\`\\`\\` is a fence:\n```\nx\n```", "  ``\u200b` is a fence:\n```\nx\n```"},
		{"table becomes code", "| a | b |\n|---|:-:|\n| 1 | **2** |\ntext", "```\n| a | b |\n|---|:-:|\n| 1 | **2** |\n```\ntext"},
		{"crlf", "**a**\r\nb", "*a*\nb"},
		{"private use rune kept", "x \ue000 y **z**", "x \ue000 y *z*"},
		{"blank lines kept", "a\n\n\nb", "a\n\n\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Mrkdwn(tt.md); got != tt.want {
				t.Errorf("Mrkdwn(%q)\n got %q\nwant %q", tt.md, got, tt.want)
			}
		})
	}
}

func TestMrkdwnPathologicalIsFast(t *testing.T) {
	// Thousands of delimiters that never close must not take quadratic time.
	md := strings.Repeat("**a *b _c ~~d ", 3000)
	got := Mrkdwn(md)
	if !strings.HasPrefix(got, "**a *b _c ~~d") {
		t.Errorf("Mrkdwn of unmatched delimiters begins %q, want them literal", got[:20])
	}
}

func TestFitText(t *testing.T) {
	short := strings.Repeat("x", maxTextRunes)
	if got := fitText(short); got != short {
		t.Errorf("fitText of exactly %d runes changed it (len %d)", maxTextRunes, len(got))
	}

	long := "```\n" + strings.Repeat("é &amp; ", 10000) // inside an unclosed block, with entities
	got := fitText(long)
	if n := utf8.RuneCountInString(got); n > maxTextRunes {
		t.Errorf("fitText left %d runes, want at most %d", n, maxTextRunes)
	}
	if !strings.HasSuffix(got, truncatedNotice) {
		t.Errorf("fitText result ends %q, want the truncation notice", got[len(got)-40:])
	}
	body := strings.TrimSuffix(got, truncatedNotice)
	if !strings.HasSuffix(body, "\n```") || strings.Count(body, "```")%2 != 0 {
		t.Errorf("truncated text inside a code block does not close it: ends %q", body[len(body)-20:])
	}
	inner := strings.TrimSuffix(body, "\n```")
	if i := strings.LastIndexByte(inner, '&'); i >= 0 && !strings.Contains(inner[i:], ";") {
		t.Errorf("truncation split an entity: ends %q", inner[len(inner)-10:])
	}

	link := strings.Repeat("a", maxTextRunes-10) + "<https://example.com/long|label>" + strings.Repeat("b", 100)
	got = fitText(link)
	if strings.Contains(got, "<https") {
		t.Errorf("truncation kept part of a link: %q", got[maxTextRunes-200:])
	}
}

// Backticks the model writes in prose are text: cutting after them must not
// add a closing fence, which would open a code block in Slack and show the
// notice inside it.
func TestFitTextTakesNoProseBackticksForAFence(t *testing.T) {
	// As Mrkdwn wrote it before it broke prose backticks.
	mrkdwn := "Type ``` to start a block.\n\n" + strings.Repeat("plain words ", 1000)
	body := strings.TrimSuffix(fitText(mrkdwn), truncatedNotice)
	if strings.HasSuffix(body, "```") {
		t.Errorf("truncated prose was given a fence: ends %q", body[len(body)-20:])
	}
}
