package web

import (
	"context"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// hostile is Markdown and text written to run script in a viewer's browser.
var hostile = []string{
	`<script>alert(1)</script>`,
	`<img src=x onerror=alert(1)>`,
	`<svg onload=alert(1)>`,
	`<iframe src="javascript:alert(1)"></iframe>`,
	`[click](javascript:alert(1))`,
	`[click](JaVaScRiPt:alert(1))`,
	`[click]( javascript:alert(1) )`,
	"[click](java\tscript:alert(1))",
	`[click](&#106;avascript:alert(1))`,
	`[click](javascript&colon;alert(1))`,
	`[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)`,
	`[click](vbscript:msgbox(1))`,
	`[click](//evil.example/x)`,
	`[click](/s/1/events)`,
	`![img](javascript:alert(1))`,
	`![img](https://tracker.example/pixel.gif)`,
	`<javascript:alert(1)>`,
	`[x](https://example.com/" onmouseover="alert(1))`,
	`[x](https://example.com/'onmouseover='alert(1))`,
	`[<img src=x onerror=alert(1)>](https://example.com)`,
	"```\"><script>alert(1)</script>\n<script>alert(2)</script>\n```",
	"``` onload=alert(1)\ncode\n```",
	"# <script>alert(1)</script>",
	"> <style>body{display:none}</style>",
	"- <a href=javascript:alert(1)>x</a>",
	"**<b onclick=alert(1)>bold</b>**",
	"`</code><script>alert(1)</script>`",
	`<base href="https://evil.example/">`,
	`<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`,
	`<form action="https://evil.example"><input name=x></form>`,
	"\x00<script>alert(1)</script>",
	`{{.}}{{template "item"}}`,
}

// hostileSession fills f's thread with hostile text in every place a page
// shows (the thread's key, repository and branch, a prompt and its author,
// the model's name, text, thinking and tool calls, a tool's output, an
// error, a compaction, a model change, a note and two pushes), and returns
// options whose compare link and diffs are as hostile.
func hostileSession(t *testing.T, f *fixture) Options {
	t.Helper()
	all := strings.Join(hostile, "\n\n")
	evilName := `<img src=x onerror=alert(1)>"'.go`
	if _, _, err := f.db.EnsureThread(f.ctx, storage.ThreadKey{Platform: "slack", Channel: `<script>alert(1)</script>`, Thread: `"><svg onload=alert(1)>`},
		storage.ThreadInit{Repo: `<script>alert("repo")</script>`, Branch: `bot/<script>alert(1)</script>`}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.SetThreadWorkspace(f.ctx, f.thread.ID, storage.ThreadInit{Repo: `<b onmouseover=alert(1)>app</b>`, Branch: `bot/"><script>alert(1)</script>`}); err != nil {
		t.Fatal(err)
	}
	f.prompt(`<img src=x onerror=alert("author")>`, all)
	f.append(
		msg(llm.Message{Role: llm.RoleAssistant, Model: `<script>alert("model")</script>`, StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{
				{Type: llm.ContentThinking, Thinking: all},
				llm.Text(all),
				llm.ToolCall("c1", `"><script>alert(1)</script>`, []byte(`{"path":"`+strings.ReplaceAll(evilName, `"`, `\"`)+`","x":"</pre><script>alert(1)</script>"}`)),
			}}),
		msg(llm.Message{Role: llm.RoleToolResult, ToolCallID: "c1", ToolName: "read", IsError: true,
			Content: []llm.Content{llm.Text("</pre></details><script>alert(1)</script><a href=javascript:alert(1)>x</a>\n" + all)}}),
		msg(llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError, ErrorMessage: `<script>alert("err")</script>`}),
		transcript.Entry{Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: all, TokensBefore: 1,
			Reason: `<script>`, ReadFiles: []string{evilName}, ModifiedFiles: []string{"javascript:alert(1)"}}},
		transcript.Entry{Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Model: `<script>alert(1)</script>`}},
		msg(llm.Message{Role: llm.RoleCustom, Display: true, Content: []llm.Content{llm.Text(all)}}),
	)
	if _, err := f.db.RecordPush(f.ctx, storage.Push{ThreadID: f.thread.ID, Branch: `bot/<script>x</script>`, SHA: `"><script>`,
		Result: storage.PushError, Detail: `<img src=x onerror=alert(1)>`}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.RecordPush(f.ctx, storage.Push{ThreadID: f.thread.ID, Branch: `bot/<script>x</script>`, SHA: `abc<script>`,
		Result: storage.PushOK}); err != nil {
		t.Fatal(err)
	}
	return Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com", AuthHeader: "X-User",
		CompareURL: func(repo, branch string) string { return "javascript:alert(1)" },
		PushDiff: func(context.Context, string, string, string) (string, bool, error) {
			return "diff --git a/<script>x</script> b/\"><img src=x onerror=alert(1)>\n+</span></pre><script>alert(1)</script>\n-" + all, false, nil
		}}
}

