package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// A command's whole output, kept in the scratch folder when the model got
// only its end, is on its own pages: page after page (each ending at a line's
// end) gives back all of it, a secret is hidden even where it crosses a
// page's edge or where a crafted address starts inside it, and a file that
// is gone says so.
func TestWholeOutputIsPagedFromTheScratchFile(t *testing.T) {
	const secret = "sk-live-SECRET-0123456789"
	f := newFixture(t)
	f.prompt("alice", "print a lot")
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; b.Len() < 3*fullPage; i++ {
		if b.Len() > fullPage-100 && !strings.Contains(b.String(), secret) {
			// A line too long to end the first page, with a secret across
			// that page's edge.
			b.WriteString(strings.Repeat("z", fullPage+fullSlack-5-b.Len()) + secret + "\n")
		}
		fmt.Fprintf(&b, "line %06d of the build log\n", i)
	}
	if at := strings.Index(b.String(), secret); at != fullPage+fullSlack-5 {
		t.Fatalf("the secret is at %d", at)
	}
	b.WriteString("THE END\n")
	content := b.String()
	log := filepath.Join(dir, "bash-1.log")
	if err := os.WriteFile(log, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	details, _ := json.Marshal(map[string]any{"fullOutputPath": log, "truncation": map[string]any{"totalLines": strings.Count(content, "\n") + 1, "totalBytes": len(content)}})
	res := toolResult("c1", "bash", "…the end\nTHE END\n\n[Showing lines 9-10 of 10. Full output: "+log+"]")
	res.Details = details
	f.append(msg(toolCall("c1", "bash", `{"command":"make"}`)), msg(res))
	var opened []string
	srv := f.server(Options{Secrets: []string{secret}, FullOutput: func(th storage.Thread, path string) (*os.File, error) {
		if th.ID != f.thread.ID {
			t.Errorf("FullOutput of thread %d, want %d", th.ID, f.thread.ID)
		}
		opened = append(opened, path)
		if filepath.Dir(path) != dir {
			return nil, errors.New("not in the scratch folder")
		}
		return os.Open(path)
	}})
	s := New(Options{Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	page := f.pageURL(srv, s)

	_, body := get(t, page, nil)
	link := attr(find(parse(t, body), func(n *html.Node) bool { return n.Data == "a" && strings.Contains(attr(n, "href"), "/full/") }), "href")
	if link == "" || !strings.Contains(body, "Everything it printed") {
		t.Fatalf("the tool line does not offer everything the command printed:\n%s", body)
	}
	var got strings.Builder
	pages := 0
	for u := link; u != ""; pages++ {
		if pages > 10 {
			t.Fatal("the pages do not end")
		}
		code, body := get(t, srv.URL+u, nil)
		if code != 200 {
			t.Fatalf("GET %s = %d\n%s", u, code, body)
		}
		assertInert(t, body)
		doc := parse(t, body)
		text := textOf(find(doc, func(n *html.Node) bool { return n.Data == "pre" }))
		if len(text) > fullPage+fullSlack+len("[redacted]") {
			t.Errorf("page %d holds %d bytes", pages, len(text))
		}
		if strings.Contains(text, secret[:8]) || strings.Contains(text, secret[len(secret)-8:]) {
			t.Errorf("page %d shows a secret or part of it", pages)
		}
		got.WriteString(text)
		u = attr(find(doc, func(n *html.Node) bool { return n.Data == "a" && strings.Contains(textOf(n), "next page") }), "href")
	}
	if want := strings.ReplaceAll(content, secret, "[redacted]"); got.String() != want {
		t.Errorf("the pages hold %d bytes, want all %d of the output (secret hidden)", got.Len(), len(want))
	}
	if pages < 3 {
		t.Errorf("%d pages of %d bytes, want more than 2", pages, len(content))
	}
	// An address inside the secret starts the page at the secret.
	at := strings.Index(content, secret)
	_, body = get(t, srv.URL+strings.Replace(link, "from=0", fmt.Sprintf("from=%d", at+5), 1), nil)
	if text := textOf(find(parse(t, body), func(n *html.Node) bool { return n.Data == "pre" })); !strings.HasPrefix(text, "[redacted]\n") {
		t.Errorf("a page from inside the secret starts %q", text[:min(len(text), 40)])
	}
	// Nothing without the link's token; a message when the file is gone.
	if code, _ := get(t, srv.URL+strings.Split(link, "?")[0], nil); code != http.StatusUnauthorized {
		t.Errorf("GET the whole output without a token = %d, want 401", code)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, srv.URL+link, nil); code != http.StatusNotFound || !strings.Contains(body, "no longer kept") {
		t.Errorf("GET a whole output that is gone = %d %q, want 404 saying so", code, body)
	}
	for _, p := range opened {
		if p != log {
			t.Errorf("the pages opened %s, not the path the tool result names", p)
		}
	}
}

// Without FullOutput (or without a kept file) there is no such link.
func TestNoWholeOutputWithoutTheScratchFile(t *testing.T) {
	f := newFixture(t)
	f.prompt("alice", "print a lot")
	res := toolResult("c1", "bash", "the end")
	res.Details = json.RawMessage(`{"fullOutputPath":"/nowhere/bash-1.log","truncation":{"totalLines":5000,"totalBytes":90000}}`)
	f.append(msg(toolCall("c1", "bash", `{"command":"make"}`)), msg(res), msg(llm.Message{Role: llm.RoleToolResult, ToolCallID: "c2", ToolName: "x"}))
	srv := f.server(Options{})
	s := New(Options{Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	if _, body := get(t, f.pageURL(srv, s), nil); strings.Contains(body, "/full/") {
		t.Error("a page without FullOutput links a whole output")
	}
	if code, _ := get(t, srv.URL+fullURL(f.thread.ID, "s0-e2", token(t, s, f.thread.ID), 0), nil); code != http.StatusNotFound {
		t.Errorf("GET a whole output without FullOutput = %d, want 404", code)
	}
}

func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// The page of a whole output shows what a command printed and the tool's
// name, both the model's to choose, as text: nothing in them runs.
func TestWholeOutputPageIsInert(t *testing.T) {
	f := newFixture(t)
	f.prompt("alice", "print a lot")
	log := filepath.Join(t.TempDir(), "bash-1.log")
	content := strings.Join(hostile, "\n") + "\n</pre><script>alert(1)</script><img src=x onerror=alert(1)>\n"
	if err := os.WriteFile(log, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	const tool = `"><script>alert("tool")</script>`
	res := toolResult("c1", tool, "the end")
	res.Details, _ = json.Marshal(map[string]any{"fullOutputPath": log, "truncation": map[string]any{"totalLines": 40, "totalBytes": len(content)}})
	f.append(msg(toolCall("c1", tool, `{}`)), msg(res))
	srv := f.server(Options{FullOutput: func(_ storage.Thread, path string) (*os.File, error) { return os.Open(path) }})
	s := New(Options{Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	_, body := get(t, f.pageURL(srv, s), nil)
	link := attr(find(parse(t, body), func(n *html.Node) bool { return n.Data == "a" && strings.Contains(attr(n, "href"), "/full/") }), "href")
	if link == "" {
		t.Fatalf("no link to everything the command printed:\n%s", body)
	}
	code, page := get(t, srv.URL+link, nil)
	if code != 200 {
		t.Fatalf("GET %s = %d\n%s", link, code, page)
	}
	assertInert(t, page)
	doc := parse(t, page)
	// (An HTML parser reads a NUL as U+FFFD.)
	if got := textOf(find(doc, func(n *html.Node) bool { return n.Data == "pre" })); got != strings.ReplaceAll(content, "\x00", "\uFFFD") {
		t.Errorf("the page shows %q, want the output as text", got)
	}
	if !strings.Contains(textOf(find(doc, func(n *html.Node) bool { return n.Data == "h1" })), tool) {
		t.Errorf("the heading does not show the tool's name as text:\n%s", page)
	}
}
