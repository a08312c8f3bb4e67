// Package browsertest drives a headless Chromium (Debian's chromium package;
// .ci/run installs it) over the DevTools protocol, for the tests of the
// session pages: the web package's own, and cmd/bot's against the fakes.
// It uses the websocket client the bot already depends on.
package browsertest

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Path is the Chromium on the PATH, "" if there is none.
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Require returns the Chromium to use, or skips the test without one; with
// THREADSMITH_REQUIRE_BROWSER=1 (CI) a missing browser fails it instead.
func Require(tb testing.TB) string {
	tb.Helper()
	bin := Path()
	if bin == "" {
		if os.Getenv("THREADSMITH_REQUIRE_BROWSER") == "1" {
			tb.Fatal("no headless Chromium on the PATH, and THREADSMITH_REQUIRE_BROWSER=1 (Debian: apt-get install chromium)")
		}
		tb.Skip("no headless Chromium on the PATH (Debian: apt-get install chromium); .ci/run installs it")
	}
	return bin
}

// Browser is one headless Chromium with one page, driven over DevTools.
type Browser struct {
	tb   testing.TB
	ctx  context.Context
	conn *websocket.Conn
	wmu  sync.Mutex
	id   int
	// replies and events read from the connection: loads has the loader
	// (one navigation's document) of each load event.
	replies chan message
	loads   chan string

	mu      sync.Mutex
	dialogs []string // the messages of JavaScript dialogs (alert, confirm, prompt) the page opened
}

