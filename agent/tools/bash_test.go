package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadsmith/threadsmith/agent"
)

func TestBashGolden(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	sh := NewBashTool(tw.Workspace)
	cases := []goldenCase{
		{"output", call(t, sh, map[string]any{"command": "echo hello; printf 'no newline'"})},
		{"interleaved stdout and stderr", call(t, sh, map[string]any{"command": "for i in 1 2 3; do echo out$i; echo err$i >&2; done"})},
		{"exit code", call(t, sh, map[string]any{"command": "echo failing; exit 3"})},
		{"no output", call(t, sh, map[string]any{"command": "true"})},
		{"cwd is the root", call(t, sh, map[string]any{"command": "pwd"})},
		{"killed by a signal", call(t, sh, map[string]any{"command": "kill -TERM $$"})},
		{"stdin is empty", call(t, sh, map[string]any{"command": "cat; echo done"})},
		{"timeout", call(t, sh, map[string]any{"command": "echo started; sleep 30", "timeout": 0.2})},
		{"empty command", call(t, sh, map[string]any{"command": "  "})},
	}
	checkGolden(t, "bash", tw, cases)
}

func TestBashEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-secret")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("DISCORD_BOT_TOKEN", "discord-secret")
	t.Setenv("GIT_TOKEN", "ghp-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	tw := newTestWorkspace(t, WorkspaceConfig{Env: map[string]string{"GOFLAGS": "-mod=mod"}, GitName: "Bot", GitEmail: "bot@example.com"})
	writeTree(t, tw.root, map[string]string{"f": "x"})
	res := call(t, NewBashTool(tw.Workspace), map[string]any{"command": "env"})
	out := textOf(res)
	for _, s := range []string{"secret", "SLACK_BOT_TOKEN", "OPENAI_API_KEY", "DISCORD", "GIT_TOKEN", "AWS_"} {
		if strings.Contains(out, s) {
			t.Errorf("env shows %q:\n%s", s, out)
		}
	}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	allowed := []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TMPDIR", "PAGER", "GIT_PAGER", "NO_COLOR",
		"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_TERMINAL_PROMPT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
		"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GOFLAGS",
		"PWD", "SHLVL", "_"} // the last three bash sets itself
	for k := range vars {
		if !slices.Contains(allowed, k) {
			t.Errorf("unexpected variable %s=%s", k, vars[k])
		}
	}
	want := map[string]string{
		"HOME": tw.Home(), "TERM": "dumb", "TMPDIR": filepath.Join(tw.Scratch(), "tmp"), "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL": filepath.Join(tw.Home(), ".gitconfig"), "GIT_AUTHOR_NAME": "Bot", "GIT_COMMITTER_EMAIL": "bot@example.com",
		"GOFLAGS": "-mod=mod", "PWD": tw.Root(),
	}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("%s=%q, want %q", k, vars[k], v)
		}
	}
	// Git inside the workspace uses the workspace's identity and no global config.
	gitCommitAll(t, tw.root)
	res = call(t, NewBashTool(tw.Workspace), map[string]any{"command": "git commit -q --allow-empty -m x && git log -1 --format=%an/%ae"})
	if got := strings.TrimSpace(textOf(res)); got != "Bot/bot@example.com" {
		t.Errorf("git identity %q, want Bot/bot@example.com", got)
	}
}

// pidFromOutput returns the first line of a result as a pid.
func pidFromOutput(t *testing.T, out string) int {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("no pid in output %q", out)
	}
	return pid
}

// assertDead fails unless pid has exited (a zombie counts as dead). The tool
// returns once the output pipe closed, which a killed process does early in
// its exit; a pidfd tells when the exit is complete, without polling.
func assertDead(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if n == 1 {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	t.Errorf("process %d is still alive 10s after the tool returned: %s", pid, stat)
}

func TestBashTimeoutKillsProcessGroup(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	res := call(t, NewBashTool(tw.Workspace), map[string]any{"command": "sleep 1000 & echo $!; wait", "timeout": 0.3})
	if !res.IsError || !strings.Contains(textOf(res), "Timed out after 0.3s") {
		t.Fatalf("got %q, want a timeout error", textOf(res))
	}
	assertDead(t, pidFromOutput(t, textOf(res)))
	var d BashDetails
	json.Unmarshal(res.Details, &d)
	if !d.TimedOut {
		t.Errorf("details %s, want timedOut", res.Details)
	}
}

func TestBashDefaultTimeoutCannotBeExtended(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{BashTimeout: 200 * time.Millisecond})
	start := time.Now()
	res := call(t, NewBashTool(tw.Workspace), map[string]any{"command": "sleep 30", "timeout": 3600})
	if !res.IsError || !strings.Contains(textOf(res), "Timed out after 0.2s") || time.Since(start) > 10*time.Second {
		t.Fatalf("got %q after %v, want the configured 0.2s timeout", textOf(res), time.Since(start))
	}
}

