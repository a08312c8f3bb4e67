// Package mcpfake is an MCP server for tests, built on the official SDK, that
// serves on stdio (as a program: cmd/fakemcp, see Build) or over Streamable
// HTTP (ServeHTTP). Its tools cover what a client must handle:
//
//	echo{text}        the text back
//	slow{}            blocks until cancelled; writes "started" to the file
//	                  named by $FAKEMCP_STARTED (stdio) when it begins and
//	                  "cancelled" to $FAKEMCP_CANCELLED when it is cancelled
//	                  (over HTTP: HTTP.Started and HTTP.Cancelled)
//	fail{}            an isError result
//	image{}           a 1×1 PNG and a text
//	link{}            a resource link, an embedded text resource and an
//	                  embedded binary one
//	env{}             the server's environment, one variable per line
//	read{path}        a file's content (what the server can see)
//	write{path,text}  writes text to the file (what the server can change)
//	fetch{url}        an HTTP GET's status and body (what the server can reach)
//	spawn{name}       starts "sleep 1000" named name in the background and
//	                  returns (a process the server leaves behind)
//	big{}             5,000 lines
//	crash{}           exits the process (stdio only)
//	crash_once{}      exits the process unless ./.crashed exists, which it creates
//	add_tool{name}    adds a tool of that name (echoing "added"): tools/list_changed
package mcpfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// onePixelPNG is a valid 1×1 transparent PNG.
var onePixelPNG = []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 'I', 'D', 'A', 'T', 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func obj(props string) any {
	return map[string]any{"type": "object", "properties": jsonProps(props)}
}

func jsonProps(names string) map[string]any {
	p := map[string]any{}
	for _, n := range strings.Fields(names) {
		p[n] = map[string]any{"type": "string"}
	}
	return p
}

func arg(req *mcp.CallToolRequest, name string) string {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m) // no arguments: m stays nil
	s, _ := m[name].(string)
	return s
}

// New returns the fake server. exit ends the process for crash tools (stdio);
// nil refuses them.
func New(exit func()) *mcp.Server { return newServer(exit, nil, nil) }

