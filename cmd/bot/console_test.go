package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/adapters/console"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
)

// syncBuffer is a bytes.Buffer safe for the console's writer goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestConsoleRunsOnTheCurrentRepository(t *testing.T) {
	llm := llmfake.New(t)
	llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "ls", Args: `{}`}),
		llmfake.TextReply("The repository has a README."),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	repo, m, feed, out := startConsole(t, ctx, "sk-console", llm.URL())
	defer m.Close()
	if _, err := io.WriteString(feed, "what is in this repository?\n"); err != nil {
		t.Fatal(err)
	}
	got := waitConsole(t, ctx, out, "The repository has a README.", "⏱", "✓ `ls`")
	for _, want := range []string{"threadsmith console", "bot> ⏳ working…", "bot> ✓ `ls`", "bot> The repository has a README."} {
		if !strings.Contains(got, want) {
			t.Errorf("console output lacks %q:\n%s", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "data")); err == nil {
		t.Fatal("console mode wrote its data into the repository")
	}
}

// startConsole runs the bot as `bot -console` in a new repository (one
// commit, made the current directory), with the user's cache in a folder of
// the test and OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL (fake-model)
// its only environment: what is written to feed is typed, out is the
// terminal. The caller closes m.
func startConsole(t *testing.T, ctx context.Context, key, llmURL string) (repo string, m *Main, feed io.Writer, out *syncBuffer) {
	t.Helper()
	repo = t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=main")
	gitremote.WriteFile(t, repo, "README.md", "# demo\n")
	gitremote.GitInput(t, repo, nil, nil, "add", "-A")
	gitremote.GitInput(t, repo, nil, nil, "commit", "--quiet", "-m", "init")
	t.Chdir(repo)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	m, feed, out = runConsole(t, ctx, key, llmURL)
	return repo, m, feed, out
}

// runConsole runs the bot as `bot -console` in the current directory, as
// startConsole does.
func runConsole(t *testing.T, ctx context.Context, key, llmURL string) (m *Main, feed io.Writer, out *syncBuffer) {
	t.Helper()
	in, w := io.Pipe()
	out = &syncBuffer{}
	m = NewMain()
	m.Console = true
	m.ConfigPath = filepath.Join(t.TempDir(), "absent.yaml")
	m.Env = envOf("OPENAI_API_KEY", key, "OPENAI_BASE_URL", llmURL, "OPENAI_MODEL", "fake-model")
	m.Stdin, m.Stdout, m.Stderr = in, out, io.Discard
	if err := m.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return m, w, out
}

// waitConsole waits until the console's output has every one of wants, and
// returns it.
func waitConsole(t *testing.T, ctx context.Context, out *syncBuffer, wants ...string) string {
	t.Helper()
	for {
		got, missing := out.String(), false
		for _, w := range wants {
			missing = missing || !strings.Contains(got, w)
		}
		if !missing {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no answer on the console:\n%s", got)
		case <-time.After(20 * time.Millisecond): // polling a terminal's output: nothing to wait on
		}
	}
}