func TestBashAbortKillsProcessGroup(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The first partial output carries the grandchild's pid; cancel then.
	update := func(r agent.ToolResult) {
		if strings.Contains(textOf(r), "\n") {
			cancel()
		}
	}
	res := callCtx(t, ctx, NewBashTool(tw.Workspace), map[string]any{"command": "sleep 1000 & echo $!; wait"}, update)
	if !res.IsError || !strings.Contains(textOf(res), "Aborted") {
		t.Fatalf("got %q, want an aborted error", textOf(res))
	}
	assertDead(t, pidFromOutput(t, textOf(res)))
}

func TestBashBackgroundJobsDieWithTheCommand(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	res := call(t, NewBashTool(tw.Workspace), map[string]any{"command": "sleep 1000 & echo $!"})
	if res.IsError {
		t.Fatalf("got error %q", textOf(res))
	}
	assertDead(t, pidFromOutput(t, textOf(res)))
}

func TestBashTailTruncationSavesFullOutput(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	sh := NewBashTool(tw.Workspace)
	for _, tt := range []struct {
		name, command, note string
		lines               int
	}{
		// seq's final newline makes a last, empty line, as pi counts.
		{"by lines", "seq 1 5000", "[Showing lines 3002-5001 of 5001. Full output: ", 1998},
		{"by bytes, spilled while running", "for i in $(seq 1 4000); do printf '%099d\\n' $i; done", "[Showing lines 3489-4001 of 4001 (50.0KB limit). Full output: ", 511},
	} {
		res := call(t, sh, map[string]any{"command": tt.command})
		out := textOf(res)
		body, note, ok := strings.Cut(out, "\n\n[")
		if !ok || !strings.HasPrefix("["+note, tt.note) {
			t.Fatalf("%s: note %q, want prefix %q", tt.name, note, tt.note)
		}
		if n := strings.Count(body, "\n"); n != tt.lines {
			t.Errorf("%s: %d newlines kept, want %d", tt.name, n, tt.lines)
		}
		var d BashDetails
		json.Unmarshal(res.Details, &d)
		full, err := os.ReadFile(d.FullOutputPath)
		if err != nil || !strings.HasPrefix(d.FullOutputPath, filepath.Join(tw.Scratch(), "bash")+"/") {
			t.Fatalf("%s: full output at %q: %v", tt.name, d.FullOutputPath, err)
		}
		if !strings.Contains(out, d.FullOutputPath) || !strings.HasSuffix(string(full), body+"\n") {
			t.Errorf("%s: notice or file content wrong", tt.name)
		}
		if got := strings.Count(string(full), "\n"); got != 5000 && got != 4000 {
			t.Errorf("%s: full output has %d lines", tt.name, got)
		}
		// The model can read the saved output with the read tool.
		if r := call(t, NewReadTool(tw.Workspace, tw.files), map[string]any{"path": d.FullOutputPath, "limit": 1}); r.IsError {
			t.Errorf("%s: read of the full output: %q", tt.name, textOf(r))
		}
	}
	// One huge line keeps its end.
	res := call(t, sh, map[string]any{"command": "head -c 200000 /dev/zero | tr '\\0' x; echo -n END"})
	if out := textOf(res); !strings.Contains(out, "xEND\n\n[Showing the last 50.0KB of line 1, which is 195.3KB long. Full output: ") {
		t.Errorf("got %q…, want the partial-line note", out[len(out)-200:])
	}
}

func TestBashStreamsPartialOutput(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	fifo := filepath.Join(tw.tmp, "go-on")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The command prints, then blocks until the test has seen that output.
	var partials []string
	update := func(r agent.ToolResult) {
		partials = append(partials, textOf(r))
		if strings.Contains(textOf(r), "first") && len(partials) == 1 {
			go func() {
				f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err == nil {
					f.WriteString("go\n")
					f.Close()
				}
			}()
		}
	}
	res := callCtx(t, context.Background(), NewBashTool(tw.Workspace), map[string]any{"command": "echo first; read x < " + fifo + "; echo second", "timeout": 20}, update)
	if textOf(res) != "first\nsecond\n" || len(partials) == 0 || partials[0] != "first\n" {
		t.Fatalf("got %q with partials %q, want first then second with a partial \"first\\n\"", textOf(res), partials)
	}
}

func TestBashOutputIsCappedOnDisk(t *testing.T) {
	defer func(old int64) { maxBashLog = old }(maxBashLog)
	maxBashLog = 1 << 20
	o := &bashOutput{dir: t.TempDir(), lastNL: -1, max: maxBashLog}
	chunk := []byte(strings.Repeat("z", 64<<10))
	for range 40 {
		o.add(chunk)
	}
	var d BashDetails
	text, err := o.finish(&d)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(d.FullOutputPath)
	if err != nil || fi.Size() != maxBashLog || !strings.Contains(text, "(its first 1.0MB only)") {
		t.Errorf("log size %v (%v), note %q; want %d bytes and a note", fi.Size(), err, text[len(text)-150:], maxBashLog)
	}
	if len(o.buf) > 2*bashWindow {
		t.Errorf("kept %d bytes in memory, want at most %d", len(o.buf), 2*bashWindow)
	}
}
