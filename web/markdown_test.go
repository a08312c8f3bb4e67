package web

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/markdown/*.html from the renderer")

// mdCases are the golden Markdown inputs (testdata/markdown/<name>.md) and,
// for each, what its HTML must show beyond matching the golden file: the
// golden files can be rewritten with -update, these checks cannot.
var mdCases = []struct {
	name  string
	check func(t *testing.T, root *html.Node, out string)
}{
	{"table", func(t *testing.T, root *html.Node, out string) {
		if n := find(root, is("th")); n == nil || path(n, 4) != "th tr thead table" {
			t.Error("no table with a header row")
		}
		if n := find(root, func(n *html.Node) bool { return n.Data == "td" && attr(n, "align") == "right" }); n == nil || ownText(n) != "1.2 s" {
			t.Error("no right-aligned cell 1.2 s")
		}
		if strings.Contains(out, "| package") {
			t.Error("the table is shown as text")
		}
	}},
	{"nested-lists", func(t *testing.T, root *html.Node, out string) {
		// ol > li > ul > li > ul > li "version"
		if n := find(root, func(n *html.Node) bool { return n.Data == "li" && ownText(n) == "version" }); n == nil ||
			path(n, 6) != "li ul li ul li ol" {
			t.Errorf("the nested item is not three lists deep: %s", path(n, 6))
		}
		if n := find(root, func(n *html.Node) bool { return n.Data == "li" && ownText(n) == "fuzzing" }); n == nil || path(n, 4) != "li ol li ol" {
			t.Errorf("the nested ordered item is not in its list: %s", path(n, 4))
		}
	}},
	{"code-in-list", func(t *testing.T, root *html.Node, out string) {
		n := find(root, func(n *html.Node) bool {
			return n.Data == "pre" && strings.Contains(ownText(n), "return nil, errEmpty")
		})
		if n == nil || path(n, 3) != "pre li ol" {
			t.Errorf("the code block is not inside its list item: %s", path(n, 3))
		}
		if strings.Contains(out, "```") {
			t.Error("the fence is shown as text")
		}
		if find(root, func(n *html.Node) bool { return n.Data == "li" && strings.TrimSpace(textAll(n)) == "Run it again." }) == nil {
			t.Error("the list does not go on after its code")
		}
	}},
	{"task-list", func(t *testing.T, root *html.Node, out string) {
		if got := strings.Count(out, `<span class="task done">☑</span>`); got != 2 {
			t.Errorf("%d done boxes, want 2", got)
		}
		if got := strings.Count(out, `<span class="task">☐</span>`); got != 2 {
			t.Errorf("%d open boxes, want 2", got)
		}
		if strings.Contains(out, "[x]") || find(root, is("input")) != nil {
			t.Error("a task's box is text or a form element")
		}
	}},
	{"diff", func(t *testing.T, root *html.Node, out string) {
		for _, want := range []string{`<span class="tok-gd">-	panic(&#34;&lt;todo&gt;&#34;)`, `<span class="tok-gi">+	return`, `<span class="tok-gu">@@ -1,4 +1,4 @@`} {
			if !strings.Contains(out, want) {
				t.Errorf("the diff lacks %q", want)
			}
		}
	}},
	{"inline-html", func(t *testing.T, root *html.Node, out string) {
		for _, tag := range []string{"kbd", "img", "details", "summary", "script", "style"} {
			if find(root, is(tag)) != nil {
				t.Errorf("a %s element", tag)
			}
		}
		for _, want := range []string{"&lt;kbd&gt;Ctrl&lt;/kbd&gt;", "&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;"} {
			if !strings.Contains(out, want) {
				t.Errorf("the model's HTML is not shown as text: lacks %q", want)
			}
		}
	}},
	{"javascript-link", func(t *testing.T, root *html.Node, out string) {
		var hrefs []string
		walkNodes(root, func(n *html.Node) {
			if n.Data == "a" {
				hrefs = append(hrefs, attr(n, "href"))
			}
		})
		if strings.Join(hrefs, " ") != "https://go.dev/doc https://example.com/a?b=1&c=2" {
			t.Errorf("links %q, want only the two safe ones", hrefs)
		}
		if n := find(root, is("a")); attr(n, "rel") != "nofollow noopener noreferrer" {
			t.Errorf("rel=%q", attr(n, "rel"))
		}
		if !strings.Contains(out, `script <span class="unsafe-link">(javascript:alert(1))</span>`) {
			t.Error("the refused link does not show its destination as text")
		}
	}},
	{"image", func(t *testing.T, root *html.Node, out string) {
		if find(root, is("img")) != nil {
			t.Error("an img element")
		}
		if n := find(root, is("a")); n == nil || attr(n, "href") != "https://example.com/chart.png" || ownText(n) != "image: throughput per core" {
			t.Errorf("the image is not a link labelled with its text: %s", render(n))
		}
		if !strings.Contains(out, `>image</a>`) || !strings.Contains(out, `image: bad <span class="unsafe-link">`) {
			t.Error("an image without text, or with an unsafe URL, is not shown as a link or text")
		}
	}},
}

func TestMarkdownGolden(t *testing.T) {
	for _, tc := range mdCases {
		t.Run(tc.name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "markdown", tc.name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			out := string(markdown(string(src)))
			golden := filepath.Join("testdata", "markdown", tc.name+".html")
			if *updateGolden {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Errorf("markdown(%s.md) differs from %s:\n%s", tc.name, golden, out)
			}
			assertInert(t, out)
			tc.check(t, parse(t, out), out)
		})
	}
}

// The session page shows each golden rendering as it is, under its
// Content-Security-Policy, and its stylesheet colours the highlighter's
// classes (the CSP allows no inline style).
func TestSessionPageRendersMarkdown(t *testing.T) {
	f := newFixture(t)
	f.prompt("alice", "show me")
	var want []string
	for _, tc := range mdCases {
		src, err := os.ReadFile(filepath.Join("testdata", "markdown", tc.name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		f.append(msg(answer(string(src))))
		want = append(want, string(markdown(string(src))))
	}
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(f.pageURL(srv, s))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self';") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	_, body := get(t, f.pageURL(srv, s), nil)
	for i, w := range want {
		if !strings.Contains(body, `<div class="md">`+w+`</div>`) {
			t.Errorf("the page does not show %s.md as rendered", mdCases[i].name)
		}
	}
	assertInert(t, body)

	code, css := get(t, srv.URL+"/assets/style.css", nil)
	if code != http.StatusOK || !strings.Contains(css, ".md table") {
		t.Fatalf("GET style.css = %d, %d bytes", code, len(css))
	}
	for _, rule := range []string{".tok-gi { color:", ".tok-gd { color:", ".tok-kd { color:", "@media (prefers-color-scheme: dark) {\n  .tok-"} {
		if !strings.Contains(css, rule) {
			t.Errorf("the stylesheet lacks %q", rule)
		}
	}
}

func is(tag string) func(*html.Node) bool { return func(n *html.Node) bool { return n.Data == tag } }

func walkNodes(n *html.Node, f func(*html.Node)) {
	if n.Type == html.ElementNode {
		f(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walkNodes(c, f)
	}
}

// ownText is n's own text: its text children and those of its inline
// elements, not of nested blocks, trimmed.
func ownText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				b.WriteString(c.Data)
			case c.Type == html.ElementNode && c.Data != "ul" && c.Data != "ol" && c.Data != "pre" && c.Data != "p":
				walk(c)
			case c.Type == html.ElementNode && c.Data == "pre":
				b.WriteString(textAll(c))
			}
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

func textAll(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(textAll(c))
	}
	return b.String()
}

// path names n and up to depth-1 of its ancestors, innermost first.
func path(n *html.Node, depth int) string {
	var names []string
	for ; n != nil && len(names) < depth; n = n.Parent {
		names = append(names, n.Data)
	}
	return strings.Join(names, " ")
}

// A text whose parsing would take quadratic time (blocks nested thousands
// deep, thousands of link destinations opened in one run of text, more
// than a megabyte) is shown whole as plain text, not parsed.
func TestMarkdownPastItsBoundsIsPlain(t *testing.T) {
	for name, src := range map[string]string{
		"nested quotes": strings.Repeat(">", 50000) + " <b>deep</b>",
		"nested lists":  strings.Repeat(strings.Repeat("- ", 127)+"<b>deep</b>\n", 200),
		"link openers":  strings.Repeat("[a](", 30000) + "<b>",
		"a megabyte":    strings.Repeat("*a* <b>\n", 1<<17+1),
	} {
		out := string(markdown(src))
		if want := `<pre class="code"><code>` + esc(src) + "</code></pre>\n"; out != want {
			t.Errorf("%s: not shown as plain text: %.200q", name, out)
		}
	}
	// Within the bounds, nesting and links are rendered.
	if out := string(markdown(strings.Repeat(">", 20) + " q\n\n" + strings.Repeat("[a](https://a.b) ", 1000))); strings.Count(out, "<blockquote>") != 20 ||
		strings.Count(out, "<a href") != 1000 {
		t.Errorf("a text within the bounds is not rendered: %.300q", out)
	}
}

// Long lines that open no block (a big number, a long rule, a numbered
// marker with no space after it) do not count as nesting: the text around
// them is still rendered as Markdown.
func TestLongFlatLinesAreMarkdown(t *testing.T) {
	for name, line := range map[string]string{
		"digits":         strings.Repeat("1234567890", 301),
		"dashes":         strings.Repeat("-", 3000),
		"stars":          strings.Repeat("*", 3000),
		"dotted version": strings.Repeat("1.", 1500) + "x",
	} {
		out := string(markdown("**bold**\n\n" + line + "\n"))
		if !strings.Contains(out, "<strong>bold</strong>") {
			t.Errorf("%s: a %d-byte flat line made the text plain: %.120q", name, len(line), out)
		}
	}
}

// Code is highlighted up to maxHighlight per block and maxHighlightTotal
// per text; past them it is shown plain, whole.
func TestHighlightIsBounded(t *testing.T) {
	block := func(n int) string {
		code := strings.Repeat("x := 1 // c\n", n/12)
		return "```go\n" + code + "```\n\n"
	}
	var src strings.Builder
	for range maxHighlightTotal / (maxHighlight - 12) {
		src.WriteString(block(maxHighlight - 12))
	}
	src.WriteString(block(maxHighlight - 12)) // past the text's total
	src.WriteString(block(2 * maxHighlight))  // past a block's bound
	out := string(markdown(src.String()))
	blocks := strings.Split(out, `<pre class="code">`)[1:]
	if len(blocks) != maxHighlightTotal/(maxHighlight-12)+2 {
		t.Fatalf("%d blocks", len(blocks))
	}
	for i, b := range blocks {
		highlighted := strings.Contains(b, `<span class="tok-c1">// c</span>`)
		if want := i < len(blocks)-2; highlighted != want {
			t.Errorf("block %d highlighted = %v, want %v", i, highlighted, want)
		}
		if !strings.Contains(b, "// c\n") && !strings.Contains(b, "// c</span>\n") {
			t.Errorf("block %d lost its code", i)
		}
	}
}

// A code block's language is found by name, alias or extension, case
// aside; an unknown one is refused by a map lookup, not by trying every
// lexer's file patterns.
func TestLexerLookup(t *testing.T) {
	for lang, want := range map[string]string{"go": "Go", "PY": "Python", "yml": "YAML", "diff": "Diff", "sh": "Bash", "tsx": "TypeScript"} {
		if l := lexerFor(lang); l == nil || l.Config().Name != want {
			t.Errorf("lexerFor(%q) = %v, want %s", lang, l, want)
		}
	}
	var src strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&src, "```nolang%d\nx\n```\n", i)
	}
	lexerFor("go") // the map is built once, not timed
	start := time.Now()
	out := string(markdown(src.String()))
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("1,000 blocks of unknown languages took %v", d)
	}
	if strings.Contains(out, "tok-") || strings.Count(out, "<code>x</code>") != 1000 {
		t.Errorf("unknown languages are not shown plain: %.300q", out)
	}
}