// envOf is an environment of the given variables only.
func envOf(kv ...string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

// consoleRepo makes a git repository the current directory, with the
// user's cache in a folder of the test.
func consoleRepo(t *testing.T) (repo, cache string) {
	t.Helper()
	repo, cache = t.TempDir(), t.TempDir()
	gitremote.Git(t, repo, "init", "--quiet", "--initial-branch=main")
	gitremote.GitInput(t, repo, nil, nil, "commit", "--quiet", "--allow-empty", "-m", "init")
	t.Chdir(repo)
	t.Setenv("XDG_CACHE_HOME", cache)
	return repo, cache
}

// The README's next step after the first command: config.yaml copied from
// the example (Slack enabled, its tokens unset, data_dir ./data). -console
// takes its LLM part, which reads OPENAI_BASE_URL, and nothing of a team's
// bot; its data stays in the user's cache.
func TestConsoleTakesTheLocalPartsOfTheExampleConfig(t *testing.T) {
	example, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	repo, cache := consoleRepo(t)
	path := filepath.Join(repo, "config.yaml")
	if err := os.WriteFile(path, example, 0o600); err != nil {
		t.Fatal(err)
	}
	env := envOf("OPENAI_API_KEY", "sk-local", "OPENAI_BASE_URL", "http://127.0.0.1:11434/v1", "OPENAI_MODEL", "local-model")
	cfg, err := consoleConfig(path, "", env)
	if err != nil {
		t.Fatalf("consoleConfig: %v", err)
	}
	if cfg.LLM.BaseURL != "http://127.0.0.1:11434/v1" || cfg.LLM.APIKey != "sk-local" || cfg.LLM.Model != "local-model" {
		t.Errorf("llm = %s %s %s, want the environment's", cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model)
	}
	if cfg.Slack.Enabled || cfg.Discord.Enabled || cfg.HTTP.Listen != "" {
		t.Errorf("slack %v, discord %v, http.listen %q: the console runs none of them", cfg.Slack.Enabled, cfg.Discord.Enabled, cfg.HTTP.Listen)
	}
	if !strings.HasPrefix(cfg.DataDir, filepath.Join(cache, "threadsmith")+string(filepath.Separator)) {
		t.Errorf("data_dir %s, want a folder of the user's cache (%s)", cfg.DataDir, cache)
	}
	if cfg.ShutdownGrace > consoleGrace {
		t.Errorf("shutdown_grace %v: someone quitting a terminal waits at most %v", cfg.ShutdownGrace, consoleGrace)
	}
	if cfg.Sandbox.DiskReserve != 0 || cfg.Sandbox.Disk == 0 {
		t.Errorf("sandbox.disk_reserve %d, disk %d: the console keeps no reserve file in the user's cache, and the thread's quota holds", cfg.Sandbox.DiskReserve, cfg.Sandbox.Disk)
	}
	if r, ok := cfg.Workspace.Repo(cfg.Workspace.DefaultRepo); !ok || r.URL == "" || filepath.Base(r.URL) != filepath.Base(repo) {
		t.Errorf("default repo %q (%+v), want the current directory's", cfg.Workspace.DefaultRepo, r)
	}

	// Without a file: the same variables; without a key, it says what to set.
	cfg, err = consoleConfig(filepath.Join(repo, "absent.yaml"), "", env)
	if err != nil || cfg.LLM.BaseURL != "http://127.0.0.1:11434/v1" || cfg.LLM.Model != "local-model" {
		t.Fatalf("no file: %v, llm %+v", err, cfg)
	}
	if _, err := consoleConfig(filepath.Join(repo, "absent.yaml"), "", envOf()); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("no file and no key: %v, want it to name OPENAI_API_KEY", err)
	}
	if _, err := consoleConfig(path, "nope", env); err == nil || !strings.Contains(err.Error(), "-repo nope") {
		t.Errorf("-repo nope: %v", err)
	}
}

// Each console start is a new session on a branch of its own, also when it
// starts within the second the last one started in.
func TestConsoleSessionsDoNotShareABranch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	taken := map[string]bool{"20260102-150405": true, "20260102-150406": true}
	th := newConsoleThread(now, func(r chat.ThreadRef) bool { return taken[r.Thread] })
	if th.Thread != "20260102-150407" {
		t.Fatalf("thread %q, want the next free second 20260102-150407", th.Thread)
	}
	if th := newConsoleThread(now, func(chat.ThreadRef) bool { return false }); th.Thread != "20260102-150405" {
		t.Fatalf("thread %q, want 20260102-150405", th.Thread)
	}
}

// The console started again within a second of the last start does not
// take up that session: it asks the database which names are taken. (Every
// name from now on for a minute is taken here, so the test does not depend
// on when the two consoles start.)
func TestAConsoleStartedAgainTakesANameOfItsOwn(t *testing.T) {
	llm := llmfake.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, first, _, _ := startConsole(t, ctx, "sk-console", llm.URL())
	taken := map[string]bool{}
	for now, i := time.Now(), -1; i < 60; i++ {
		th := console.NewThread(now.Add(time.Duration(i) * time.Second))
		key := storage.ThreadKey{Platform: th.Platform, Team: th.Team, Channel: th.Channel, Thread: th.Thread}
		if _, _, err := first.DB.EnsureThread(ctx, key, storage.ThreadInit{Repo: "app", Branch: "bot/console-" + th.Thread}); err != nil {
			t.Fatal(err)
		}
		taken[th.Thread] = true
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	m, _, out := runConsole(t, ctx, "sk-console", llm.URL())
	defer m.Close()
	got := regexp.MustCompile(`new session (\S+)`).FindStringSubmatch(waitConsole(t, ctx, out, "new session "))
	if got == nil || taken[got[1]] {
		t.Fatalf("the second console's session %q is one already taken:\n%s", got, out.String())
	}
}

// A second console on a repository is refused, naming the first one's pid,
// in the console's terms (it has no data_dir key to change).
func TestASecondConsoleOnTheRepositoryIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	held, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	m := NewMain()
	m.Console = true
	err = m.lockDataDir(&config.Config{DataDir: dir})
	if err == nil {
		t.Fatal("a second console took the repository's data_dir")
	}
	for _, want := range []string{fmt.Sprintf("pid %d", os.Getpid()), "one console per repository", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "another data_dir") {
		t.Errorf("refusal %q tells a console user to change a data_dir", err)
	}
}

