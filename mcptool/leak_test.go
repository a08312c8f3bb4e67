package mcptool_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/sandbox"
)

// clientGoroutines are the stacks of goroutines running the MCP client: the
// SDK's or this package's, the test's own left out.
func clientGoroutines() []string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "mcpfake.") || strings.Contains(g, "net/http/httptest") {
			continue
		}
		if strings.Contains(g, "modelcontextprotocol/go-sdk") || strings.Contains(g, "threadsmith/mcptool.") {
			out = append(out, g)
		}
	}
	return out
}

// A set leaves no goroutine behind once closed: not for a stdio server that
// died and was started again, not for an HTTP server with a cancelled call
// and a changed tool list.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	bin := mcpfake.Build(t)
	h := mcpfake.NewHTTP(t)
	changes := make(chan struct{}, 4)
	set := mcptool.Open(t.Context(), []mcptool.Server{{Name: "s", Command: bin, Timeout: 30 * time.Second}, {Name: "h", URL: h.URL, Timeout: 30 * time.Second}},
		mcptool.Options{Launch: launcher(sandbox.None(), t.TempDir()), OnChange: func() { changes <- struct{}{} }})
	if r := call(t, t.Context(), set.Tools(), "s__crash_once", `{}`); r.IsError {
		t.Fatalf("crash_once: %+v", r)
	}
	// The slow call is cancelled once the server has it.
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		select {
		case <-h.Started:
			cancel()
		case <-ctx.Done():
		}
	}()
	call(t, ctx, set.Tools(), "h__slow", `{}`)
	cancel()
	select {
	case <-h.Cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server was not told the slow call was cancelled")
	}
	call(t, t.Context(), set.Tools(), "h__add_tool", `{"name":"late"}`)
	<-changes
	set.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := clientGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the MCP client left after Close:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
