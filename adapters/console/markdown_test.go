package console

import (
	"context"
	"strings"
	"testing"
)

// An answer's Markdown reads as text: no emphasis markers, links as
// "label (url)", headings without #, bullets as •; code stays as written.
func TestMarkdownIsShownAsText(t *testing.T) {
	md := "# Result\n\nHere is **bold**, __also__, *it*, _it too_ and ~~gone~~.\n" +
		"See [the docs](https://x.example/d) or <https://y.example>.\n" +
		"- one `a_b*c*`\n* two\n\nsnake_case_name and 2*3*4 stay.\n" +
		"```go\nx := **p // *not* touched\n```\n_⏱ 1.2s · 10 in / 2 out_"
	a, out, ts := newTestAdapter()
	a.Post(context.Background(), a.Thread(), md)
	ts.fire()
	want := "bot> Result\n" +
		"bot> Here is bold, also, it, it too and gone.\n" +
		"bot> See the docs (https://x.example/d) or <https://y.example>.\n" +
		"bot> • one `a_b*c*`\n" +
		"bot> • two\n" +
		"bot> snake_case_name and 2*3*4 stay.\n" +
		"bot> ```go\n" +
		"bot> x := **p // *not* touched\n" +
		"bot> ```\n" +
		"bot> ⏱ 1.2s · 10 in / 2 out\n"
	if got := out.String(); got != want {
		t.Fatalf("console shows\n%s\nwant\n%s", got, want)
	}
}

// Markdown streamed a few characters at a time into the status message,
// then posted whole: every line is printed once, as text, and nothing
// printed is taken back (a marker still open is not shown yet).
func TestStreamedMarkdownPrintsEachLineOnce(t *testing.T) {
	md := "Here is **bold** and [a link](https://x.example).\n# Heading\n- item _one_"
	a, out, ts := newTestAdapter()
	ctx := context.Background()
	th := a.Thread()
	h := "⏳ working…"
	id, _ := a.Post(ctx, th, h)
	for n := 1; n <= len(md); n++ {
		if err := a.Edit(ctx, th, id, h+"\n\n"+md[:n]); err != nil {
			t.Fatal(err)
		}
	}
	a.Edit(ctx, th, id, "✓ done")
	a.Post(ctx, th, md)
	ts.fire()
	got := out.String()
	for _, line := range []string{"Here is bold and a link (https://x.example).", "Heading", "• item one"} {
		if n := strings.Count(got, "bot> "+line+"\n"); n != 1 {
			t.Errorf("%q shows %d times on lines of its own, want once:\n%s", line, n, got)
		}
	}
	if strings.ContainsAny(got, "*[#") || strings.Contains(got, "_one") {
		t.Errorf("markup shows:\n%s", got)
	}
}

// The model's Markdown carries terminal controls of every class, inside
// emphasis, a link's label and URL, a heading and a bullet, streamed a
// byte at a time (a sequence split across edits) and then posted whole:
// the terminal receives none of them, and the text around them reads.
func TestStreamedMarkdownReachesTheTerminalInert(t *testing.T) {
	for _, tc := range inertCases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.seq
			md := "# Head" + s + "ing\n- **bo" + s + "ld** and [la" + s + "bel](https://x.example/" + s + ")\n_it" + s + "_ end"
			a, out, ts := newTestAdapter()
			ctx := context.Background()
			th := a.Thread()
			id, _ := a.Post(ctx, th, "⏳ working…")
			for n := 1; n <= len(md); n++ {
				if err := a.Edit(ctx, th, id, "⏳ working…\n\n"+md[:n]); err != nil {
					t.Fatal(err)
				}
			}
			a.Edit(ctx, th, id, "✓ done")
			a.Post(ctx, th, md)
			ts.fire()
			got := out.String()
			for _, r := range got {
				if r == 0x1b || r >= 0x80 && r <= 0x9f || r < 0x20 && r != '\n' || r == 0x7f {
					t.Fatalf("the terminal got %U:\n%q", r, got)
				}
			}
			// A lone ESC takes the character after it (ESC i is a sequence);
			// an 8-bit CSI byte is not UTF-8 and shows as U+FFFD.
			if tc.name != "lone ESC" && tc.name != "raw 8-bit CSI byte" && !strings.Contains(got, "bot> • bold and label (https://x.example/)\n") {
				t.Errorf("the text around the controls does not read:\n%q", got)
			}
		})
	}
}
