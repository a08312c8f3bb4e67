package mcptool_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// benchServers are the fake server three ways: stdio in the sandbox (as the
// bot runs it), stdio unsandboxed and over HTTP (the baselines).
func benchServers(b *testing.B) map[string]struct {
	srv    mcptool.Server
	launch mcptool.Launch
} {
	bin := mcpfake.Build(b)
	dir := b.TempDir()
	sb := sandboxtest.New(b, sandbox.Config{})
	return map[string]struct {
		srv    mcptool.Server
		launch mcptool.Launch
	}{
		"stdio-sandbox": {mcptool.Server{Name: "fake", Command: bin}, launcher(sb, dir, sandbox.Mount{Path: filepath.Dir(bin), Access: sandbox.ReadOnly})},
		"stdio-none":    {mcptool.Server{Name: "fake", Command: bin}, launcher(sandbox.None(), dir)},
		"http":          {mcptool.Server{Name: "fake", URL: mcpfake.ServeHTTP(b, "", "")}, nil},
	}
}

// BenchmarkMCPOpen is what a thread's session start pays per server: start
// it, initialize, list its tools, and (after) close it.
func BenchmarkMCPOpen(b *testing.B) {
	servers := benchServers(b)
	for _, name := range []string{"stdio-sandbox", "stdio-none", "http"} {
		s := servers[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				set := mcptool.Open(context.Background(), []mcptool.Server{s.srv}, mcptool.Options{Launch: s.launch})
				if st := set.Status(); st[0].Err != "" {
					b.Fatal(st[0].Err)
				}
				set.Close()
			}
		})
	}
}

// BenchmarkMCPCall is one echo call on an open server.
func BenchmarkMCPCall(b *testing.B) {
	servers := benchServers(b)
	for _, name := range []string{"stdio-sandbox", "stdio-none", "http"} {
		s := servers[name]
		b.Run(name, func(b *testing.B) {
			set := mcptool.Open(context.Background(), []mcptool.Server{s.srv}, mcptool.Options{Launch: s.launch})
			defer set.Close()
			var echo agent.Tool
			for _, t := range set.Tools() {
				if t.Spec().Name == "fake__echo" {
					echo = t
				}
			}
			args := json.RawMessage(`{"text":"hi"}`)
			for b.Loop() {
				if r, err := echo.Execute(context.Background(), agent.ToolCall{ID: "1", Name: "fake__echo", Args: args}, nil); err != nil || r.IsError {
					b.Fatal(err, r)
				}
			}
		})
	}
}