type message struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Start starts bin headless with a new profile and connects to its page;
// tb.Cleanup ends it. Every command waits a minute at most.
func Start(tb testing.TB, bin string) *Browser {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--window-size=1200,900", "--remote-debugging-port=0", "--user-data-dir="+tb.TempDir(), "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
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
		tb.Fatal("Chromium did not start its DevTools endpoint")
	}
	// The page target's own endpoint, from the browser's target list.
	host := strings.TrimPrefix(strings.SplitN(browserWS, "/devtools/", 2)[0], "ws://")
	resp, err := http.Get("http://" + host + "/json/list")
	if err != nil {
		tb.Fatal(err)
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		tb.Fatal(err)
	}
	var pageWS string
	for _, tg := range targets {
		if tg.Type == "page" {
			pageWS = tg.WebSocketDebuggerURL
		}
	}
	if pageWS == "" {
		tb.Fatalf("no page target in %+v", targets)
	}
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, pageWS, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	b := &Browser{tb: tb, ctx: ctx, conn: conn, replies: make(chan message, 16), loads: make(chan string, 16)}
	go b.read()
	b.Call("Page.enable", nil)
	// Load events with their loader, so that Navigate waits for its own
	// page's, not for one a click loaded before.
	b.Call("Page.setLifecycleEventsEnabled", map[string]any{"enabled": true})
	b.Call("Runtime.enable", nil)
	// Record script errors and CSP violations the page would otherwise
	// swallow (Errors).
	b.Call("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `window.__errors = [];
		addEventListener("error", e => window.__errors.push(String(e.message)));
		document.addEventListener("securitypolicyviolation", e => window.__errors.push("CSP: " + e.violatedDirective + " " + e.blockedURI));`})
	return b
}

func (b *Browser) read() {
	for {
		var m message
		if err := b.conn.ReadJSON(&m); err != nil {
			close(b.replies)
			return
		}
		switch {
		case m.Method == "Page.lifecycleEvent":
			var e struct{ LoaderID, Name string }
			if json.Unmarshal(m.Params, &e) == nil && e.Name == "load" {
				select {
				case b.loads <- e.LoaderID:
				default:
				}
			}
		case m.Method == "Page.javascriptDialogOpening":
			var d struct{ Message string }
			_ = json.Unmarshal(m.Params, &d)
			b.mu.Lock()
			b.dialogs = append(b.dialogs, d.Message)
			b.mu.Unlock()
			// Dismiss it, or the page (and every later command) would wait.
			go func() {
				b.wmu.Lock()
				b.id++
				id := b.id
				b.wmu.Unlock()
				b.write(map[string]any{"id": id, "method": "Page.handleJavaScriptDialog", "params": map[string]any{"accept": false}})
			}()
		case m.ID != 0:
			b.replies <- m
		}
	}
}

func (b *Browser) write(v any) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return b.conn.WriteJSON(v)
}

// Call sends one DevTools command and returns its result.
func (b *Browser) Call(method string, params any) json.RawMessage {
	b.tb.Helper()
	b.wmu.Lock()
	b.id++
	id := b.id
	b.wmu.Unlock()
	if err := b.write(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		b.tb.Fatalf("%s: %v", method, err)
	}
	for {
		select {
		case m, ok := <-b.replies:
			if !ok {
				b.tb.Fatalf("%s: the browser went away", method)
			}
			if m.ID != id {
				continue
			}
			if m.Error != nil {
				b.tb.Fatalf("%s: %s", method, m.Error.Message)
			}
			return m.Result
		case <-b.ctx.Done():
			b.tb.Fatalf("%s: %v", method, b.ctx.Err())
		}
	}
}

// Navigate loads url and waits for its load event (not that of a page
// loaded before, by a click say).
func (b *Browser) Navigate(url string) {
	b.tb.Helper()
	var nav struct{ LoaderID, ErrorText string }
	if err := json.Unmarshal(b.Call("Page.navigate", map[string]any{"url": url}), &nav); err != nil {
		b.tb.Fatalf("loading %s: %v", url, err)
	}
	if nav.ErrorText != "" {
		b.tb.Fatalf("loading %s: %s", url, nav.ErrorText)
	}
	for {
		select {
		case id := <-b.loads:
			if id == nav.LoaderID {
				return
			}
		case <-b.ctx.Done():
			b.tb.Fatalf("loading %s: %v", url, b.ctx.Err())
		}
	}
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and returns its JSON value.
func (b *Browser) Eval(expr string) any {
	b.tb.Helper()
	raw := b.Call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true, "userGesture": true})
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		b.tb.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		b.tb.Fatalf("evaluating %s: %s", expr, r.ExceptionDetails.Text)
	}
	return r.Result.Value
}

// WaitText waits, in the page, until its text (collapsed parts included)
// contains s: a mutation observer resolves as soon as the live follow puts
// it there. It gives up after 10 s.
func (b *Browser) WaitText(s string) {
	b.tb.Helper()
	q, _ := json.Marshal(s)
	ok := b.Eval(fmt.Sprintf(`new Promise(resolve => {
		const has = () => document.body.textContent.includes(%s);
		if (has()) return resolve(true);
		new MutationObserver(() => { if (has()) resolve(true) }).observe(document.body, {subtree: true, childList: true, characterData: true});
		setTimeout(() => resolve(has()), 10000);
	})`, q))
	if ok != true {
		b.tb.Fatalf("the page never showed %q (live: %v):\n%v", s, b.Eval(`(document.getElementById("timeline") || document.body).getAttribute("data-live-state")`), b.Eval(`document.body.innerText`))
	}
}

// WaitTrue waits, in the page, until the JavaScript expression cond is
// true, as WaitText does for text; it reports whether it became true within
// 10 s.
func (b *Browser) WaitTrue(cond string) bool {
	b.tb.Helper()
	ok := b.Eval(fmt.Sprintf(`new Promise(resolve => {
		const has = () => { try { return !!(%s) } catch (e) { return false } };
		if (has()) return resolve(true);
		new MutationObserver(() => { if (has()) resolve(true) }).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
		setTimeout(() => resolve(has()), 10000);
	})`, cond))
	return ok == true
}

// Errors are the script errors and Content-Security-Policy violations the
// page has seen since it loaded.
func (b *Browser) Errors() string {
	b.tb.Helper()
	return fmt.Sprint(b.Eval(`window.__errors || []`))
}

// Dialogs are the messages of the JavaScript dialogs (alert and the like)
// pages opened so far; each was dismissed.
func (b *Browser) Dialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// Screenshot keeps a PNG of the whole page among the test's artifacts
// (go test -artifacts) and returns its path.
func (b *Browser) Screenshot(t *testing.T, name string) string {
	t.Helper()
	raw := b.Call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true})
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
	return path
}
