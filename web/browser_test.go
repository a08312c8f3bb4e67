package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/internal/browsertest"
)

// The browser test opens a session page in headless Chromium (Debian's
// chromium package; .ci/run installs it) while a run goes on: the live tool
// lines arrive without a reload, a tool output expands, the compare link is
// followed without leaking the page's address, and a screenshot is kept as
// a test artifact (go test -artifacts). internal/browsertest drives the
// browser. cmd/bot's TestSessionPageInABrowserDuringARun does the same
// against the whole program and the fakes.

func TestBrowserFollowsALiveRun(t *testing.T) {
	bin := browsertest.Require(t)
	f := newFixture(t)
	f.prompt("Alice", "make the build green")
	f.append(msg(toolCall("call_1", "bash", `{"command":"go build ./..."}`)),
		msg(toolResult("call_1", "bash", "main.go:3: undefined: Foo\nexit status 1")))

	// The servers close after the browser is gone (cleanups run last in,
	// first out): its open event stream would hold a Close.
	forgeHits := make(chan *http.Request, 4)
	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forgeHits <- r
		fmt.Fprintln(w, "<!doctype html><title>compare</title>the forge's compare view")
	}))
	t.Cleanup(forge.Close)
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com", Poll: 20 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(t.Output(), nil)),
		CompareURL: func(repo, branch string) string { return forge.URL + "/acme/" + repo + "/compare/main..." + branch }})
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Logf("%s %s", r.Method, r.URL.Path)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	b := browsertest.Start(t, bin)
	b.Navigate(f.pageURL(srv, s))
	if n := b.Eval(`document.querySelectorAll("details.tool").length`); n != float64(1) {
		t.Fatalf("tool lines on the page = %v, want 1", n)
	}

	// The run goes on: a new tool call, then its output, arrive live.
	f.append(msg(toolCall("call_2", "read", `{"path":"live-marker.go"}`)))
	b.WaitText("live-marker.go")
	f.append(msg(toolResult("call_2", "read", "package marker // arrived live")))
	b.WaitText("arrived live")
	if n := b.Eval(`document.querySelectorAll("details.tool").length`); n != float64(2) {
		t.Errorf("tool lines after the live update = %v, want 2 (the output replaces its call's line)", n)
	}

	// Expand the first tool output.
	open := b.Eval(`(() => { const d = document.querySelector("details.tool"); d.querySelector("summary").click();
		return d.open && d.querySelector("pre.output").getBoundingClientRect().height > 0 })()`)
	if open != true {
		t.Errorf("the tool output did not expand (got %v)", open)
	}
	b.Screenshot(t, "session-page.png")

	// Follow the compare link: the forge is reached, and learns nothing of
	// the page (no Referer: the link's token stays private).
	b.Eval(`document.querySelector("#head a[href*='/compare/']").click()`)
	select {
	case r := <-forgeHits:
		if ref := r.Header.Get("Referer"); ref != "" {
			t.Errorf("the forge got Referer %q, want none", ref)
		}
		if !strings.Contains(r.URL.Path, "/compare/main...bot/slack-") {
			t.Errorf("the link went to %s", r.URL)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("following the compare link reached no forge")
	}
	if errs := b.Errors(); errs != "[]" {
		t.Errorf("page errors: %s", errs)
	}
}