// The console logs to a file in its data folder; where it cannot write one,
// only warnings and errors reach the terminal (stderr), never the INFO
// lines and the config dump that came between the conversation's lines.
func TestConsoleLogsToAFileOrOnlyWarningsToStderr(t *testing.T) {
	t.Parallel()
	m := NewMain()
	m.Console = true
	var stderr syncBuffer
	m.Stderr = &stderr
	dir := t.TempDir()
	log := m.logger(&config.Config{DataDir: dir, Log: config.Log{Level: config.LogInfo}})
	log.Info("starting threadsmith", "config", "…")
	log.Warn("something to see")
	if m.logFile == nil {
		t.Fatal("no log file in the console's data folder")
	}
	m.logFile.Close()
	b, err := os.ReadFile(filepath.Join(dir, "threadsmith.log"))
	if err != nil || !strings.Contains(string(b), "starting threadsmith") || !strings.Contains(string(b), "something to see") {
		t.Fatalf("log file: %v\n%s", err, b)
	}
	if stderr.String() != "" {
		t.Fatalf("the terminal got log lines: %q", stderr.String())
	}

	// A data folder that cannot be made (a file is in the way).
	blocked := filepath.Join(dir, "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m2 := NewMain()
	m2.Console = true
	m2.Stderr = &stderr
	log = m2.logger(&config.Config{DataDir: filepath.Join(blocked, "data"), Log: config.Log{Level: config.LogDebug}})
	log.Info("starting threadsmith")
	log.Warn("something to see")
	if got := stderr.String(); strings.Contains(got, "starting threadsmith") || !strings.Contains(got, "something to see") {
		t.Fatalf("without a log file, stderr got %q: want warnings only", got)
	}
}

// hostileTerminal is text with a terminal control sequence of every class,
// each around a word that must stay readable.
const hostileTerminal = "colour \x1b[31mRED\x1b[0m, clear \x1b[2J\x1b[H, " +
	"clip \x1b]52;c;cm0gLXJmIH4K\x07CLIP, link \x1b]8;;https://evil.example/\x1b\\LINK\x1b]8;;\x1b\\, " +
	"title \x1b]0;pwned\u009cTITLE, dcs \x1bP1$r0m\x1b\\DCS, apc \x1b_Gf=100;AAAA\x1b\\APC, " +
	"8-bit \u009b2J\u009d52;c;eA==\x07C1, reset \x1bc, lone \x1b€LONE, cr \rCR, bs \b\bBS, bell \x07END"

// The console prints what the model wrote (its answer, streamed, and the
// command in a tool's status line) and what a tool wrote (a file shown by
// !diff) without any terminal control: nothing could write the clipboard,
// open a link, set the title or clear the screen, and the words stay.
func TestConsoleStripsTerminalControls(t *testing.T) {
	llm := llmfake.New(t)
	command := "printf 'x\\033]52;c;Y2xpcA==\\007PRINTED\\033[2J\\n' > esc.txt # \x1b]0;ARG\x07ARGEND \x1b[2J"
	args, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	// The answer streams in pieces that cut sequences in two.
	var chunks []string
	for rest := hostileTerminal; rest != ""; {
		n := min(7, len(rest))
		chunks, rest = append(chunks, rest[:n]), rest[n:]
	}
	llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "bash", Args: string(args)}),
		llmfake.TextReply(chunks...),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, m, feed, out := startConsole(t, ctx, "sk-console", llm.URL())
	defer m.Close()
	if _, err := io.WriteString(feed, "show me colours\n"); err != nil {
		t.Fatal(err)
	}
	waitConsole(t, ctx, out, "END", "⏱", "ARGEND")
	if _, err := io.WriteString(feed, "!diff\n"); err != nil {
		t.Fatal(err)
	}
	got := waitConsole(t, ctx, out, "xPRINTED")
	for _, r := range got {
		if r == 0x1b || r >= 0x80 && r <= 0x9f || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			t.Fatalf("the console printed control %U:\n%q", r, got)
		}
	}
	for _, want := range []string{"RED", "CLIP", "LINK", "TITLE", "DCS", "APC", "C1", "€LONE", "CR", "BS", "END", "ARGEND", "xPRINTED"} {
		if !strings.Contains(got, want) {
			t.Errorf("the console lost %q:\n%s", want, got)
		}
	}
	for _, leaked := range []string{"cm0gLXJmIH4K", "evil.example", "pwned", "Gf=100", "eA==", "0;ARG"} {
		if strings.Contains(got, leaked) {
			t.Errorf("a sequence's payload %q was printed as text:\n%s", leaked, got)
		}
	}
}