func TestHostileTranscriptRendersInert(t *testing.T) {
	f := newFixture(t)
	s := New(hostileSession(t, f))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	code, body := get(t, f.pageURL(srv, s), nil)
	if code != 200 {
		t.Fatalf("GET page = %d\n%s", code, body)
	}
	assertInert(t, body)
	// The hostile text is shown, as text.
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile text is not shown escaped")
	}
	if !strings.Contains(body, `<span class="add">&#43;&lt;/span&gt;&lt;/pre&gt;&lt;script&gt;`) {
		t.Error("the hostile diff is not shown escaped")
	}
	_, list := get(t, srv.URL+"/", map[string][]string{"X-User": {"op"}})
	assertInert(t, list)

	// Each piece the live follow sends is as inert.
	p, err := s.build(f.ctx, f.thread.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	pieces, err := s.renderPieces(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range pieces {
		assertInert(t, string(pc.HTML))
	}
}

func TestMarkdownLinks(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[go](https://go.dev)", `<a href="https://go.dev" rel="nofollow noopener noreferrer" target="_blank">go</a>`},
		{"see https://go.dev/doc.", `see <a href="https://go.dev/doc" rel="nofollow noopener noreferrer" target="_blank">https://go.dev/doc</a>.`},
		{"<mailto:a@b.c>", `<a href="mailto:a@b.c"`},
		{"[x](javascript:alert(1))", `x <span class="unsafe-link">(javascript:alert(1))</span>`},
		{"snake_case_name and *em* and __strong__", `snake_case_name and <em>em</em> and <strong>strong</strong>`},
		{"a `<b>` c", "a <code>&lt;b&gt;</code> c"},
		{"```go\nfunc f() string { return \"<x>\" } // done\n```", `<span class="tok-kd">func</span> <span class="tok-nf">f</span><span class="tok-p">()</span> <span class="tok-kt">string</span> <span class="tok-p">{</span> <span class="tok-k">return</span> <span class="tok-s">&#34;&lt;x&gt;&#34;</span> <span class="tok-p">}</span> <span class="tok-c1">// done</span>`},
		{"```python\nx = 42  # the answer\n```", `<span class="tok-o">=</span> <span class="tok-mi">42</span>  <span class="tok-c1"># the answer</span>`},
		{"```unknown\nif <b>\n```", `<code>if &lt;b&gt;</code>`},
	} {
		if got := string(markdown(tc.in)); !strings.Contains(got, tc.want) {
			t.Errorf("markdown(%q) = %q, want it to contain %q", tc.in, got, tc.want)
		}
	}
}

// assertInert parses doc as a browser would and fails on anything that
// could run script or load something: a script element other than the
// page's own, an event handler attribute, a URL attribute that is not
// http(s), mailto or a path on this server, or an element that loads,
// frames, restyles or retargets.
func assertInert(t *testing.T, doc string) {
	t.Helper()
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("parsing the HTML: %v", err)
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				if attr(n, "src") != "/assets/live.js" || n.FirstChild != nil {
					t.Errorf("a script element: %s", render(n))
				}
			case "img", "iframe", "svg", "math", "object", "embed", "style", "base", "form", "input", "meta", "frame", "audio", "video", "source":
				if !(n.Data == "meta" && (attr(n, "charset") != "" || attr(n, "name") == "viewport" || attr(n, "name") == "referrer")) {
					t.Errorf("a %s element: %s", n.Data, render(n))
				}
			case "link":
				if attr(n, "href") != "/assets/style.css" {
					t.Errorf("a link element: %s", render(n))
				}
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				if strings.HasPrefix(key, "on") || key == "style" || key == "srcdoc" || key == "formaction" {
					t.Errorf("attribute %s=%q on %s", a.Key, a.Val, render(n))
				}
				if key == "href" || key == "src" || key == "action" || key == "data-live" {
					if !safeAttrURL(a.Val) {
						t.Errorf("attribute %s=%q is not a safe URL, on %s", a.Key, a.Val, render(n))
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
}

func safeAttrURL(v string) bool {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
		return true
	case "":
		// A path on this server, never scheme-relative (//host).
		return strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//")
	}
	return false
}

func render(n *html.Node) string {
	var b strings.Builder
	_ = html.Render(&b, n)
	s := b.String()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func parse(t *testing.T, doc string) *html.Node {
	t.Helper()
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func find(n *html.Node, ok func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && ok(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, ok); f != nil {
			return f
		}
	}
	return nil
}

// markdownTags are the only elements and attributes markdown may emit.
var markdownTags = map[string][]string{
	"html": nil, "head": nil, "body": nil, "div": nil, // the parser's frame
	"p": nil, "br": nil, "hr": nil, "pre": {"class"}, "code": nil, "span": {"class"},
	"strong": nil, "em": nil, "del": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil,
	"ul": nil, "ol": {"start"}, "li": nil, "blockquote": nil, "a": {"href", "rel", "target"},
	"table": nil, "thead": nil, "tbody": nil, "tr": nil, "th": {"align"}, "td": {"align"},
}

// Whatever the text, markdown's HTML holds only its own elements and
// attributes, and only safe links.
func FuzzMarkdownIsInert(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Add("```go\n// c \"x\n/* <b> */ s := `a\nb` + \"q\\\"\" + 'r' + 0x1F\n```\n```sh\necho $# # <i>\n```\n```sql\n-- x\nSELECT 1\n```")
	f.Add("# h\n\n- a\n- b\n\n1. c\n\n> q\n\n---\n\n```sh\nx\n```\n**b** _e_ ~~d~~ `c` [l](https://x.y) <https://a.b> https://c.d")
	f.Add("| a | <b>b</b> |\n|:-|-:|\n| [x](javascript:y) | ![i](https://i.j) |\n\n- [x] t\n  1. n\n\n     ```diff\n     +a\n     ```\n\n<div onclick=x>\n\n<details>")
	f.Fuzz(func(t *testing.T, src string) {
		root, err := html.Parse(strings.NewReader("<div>" + string(markdown(src)) + "</div>"))
		if err != nil {
			t.Fatal(err)
		}
		var walk func(*html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode {
				allowed, ok := markdownTags[n.Data]
				if !ok {
					t.Fatalf("markdown(%q) has a %s element", src, n.Data)
				}
				for _, a := range n.Attr {
					if !slices.Contains(allowed, a.Key) {
						t.Fatalf("markdown(%q) has %s=%q on %s", src, a.Key, a.Val, n.Data)
					}
					if a.Key == "href" {
						if u, err := url.Parse(a.Val); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
							t.Fatalf("markdown(%q) links %q", src, a.Val)
						}
					}
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		walk(root)
	})
}
