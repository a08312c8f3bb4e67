package main

import (
	"os"
	"os/exec"
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
				b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}

// BenchmarkSandboxStart measures the start of one bash tool call (`true`)
// in the sandbox against two baselines, interleaved call by call so that the
// machine's load falls on all three alike: the same call unsandboxed, and
// unsandboxed running `bwrap --unshare-all --ro-bind / / true` (Debian's
// bubblewrap: new user, mount, PID, network, IPC, UTS and cgroup namespaces
// and one bind mount). It reports each one's median and 99th percentile,
// and what the sandbox and bubblewrap add to the median. Rounds are 20 ms
// apart, a short stand-in for the model's turn between two calls (the bot
// starts the next call's init meanwhile):
//
//	go test ./cmd/bot -run '^$' -bench SandboxStart -benchtime 300x -count 3
func BenchmarkSandboxStart(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap (Debian's bubblewrap) is not installed")
	}
	sb := sandboxtest.New(b, sandbox.Config{})
	// The sandboxed call comes last in each round: the bot starts the next
	// init when a command ends, which must not slow the baselines down.
	modes := []struct {
		name, command string
		sb            *sandbox.Sandbox
	}{
		{"unsandboxed", "true", sandbox.None()},
		{"bwrap", bwrap + " --unshare-all --ro-bind / / true", sandbox.None()},
		{"sandboxed", "true", sb},
	}
	tools_ := make([]agent.Tool, len(modes))
	calls := make([]agent.ToolCall, len(modes))
	for i, m := range modes {
		root := filepath.Join(b.TempDir(), "repo")
		os.MkdirAll(root, 0o755)
		ws, err := tools.NewWorkspace(tools.WorkspaceConfig{Root: root, Sandbox: m.sb})
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		tools_[i] = tools.NewBashTool(ws)
		calls[i] = agent.ToolCall{ID: "1", Name: tools.BashName, Args: []byte(`{"command":` + quote(m.command) + `}`)}
	}
	took := make([][]time.Duration, len(modes))
	for b.Loop() {
		// The model's turn between two tool calls, in which the bot starts
		// the next sandbox's init (outside the timed calls).
		b.StopTimer()
		time.Sleep(20 * time.Millisecond)
		b.StartTimer()
		for i := range modes {
			start := time.Now()
			res, err := tools_[i].Execute(b.Context(), calls[i], nil)
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %+v", modes[i].name, err, res)
			}
			took[i] = append(took[i], time.Since(start))
		}
	}
	p50 := make([]float64, len(modes))
	for i, m := range modes {
		slices.Sort(took[i])
		p50[i] = float64(took[i][len(took[i])/2].Microseconds()) / 1000
		b.ReportMetric(p50[i], m.name+"-p50-ms")
		b.ReportMetric(float64(took[i][len(took[i])*99/100].Microseconds())/1000, m.name+"-p99-ms")
	}
	b.ReportMetric(p50[2]-p50[0], "added-p50-ms")
	b.ReportMetric(p50[1]-p50[0], "bwrap-added-p50-ms")
	b.ReportMetric(0, "ns/op")
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
