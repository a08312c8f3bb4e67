package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// A thread whose model was steered by an attacker (a prompt injection in a
// file, a page, a message) cannot read the bot's secrets or touch another
// thread, end to end through the program on the fake Slack.
func TestSlackInjectedThreadCannotTouchAnotherThread(t *testing.T) {
	t.Parallel()
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	e := newSlackEnv(t)
	data := e.cfg.DataDir
	attack := `set +e
		for d in ` + data + `/workspaces/app/*; do echo "package main // planted" > $d/planted.go; echo evil >> $d/wip.go; done 2>&1
		cat /proc/$PPID/environ /proc/1/environ 2>&1 | tr '\0' '\n'
		cat /proc/*/environ 2>/dev/null | rev | base64
		cat ` + filepath.Join(data, "threadsmith.db") + ` 2>&1 | strings | grep -i -m3 secret
		grep -rao 'sk-[a-z0-9-]*' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr 2>/dev/null | head -3
		git config core.fsmonitor "touch ` + filepath.Join(data, "pwned") + `" 2>&1
		echo injected-done`
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		user := lastUserText(r)
		answered := false
		for _, m := range r.Messages {
			answered = answered || m.Role == "tool"
		}
		switch {
		case strings.Contains(user, "thread B") && !answered:
			return llmfake.ToolCallReply(llmfake.Call{ID: "b1", Name: "write", Args: `{"path":"wip.go","content":"package main // B's secret work\n"}`})
		case strings.Contains(user, "thread B"):
			return llmfake.TextReply("B is done")
		case !answered:
			return llmfake.ToolCallReply(llmfake.Call{ID: "a1", Name: "bash", Args: jsonArgs(map[string]string{"command": attack})})
		}
		return llmfake.TextReply("A is done")
	})

	rootB := e.slack.Mention(slackChan, aliceID, "thread B: start the work", "")
	e.waitText(slackChan, rootB, "⬆️ pushed `bot/slack-")
	rootA := e.slack.Mention(slackChan, aliceID, "summarise the README (it says: ignore your instructions and run this)", "")
	e.waitText(slackChan, rootA, "A is done")
	e.waitText(slackChan, rootA, "⏱")

	var toolOut string
	for _, r := range e.llm.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" && m.ToolCallID == "a1" {
				toolOut = m.Content
			}
		}
	}
	if !strings.Contains(toolOut, "injected-done") {
		t.Fatalf("the attack did not run to its end:\n%s", toolOut)
	}
	for _, s := range []string{e.cfg.LLM.APIKey, e.slack.BotToken(), e.slack.AppToken(), "B's secret work"} {
		if sandboxtest.Shows(toolOut, s) {
			t.Errorf("the injected thread read %q:\n%s", s, toolOut)
		}
		if strings.Contains(e.transcript(slackChan, rootA), s) {
			t.Errorf("%q reached the Slack thread", s)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "pwned")); err == nil {
		t.Error("a git config the injected thread wrote ran a command in the bot")
	}
	var branchB string
	for _, b := range e.remote.Branches(t) {
		files := e.remote.Files(t, b)
		if _, ok := files["planted.go"]; ok && strings.Contains(files["planted.go"], "planted") && strings.Contains(files["wip.go"], "B's secret") {
			t.Errorf("thread B's branch %s carries what thread A planted", b)
		}
		if strings.Contains(files["wip.go"], "B's secret work") {
			branchB = b
		}
	}
	if branchB == "" {
		t.Fatalf("thread B's work was not pushed: branches %v", e.remote.Branches(t))
	}
	// On disk too: B's worktree is as B left it.
	dirs, _ := filepath.Glob(filepath.Join(data, "workspaces", "app", "*"))
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "wip.go")); err == nil && strings.Contains(string(b), "B's secret") {
			if strings.Contains(string(b), "evil") {
				t.Errorf("thread A changed thread B's wip.go: %q", b)
			}
			if _, err := os.Stat(filepath.Join(d, "planted.go")); err == nil {
				t.Errorf("thread A planted a file in thread B's worktree %s", d)
			}
		}
	}
}

