package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// BenchmarkBashSandbox measures what the sandbox adds to one bash tool call,
// in this package's test binary: it links everything the bot links, so the
// re-executed init and shim start like the bot's own binary would. Each
// sub-benchmark reports the median; run the pairs in one go (the machines
// are noisy, the ratio is the figure):
//
//	go test ./cmd/bot -run '^$' -bench BashSandbox -benchtime 200x -count 3
func BenchmarkBashSandbox(b *testing.B) {
	sb := sandboxtest.New(b, sandbox.Config{})
	// With the network on: the sandbox's own network namespace and its
	// user-mode network stack, started and stopped per call.
	sandboxtest.Network(b)
	net := sandboxtest.New(b, sandbox.Config{Network: true})
	for _, cmd := range []struct{ name, command string }{
		{"true", "true"},
		{"ls", "ls -la /usr/bin >/dev/null"},
		{"sleep1s", "sleep 1"},
	} {
		for _, mode := range []struct {
			name string
			sb   *sandbox.Sandbox
		}{{"sandboxed", sb}, {"network", net}, {"unsandboxed", sandbox.None()}} {
			b.Run(cmd.name+"/"+mode.name, func(b *testing.B) {
				if cmd.name == "sleep1s" && b.N > 5 {
					b.Skip("sleep1s: run with -benchtime 5x or less")
				}
				root := filepath.Join(b.TempDir(), "repo")
				os.MkdirAll(root, 0o755)
				ws, err := tools.NewWorkspace(tools.WorkspaceConfig{Root: root, Sandbox: mode.sb})
				if err != nil {
					b.Fatal(err)
				}
				defer ws.Close()
				sh := tools.NewBashTool(ws)
				call := agent.ToolCall{ID: "1", Name: tools.BashName, Args: []byte(`{"command":` + quote(cmd.command) + `}`)}
				var took []time.Duration
				for b.Loop() {
					start := time.Now()
					res, err := sh.Execute(b.Context(), call, nil)
					if err != nil || res.IsError {
						b.Fatalf("%v %+v", err, res)
					}
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			})
		}
	}
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		if r == '"' || r == '\\' {
			b = append(b, '\\')
		}
		b = append(b, string(r)...)
	}
	return string(append(b, '"'))
}