// newServer is New whose slow tool also returns when stop is closed (an HTTP
// server shutting down must not wait for it) and reports to h (nil: to the
// files of $FAKEMCP_STARTED and $FAKEMCP_CANCELLED).
func newServer(exit func(), stop <-chan struct{}, h *HTTP) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fakemcp", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	add := func(name, desc, props string, h func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: obj(props)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return h(ctx, req), nil
		})
	}
	add("echo", "Echoes its text.", "text", func(_ context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		return text("echo: " + arg(r, "text"))
	})
	add("slow", "Waits until cancelled.", "", func(ctx context.Context, _ *mcp.CallToolRequest) *mcp.CallToolResult {
		if h != nil {
			select {
			case h.Started <- struct{}{}:
			case <-stop:
			}
		} else if f := os.Getenv("FAKEMCP_STARTED"); f != "" {
			_ = os.WriteFile(f, []byte("started"), 0o644)
		}
		select {
		case <-ctx.Done():
		case <-stop:
			return text("server stopping")
		}
		if h != nil {
			select {
			case h.Cancelled <- struct{}{}:
			case <-stop:
			}
		} else if f := os.Getenv("FAKEMCP_CANCELLED"); f != "" {
			_ = os.WriteFile(f, []byte("cancelled"), 0o644)
		}
		return text("cancelled")
	})
	add("fail", "Always fails.", "", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		r := text("the thing is broken")
		r.IsError = true
		return r
	})
	add("image", "Returns a picture.", "", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a pixel"}, &mcp.ImageContent{MIMEType: "image/png", Data: onePixelPNG}}}
	})
	add("link", "Returns resources.", "", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ResourceLink{URI: "tracker://issue/42", Name: "issue 42", Description: "the login bug"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "tracker://issue/42/body", MIMEType: "text/plain", Text: "Login fails after 30 days."}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "tracker://issue/42/dump", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
		}}
	})
	add("env", "Shows the server's environment.", "", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		return text(strings.Join(os.Environ(), "\n"))
	})
	add("read", "Reads a file.", "path", func(_ context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		b, err := os.ReadFile(arg(r, "path"))
		if err != nil {
			res := text(err.Error())
			res.IsError = true
			return res
		}
		return text(string(b))
	})
	add("write", "Writes a file.", "path text", func(_ context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		if err := os.WriteFile(arg(r, "path"), []byte(arg(r, "text")), 0o644); err != nil {
			res := text(err.Error())
			res.IsError = true
			return res
		}
		return text("wrote " + arg(r, "path"))
	})
	add("fetch", "Fetches a URL.", "url", func(ctx context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, arg(r, "url"), nil)
		var resp *http.Response
		if err == nil {
			resp, err = http.DefaultClient.Do(req)
		}
		if err != nil {
			res := text("fetch failed: " + err.Error())
			res.IsError = true
			return res
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return text(resp.Status + "\n" + string(b))
	})
	add("spawn", "Leaves a process behind.", "name", func(_ context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		cmd := exec.Command("sleep", "1000")
		cmd.Args[0] = arg(r, "name")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // detached from the server
		if err := cmd.Start(); err != nil {
			res := text(err.Error())
			res.IsError = true
			return res
		}
		go func() { _ = cmd.Wait() }()
		return text(fmt.Sprintf("started %d", cmd.Process.Pid))
	})
	add("big", "Returns a long answer.", "", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		var b strings.Builder
		for i := 0; i < 5000; i++ {
			b.WriteString("line\n")
		}
		return text(b.String())
	})
	add("crash", "Exits.", "", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		if exit != nil {
			exit()
		}
		return text("cannot crash here")
	})
	add("crash_once", "Exits the first time.", "", func(context.Context, *mcp.CallToolRequest) *mcp.CallToolResult {
		if _, err := os.Stat(".crashed"); err != nil && exit != nil {
			_ = os.WriteFile(".crashed", nil, 0o644)
			exit()
		}
		return text("survived")
	})
	var mu sync.Mutex
	add("add_tool", "Adds a tool.", "name", func(_ context.Context, r *mcp.CallToolRequest) *mcp.CallToolResult {
		mu.Lock()
		defer mu.Unlock()
		name := arg(r, "name")
		s.AddTool(&mcp.Tool{Name: name, Description: "Added later.", InputSchema: obj("")}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("added"), nil
		})
		return text("added " + name)
	})
	return s
}

// ServeHTTP serves the fake on Streamable HTTP on 127.0.0.1 and returns its
// URL. Requests without the header want (when set) get 401.
func ServeHTTP(tb testing.TB, wantHeader, wantValue string) string {
	tb.Helper()
	return serveHTTP(tb, wantHeader, wantValue, nil)
}

// HTTP is a fake served over HTTP whose slow tool reports on channels.
type HTTP struct {
	URL string
	// Started receives when a slow call reached the server, Cancelled when
	// the client cancelled it (one of each is buffered).
	Started, Cancelled chan struct{}
}

// NewHTTP serves the fake like ServeHTTP (without a header check), with its
// slow tool reporting to the returned HTTP.
func NewHTTP(tb testing.TB) *HTTP {
	tb.Helper()
	h := &HTTP{Started: make(chan struct{}, 1), Cancelled: make(chan struct{}, 1)}
	h.URL = serveHTTP(tb, "", "", h)
	return h
}

func serveHTTP(tb testing.TB, wantHeader, wantValue string, hooks *HTTP) string {
	stop := make(chan struct{})
	srv := newServer(nil, stop, hooks)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wantHeader != "" && r.Header.Get(wantHeader) != wantValue {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		close(stop)
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// Build compiles cmd/fakemcp into a fresh folder and returns the program's
// path. The folder is world-readable, so a sandbox can be shown it.
func Build(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := tb.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "fakemcp")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/fakemcp")
	cmd.Dir = filepath.Dir(file)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building fakemcp: %v\n%s", err, out)
	}
	return bin
}