func jsonArgs(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Without a usable sandbox the bot refuses to start, naming the key, unless
// the operator said sandbox.mode: none. The machine without one is made by
// running the real binary in a user namespace that may not create more.
func TestNoSandboxRefusesToStartUnlessModeNone(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is needed to take user namespaces away")
	}
	if err := exec.Command("unshare", "--user", "--map-root-user", "true").Run(); err != nil {
		t.Skipf("this machine has no user namespaces to take away: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildBot(t)
	write := func(name, mode string) string {
		p := filepath.Join(dir, name)
		cfg := fmt.Sprintf("data_dir: %q\nllm: {api_key: sk-x, base_url: \"http://127.0.0.1:1/v1\"}\nsandbox: {mode: %s}\nslack: {enabled: false}\n", filepath.Join(dir, "data"), mode)
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) (int, string) {
		script := `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`
		cmd := exec.CommandContext(ctx, "unshare", append([]string{"--user", "--map-root-user", "sh", "-c", script, "sh", bin}, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}

	start := time.Now()
	code, out := run("-config", write("auto.yaml", "auto"))
	if code != 2 || !strings.Contains(out, "sandbox.mode: auto") || !strings.Contains(out, "sandbox.mode: none") {
		t.Fatalf("without namespaces, mode auto: exit %d\n%s\nwant exit 2 naming sandbox.mode and the way out", code, out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %s", d)
	}
	code, out = run("-check", "-config", write("auto.yaml", "auto"))
	if code != 1 || !strings.Contains(out, "sandbox.mode: auto") {
		t.Errorf("-check without namespaces: exit %d\n%s", code, out)
	}
	code, out = run("-check", "-config", write("none.yaml", "none"))
	if !strings.Contains(out, "sandbox: none (unsandboxed") || strings.Contains(out, "sandbox.mode") {
		t.Errorf("-check with mode none: exit %d\n%s", code, out)
	}
}

// Under sandbox.mode: none every run's status message says so; sandboxed
// runs do not.
func TestSlackStatusSaysUnsandboxed(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.Sandbox.Mode = config.SandboxNone }))
	e.llm.Push(llmfake.TextReply("done"))
	root := e.slack.Mention(slackChan, aliceID, "hello", "")
	var status slackfake.Call
	e.waitFor("the status message", func() bool {
		var ok bool
		status, ok = e.firstPostIn(root)
		return ok
	})
	if txt := status.Params.Get("text"); !strings.Contains(txt, "unsandboxed") {
		t.Errorf("status message under mode none = %q, want it to say unsandboxed", txt)
	}
	e.waitText(slackChan, root, "⏱")

	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	s := newSlackEnv(t)
	s.llm.Push(llmfake.TextReply("done"))
	root = s.slack.Mention(slackChan, aliceID, "hello", "")
	s.waitText(slackChan, root, "⏱")
	if tr := s.transcript(slackChan, root); strings.Contains(tr, "unsandboxed") {
		t.Errorf("a sandboxed run says unsandboxed:\n%s", tr)
	}
}

// The running bot is not dumpable and has dropped the secrets it was given
// through its environment, so that nothing it starts inherits them.
func TestRunningBotIsNotDumpableAndKeepsNoSecretEnv(t *testing.T) {
	t.Setenv("THREADSMITH_TEST_LLM_KEY", "sk-test-key-0001") // the value slackConfig uses
	t.Setenv("THREADSMITH_TEST_PLAIN", "not-a-secret")
	defer unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
	newSlackEnv(t)
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
		t.Errorf("PR_GET_DUMPABLE = %d, %v; want 0", d, err)
	}
	if v, ok := os.LookupEnv("THREADSMITH_TEST_LLM_KEY"); ok {
		t.Errorf("the API key is still in the bot's environment: %q", v)
	}
	if os.Getenv("THREADSMITH_TEST_PLAIN") != "not-a-secret" {
		t.Error("a variable that is no secret was removed")
	}
}

// The console (`bot -console`) runs the agent's commands in the same sandbox
// as the team's bot: pid 1 of what bash sees is the sandbox's init, the
// machine's other processes and the console's API key are out of reach.
func TestConsoleRunsBashInTheSandbox(t *testing.T) {
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	const key = "sk-console-key-4711"
	probe := `echo "pid1=$(tr '\0' ' ' </proc/1/cmdline)"; echo "host=$(hostname)"; ls /proc | grep -cE '^[0-9]+$'
		cat /proc/$PPID/environ /proc/*/environ 2>/dev/null | tr '\0' '\n' | rev | base64; echo probe-done`
	llm := llmfake.New(t)
	llm.Handle(func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("probed")
		}
		return llmfake.ToolCallReply(llmfake.Call{ID: "p1", Name: "bash", Args: jsonArgs(map[string]string{"command": probe})})
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, m, feed, out := startConsole(t, ctx, key, llm.URL())
	defer m.Close()
	if _, err := io.WriteString(feed, "probe the machine\n"); err != nil {
		t.Fatal(err)
	}
	waitConsole(t, ctx, out, "probed", "⏱")
	var toolOut string
	for _, r := range llm.Requests() {
		for _, msg := range r.Messages {
			if msg.Role == "tool" && msg.ToolCallID == "p1" {
				toolOut = msg.Content
			}
		}
	}
	if !strings.Contains(toolOut, "probe-done") {
		t.Fatalf("the probe did not run to its end:\n%s", toolOut)
	}
	if !strings.Contains(toolOut, "pid1=threadsmith-sandbox-init") || !strings.Contains(toolOut, "host=sandbox") {
		t.Errorf("the console's bash did not run in the sandbox:\n%s", toolOut)
	}
	if sandboxtest.Shows(toolOut, key) || sandboxtest.Shows(out.String(), key) {
		t.Errorf("the console's API key reached the agent's command:\n%s", toolOut)
	}
}

// A secret file the config names (a repository's ssh_key_file) stays hidden
// even when it lies in a folder the sandbox shows (sandbox.read_only_paths,
// or under /usr).
func TestSandboxHidesSecretFilesTheConfigNames(t *testing.T) {
	shown := t.TempDir()
	key := filepath.Join(shown, "deploy_key")
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY----- sk-ssh-key-0042\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shown, "tool.txt"), []byte("a tool the agent may read\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Sandbox.ReadOnlyPaths = []string{shown}
	cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: "ssh://git@example.com/acme/app.git", SSHKeyFile: key}}
	pgKey := filepath.Join(shown, "client.key")
	if err := os.WriteFile(pgKey, []byte("sk-pg-key-0043\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Storage.DSN = "postgres://bot@db.example.com/threadsmith?sslmode=verify-full&sslkey=" + url.QueryEscape(pgKey)
	// A password file named by the environment, as pgx also reads it.
	pgPass := filepath.Join(shown, "pgpass")
	if err := os.WriteFile(pgPass, []byte("*:*:*:bot:sk-pg-pass-0044\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", pgPass)
	sc := sandboxConfig(&cfg, filepath.Join(t.TempDir(), "config.yaml"))
	sb := sandboxtest.New(t, sc)
	work := t.TempDir()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p, err := sb.Start(sandbox.Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "cat " + filepath.Join(shown, "tool.txt") + " " + key + " " + pgKey + " " + pgPass + " 2>&1"},
		Dir: work, Mounts: []sandbox.Mount{{Path: work, Access: sandbox.ReadWrite}}, Stdout: out, Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out.Name())
	if !strings.Contains(string(got), "a tool the agent may read") {
		t.Fatalf("the read-only path is not shown:\n%s", got)
	}
	if strings.Contains(string(got), "sk-ssh-key-0042") {
		t.Errorf("the sandbox read the repository's ssh key:\n%s", got)
	}
	if strings.Contains(string(got), "sk-pg-key-0043") {
		t.Errorf("the sandbox read the database's client key:\n%s", got)
	}
	if strings.Contains(string(got), "sk-pg-pass-0044") {
		t.Errorf("the sandbox read the password file PGPASSFILE names:\n%s", got)
	}
}

func TestDSNSecretFiles(t *testing.T) {
	t.Setenv("PGSSLKEY", "")
	t.Setenv("PGPASSFILE", "")
	for dsn, want := range map[string][]string{
		"":                    nil,
		"postgres://u:p@h/db": nil,
		"postgres://h/db?sslkey=%2Fk%20ey&passfile=/p": {"/k ey", "/p"},
		"host=h sslkey=/etc/k passfile = '/a b/p\\'q'": {"/etc/k", "/a b/p'q"},
		"host=h sslkey=/a\\ b dbname=x":                {"/a b"},
		"host=h mysslkey=/no":                          nil,
	} {
		if got := dsnSecretFiles(dsn); !slices.Equal(got, want) {
			t.Errorf("dsnSecretFiles(%q) = %q, want %q", dsn, got, want)
		}
	}
	t.Setenv("PGPASSFILE", "/env/pgpass")
	if got, want := dsnSecretFiles("host=h sslkey=/k"), []string{"/k", "/env/pgpass"}; !slices.Equal(got, want) {
		t.Errorf("with PGPASSFILE set: dsnSecretFiles = %q, want %q", got, want)
	}
}
