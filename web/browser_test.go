package web

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The browser test opens a session page in headless Chromium (Debian's
// chromium package; .ci/run installs it) while a run goes on: the live tool
// lines arrive without a reload, a tool output expands, the compare link is
// followed without leaking the page's address, and a screenshot is kept as
// a test artifact (go test -artifacts). It drives the browser over the
// DevTools protocol with the websocket client the bot already uses.

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestBrowserFollowsALiveRun(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		if os.Getenv("THREADSMITH_REQUIRE_BROWSER") == "1" {
			t.Fatal("no headless Chromium on the PATH, and THREADSMITH_REQUIRE_BROWSER=1 (Debian: apt-get install chromium)")
		}
		t.Skip("no headless Chromium on the PATH (Debian: apt-get install chromium); .ci/run installs it")
	}
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

	b := startBrowser(t, bin)
	b.navigate(f.pageURL(srv, s))
	if n := b.eval(`document.querySelectorAll("details.tool").length`); n != float64(1) {
		t.Fatalf("tool lines on the page = %v, want 1", n)
	}

	// The run goes on: a new tool call, then its output, arrive live.
	f.append(msg(toolCall("call_2", "read", `{"path":"live-marker.go"}`)))
	b.waitText("live-marker.go")
	f.append(msg(toolResult("call_2", "read", "package marker // arrived live")))
	b.waitText("arrived live")
	if n := b.eval(`document.querySelectorAll("details.tool").length`); n != float64(2) {
		t.Errorf("tool lines after the live update = %v, want 2 (the output replaces its call's line)", n)
	}

	// Expand the first tool output.
	open := b.eval(`(() => { const d = document.querySelector("details.tool"); d.querySelector("summary").click();
		return d.open && d.querySelector("pre.output").getBoundingClientRect().height > 0 })()`)
	if open != true {
		t.Errorf("the tool output did not expand (got %v)", open)
	}
	b.screenshot(t, "session-page.png")

	// Follow the compare link: the forge is reached, and learns nothing of
	// the page (no Referer: the link's token stays private).
	b.eval(`document.querySelector("#head a[href*='/compare/']").click()`)
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
	if errs := b.eval(`window.__errors || []`); fmt.Sprint(errs) != "[]" {
		t.Errorf("page errors: %v", errs)
	}
}

// browser is one headless Chromium with one page, driven over DevTools.
type browser struct {
	t    *testing.T
	ctx  context.Context
	conn *websocket.Conn
	mu   sync.Mutex
	id   int
	// replies and events read from the connection.
	replies chan cdpMessage
	loads   chan struct{}
}

type cdpMessage struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func startBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--window-size=1200,900",
		"--remote-debugging-port=0", "--user-data-dir="+t.TempDir(), "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Chromium says where DevTools listens on stderr.
	wsURL := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "DevTools listening on "); ok {
				wsURL <- u
			}
		}
	}()
	var browserWS string
	select {
	case browserWS = <-wsURL:
	case <-ctx.Done():
		t.Fatal("Chromium did not start its DevTools endpoint")
	}
	// The page target's own endpoint, from the browser's target list.
	host := strings.TrimPrefix(strings.SplitN(browserWS, "/devtools/", 2)[0], "ws://")
	resp, err := http.Get("http://" + host + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var pageWS string
	for _, tg := range targets {
		if tg.Type == "page" {
			pageWS = tg.WebSocketDebuggerURL
		}
	}
	if pageWS == "" {
		t.Fatalf("no page target in %+v", targets)
	}
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, pageWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	b := &browser{t: t, ctx: ctx, conn: conn, replies: make(chan cdpMessage, 16), loads: make(chan struct{}, 4)}
	go func() {
		for {
			var m cdpMessage
			if err := conn.ReadJSON(&m); err != nil {
				close(b.replies)
				return
			}
			switch {
			case m.Method == "Page.loadEventFired":
				select {
				case b.loads <- struct{}{}:
				default:
				}
			case m.ID != 0:
				b.replies <- m
			}
		}
	}()
	b.call("Page.enable", nil)
	b.call("Runtime.enable", nil)
	// Record script errors the page would otherwise swallow.
	b.call("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `window.__errors = [];
		addEventListener("error", e => window.__errors.push(String(e.message)));
		document.addEventListener("securitypolicyviolation", e => window.__errors.push("CSP: " + e.violatedDirective));`})
	return b
}

// call sends one DevTools command and returns its result.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	b.mu.Lock()
	b.id++
	id := b.id
	b.mu.Unlock()
	if err := b.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	for {
		select {
		case m, ok := <-b.replies:
			if !ok {
				b.t.Fatalf("%s: the browser went away", method)
			}
			if m.ID != id {
				continue
			}
			if m.Error != nil {
				b.t.Fatalf("%s: %s", method, m.Error.Message)
			}
			return m.Result
		case <-b.ctx.Done():
			b.t.Fatalf("%s: %v", method, b.ctx.Err())
		}
	}
}

func (b *browser) navigate(url string) {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": url})
	select {
	case <-b.loads:
	case <-b.ctx.Done():
		b.t.Fatalf("loading %s: %v", url, b.ctx.Err())
	}
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and returns its JSON value.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	raw := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true, "userGesture": true})
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		b.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %s: %s", expr, r.ExceptionDetails.Text)
	}
	return r.Result.Value
}

// waitText waits, in the page, until its text (collapsed parts included)
// contains s: a mutation
// observer resolves as soon as the live follow puts it there.
func (b *browser) waitText(s string) {
	b.t.Helper()
	q, _ := json.Marshal(s)
	ok := b.eval(fmt.Sprintf(`new Promise(resolve => {
		const has = () => document.body.textContent.includes(%s);
		if (has()) return resolve(true);
		new MutationObserver(() => { if (has()) resolve(true) }).observe(document.body, {subtree: true, childList: true, characterData: true});
		setTimeout(() => resolve(has()), 10000);
	})`, q))
	if ok != true {
		b.t.Fatalf("the page never showed %q (live: %v):\n%v", s, b.eval(`document.getElementById("timeline").getAttribute("data-live-state")`), b.eval(`document.body.innerText`))
	}
}

// screenshot keeps a PNG of the page among the test's artifacts.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	raw := b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true})
	var r struct{ Data string }
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