// A hostile session, in a real browser, runs nothing: not as served, not
// with the Content-Security-Policy switched off (so that the escaping alone
// is tested, not the policy that backs it), and not through the pieces the
// live follow inserts. Every payload calls alert (a dialog the browser
// reports) or loads something (a request the server logs), and the page's
// DOM, once the live pieces are in, holds no handler, script, frame or
// unsafe link.
func TestBrowserRunsNothingFromAHostileSession(t *testing.T) {
	bin := browsertest.Require(t)
	for _, bypassCSP := range []bool{false, true} {
		t.Run(fmt.Sprintf("csp off %v", bypassCSP), func(t *testing.T) {
			f := newFixture(t)
			opts := hostileSession(t, f)
			opts.Poll = 20 * time.Millisecond
			s := New(opts)
			h := s.Handler()
			var mu sync.Mutex
			var requests []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests = append(requests, r.URL.Path)
				mu.Unlock()
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)

			b := browsertest.Start(t, bin)
			if bypassCSP {
				b.Call("Page.setBypassCSP", map[string]any{"enabled": true})
			}
			b.Navigate(f.pageURL(srv, s))
			b.WaitText(`<script>alert(1)</script>`) // shown, as text
			// More of it arrives live, through live.js's innerHTML.
			f.append(
				msg(llm.Message{Role: llm.RoleAssistant, Model: "gpt-test", StopReason: llm.StopReasonToolUse, Content: []llm.Content{
					llm.Text(`live: <img src=x onerror=alert("live")> [x](javascript:alert("live"))`),
					llm.ToolCall("c9", `<svg onload=alert("live")>`, []byte(`{"path":"<img src=x onerror=alert(\"live\")>"}`)),
				}}),
				msg(toolResult("c9", "read", `</pre><script>alert("live")</script><img src=x onerror=alert("live")>live-output-end`)),
			)
			b.WaitText("live-output-end")
			// Open every collapsed part, hover and focus every element: an
			// inline handler that got through would run now.
			b.Eval(`(() => { for (const d of document.querySelectorAll("details")) d.open = true;
				for (const el of document.querySelectorAll("*")) for (const ev of ["mouseover", "mouseenter", "focus"]) el.dispatchEvent(new Event(ev)); })()`)
			found := b.Eval(`(() => {
				const bad = [];
				for (const el of document.querySelectorAll("*")) {
					const tag = el.tagName.toLowerCase();
					if (tag === "script" && !(el.getAttribute("src") === "/assets/live.js" && el.textContent === "")) bad.push(el.outerHTML.slice(0, 120));
					if (["img", "svg", "iframe", "object", "embed", "style", "base", "form", "input", "frame", "audio", "video", "math"].includes(tag)) bad.push(el.outerHTML.slice(0, 120));
					for (const a of el.attributes) {
						const k = a.name.toLowerCase();
						if (k.startsWith("on") || k === "style" || k === "srcdoc" || k === "formaction") bad.push(tag + " " + k + "=" + a.value.slice(0, 80));
						if (["href", "src", "action"].includes(k)) {
							const u = new URL(a.value, location.href);
							if (!["http:", "https:", "mailto:"].includes(u.protocol)) bad.push(tag + " " + k + "=" + a.value.slice(0, 80));
						}
					}
				}
				return bad;
			})()`)
			if fmt.Sprint(found) != "[]" {
				t.Errorf("the page's DOM holds what could run: %v", found)
			}
			if d := b.Dialogs(); len(d) > 0 {
				t.Errorf("the page ran script: dialogs %q", d)
			}
			if errs := b.Errors(); errs != "[]" {
				t.Errorf("page errors (a blocked script or load counts): %s", errs)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range requests {
				if !strings.HasPrefix(p, "/s/") && !strings.HasPrefix(p, "/assets/") && p != "/favicon.ico" {
					t.Errorf("the page loaded %s", p)
				}
			}
		})
	}
}

// Under the page's Content-Security-Policy, the stylesheet colours the
// highlighted code (a keyword, a diff's added and removed lines) and lays
// out a table: no style is inline, and none is refused.
func TestBrowserShowsHighlightedCodeAndTables(t *testing.T) {
	bin := browsertest.Require(t)
	f := newFixture(t)
	f.prompt("Alice", "show me")
	f.append(msg(answer("| a | b |\n|---|--:|\n| 1 | 2 |\n\n```go\nfunc f() {}\n```\n\n```diff\n-old\n+new\n```")))
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	b := browsertest.Start(t, bin)
	b.Navigate(f.pageURL(srv, s))
	got := b.Eval(`(() => {
		const color = sel => getComputedStyle(document.querySelector(sel)).color;
		const plain = color(".md pre code"), kd = color(".md .tok-kd"), gi = color(".md .tok-gi"), gd = color(".md .tok-gd");
		const td = document.querySelector(".md td[align=right]");
		return [kd !== plain, gi !== plain, gd !== plain, gi !== gd,
			getComputedStyle(td).textAlign === "right", getComputedStyle(td).borderTopStyle === "solid"].join(" ");
	})()`)
	if got != "true true true true true true" {
		t.Errorf("keyword, inserted, deleted coloured, inserted and deleted apart, cell aligned and bordered: %v", got)
	}
	if errs := b.Errors(); errs != "[]" {
		t.Errorf("page errors: %s", errs)
	}
}
