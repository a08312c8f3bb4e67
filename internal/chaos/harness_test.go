package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

func TestMain(m *testing.M) {
	code := storagetest.MainWithPostgres(m)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// botBinary builds cmd/bot once per test binary run.
func botBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "threadsmith-chaos-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "bot")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", buildBin, "github.com/threadsmith/threadsmith/cmd/bot").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build cmd/bot: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildBin
}

const (
	aliceID = "U0ALICE01"
	bobID   = "U0BOB0001"
)

// setup describes one environment.
type setup struct {
	driver   string        // "postgres" (default) or "sqlite"
	ttl      time.Duration // storage.lease.ttl
	renew    time.Duration // storage.lease.renew
	think    time.Duration // how long the fake model takes before it answers
	logLevel string
	timeout  time.Duration // the whole environment's deadline
	// hang: a request whose new user messages contain HANG never ends (until
	// the replica dies).
	hang bool
	// pgBase, when set, is the PostgreSQL the environment's schema is made
	// in (a cluster of the test's own), instead of the shared one.
	pgBase string
	// slack: options for the fake Slack, after the harness's own.
	slack []slackfake.Option
	// config is YAML added at the top level of every replica's config,
	// slackConfig inside its slack block (indented by two spaces).
	config, slackConfig string
	// env is added to every replica's environment.
	env []string
}

// env is a fake Slack (spreading events over connections), a fake LLM, a
// bare git remote, a database, and replica processes of the bot.
type env struct {
	tb     testing.TB
	ctx    context.Context
	s      setup
	slack  *slackfake.Server
	llm    *llmfake.Server
	remote *gitremote.Repo
	dsn    string // the schema the replicas share (postgres)
	// replicaDSN, when set, is the DSN the replicas connect with instead
	// of dsn (the same schema through a proxy).
	replicaDSN string
	db         *pgxpool.Pool // the test's own connection to it (postgres)
	bin        string
	dir        string
	// gate, when set before the first request, holds the answer to a
	// request whose new user messages contain GATE until it is closed.
	gate chan struct{}

	mu       sync.Mutex
	replicas []*replica
	sqlDB    *sql.DB // the audit's connection (auditDB)
}

func newEnv(tb testing.TB, s setup) *env {
	tb.Helper()
	if s.driver == "" {
		s.driver = "postgres"
	}
	if s.ttl == 0 {
		s.ttl, s.renew = 2*time.Second, 500*time.Millisecond
	}
	if s.logLevel == "" {
		s.logLevel = "info"
	}
	if s.timeout == 0 {
		s.timeout = 10 * time.Minute
	}
	e := &env{tb: tb, s: s, dir: tb.TempDir()}
	var cancel context.CancelFunc
	e.ctx, cancel = context.WithTimeout(context.Background(), s.timeout)
	tb.Cleanup(cancel)
	if s.driver == "postgres" {
		base := s.pgBase
		if base == "" {
			base = storagetest.PostgresDSN(tb) // skips, saying why, without PostgreSQL
		}
		e.dsn = storagetest.FreshSchema(tb, base)
		pool, err := pgxpool.New(e.ctx, e.dsn)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(pool.Close)
		e.db = pool
	}
	e.bin = botBinary(tb)
	e.slack = slackfake.New(tb, append([]slackfake.Option{slackfake.SpreadEvents(), slackfake.WithoutBotEcho()}, s.slack...)...)
	e.slack.AddUser(slackfake.User{ID: aliceID, Name: "alice", RealName: "Alice Liddell", Email: "alice@example.com"})
	e.slack.AddUser(slackfake.User{ID: bobID, Name: "bob", RealName: "Bob Stone", Email: "bob@example.com"})
	e.llm = llmfake.New(tb)
	e.llm.Handle(e.answer)
	e.remote = gitremote.NewBare(tb, gitremote.Options{Files: map[string]string{"README.md": "# app\n", "main.go": "package main\n"}})
	// Processes end before the fakes close (cleanups run last first).
	tb.Cleanup(e.stopAll)
	return e
}

// tokenRE finds the unique tokens the tests put in messages.
var tokenRE = regexp.MustCompile(`TKN\d{4,6}m\d{2}`)

// answer is the fake model: after e.s.think it answers, naming its request
// and the tokens of the user messages since the last assistant message.
func (e *env) answer(r llmfake.Request) llmfake.Response {
	var toks []string
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "assistant"; i-- {
		if r.Messages[i].Role == "user" {
			toks = append(toks, tokenRE.FindAllString(r.Messages[i].Content, -1)...)
		}
	}
	if e.s.hang {
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "assistant"; i-- {
			if r.Messages[i].Role == "user" && strings.Contains(r.Messages[i].Content, "HANG") {
				return llmfake.Stream(llmfake.Content("working on it"), llmfake.Hang())
			}
		}
	}
	text := fmt.Sprintf("ANS-%d re %s", r.Seq, strings.Join(toks, " "))
	if e.gate != nil {
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "assistant"; i-- {
			if r.Messages[i].Role == "user" && strings.Contains(r.Messages[i].Content, "GATE") {
				return llmfake.Stream(llmfake.Await(e.gate), llmfake.Content(text), llmfake.Finish("stop"), llmfake.Usage(10, 1, 0), llmfake.Done())
			}
		}
	}
	resp := llmfake.TextReply(text)
	if e.s.think > 0 {
		resp.Steps = append([]llmfake.Step{llmfake.Delay(e.s.think)}, resp.Steps...)
	}
	return resp
}

// replica is one bot process slot: its data_dir and config; it is started,
// killed and started again.
type replica struct {
	e      *env
	n      int
	config string
	port   int
	logs   string // the current process's log file

	mu     sync.Mutex
	proc   *process
	starts int
}

type process struct {
	cmd     *exec.Cmd
	log     string
	started time.Time
	exited  chan struct{}
	err     error
}

// addReplica writes a new replica's config (it is not started).
func (e *env) addReplica() *replica {
	e.tb.Helper()
	e.mu.Lock()
	n := len(e.replicas) + 1
	e.mu.Unlock()
	dir := filepath.Join(e.dir, fmt.Sprintf("replica%d", n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.tb.Fatal(err)
	}
	port := freePort(e.tb)
	storageYAML := "storage: {driver: sqlite}\n"
	if e.s.driver == "postgres" {
		storageYAML = fmt.Sprintf("storage:\n  driver: postgres\n  dsn: ${TEST_CHAOS_DSN}\n  lease: {ttl: %s, renew: %s}\n", e.s.ttl, e.s.renew)
	}
	yaml := fmt.Sprintf(`data_dir: %q
shutdown_grace: 5s
log: {level: %s, format: text}
%shttp:
  listen: 127.0.0.1:%d
llm:
  base_url: %q
  api_key: sk-test-key-0001
  model: fake-model
workspace:
  default_repo: app
  repos:
    - {name: app, url: %q, default_branch: main}
slack:
  enabled: true
  mode: socket
  bot_token: ${TEST_SLACK_BOT_TOKEN}
  app_token: ${TEST_SLACK_APP_TOKEN}
  api_url: %q
%s%s`, filepath.Join(dir, "data"), e.s.logLevel, storageYAML, port, e.llm.URL(), e.remote.Path, e.slack.APIURL(), e.s.slackConfig, e.s.config)
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		e.tb.Fatal(err)
	}
	r := &replica{e: e, n: n, config: config, port: port}
	e.mu.Lock()
	e.replicas = append(e.replicas, r)
	e.mu.Unlock()
	return r
}

func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start starts the replica's process and waits until /readyz says it is
// connected to its database and to Slack.
func (r *replica) start() error {
	r.mu.Lock()
	if r.proc != nil && !r.proc.done() {
		r.mu.Unlock()
		return fmt.Errorf("replica %d is running", r.n)
	}
	r.starts++
	p := &process{log: filepath.Join(filepath.Dir(r.config), fmt.Sprintf("run%d.log", r.starts)), exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	p.cmd = exec.Command(r.e.bin, "-config", r.config)
	p.cmd.Env = append(os.Environ(), "TEST_SLACK_BOT_TOKEN="+r.e.slack.BotToken(), "TEST_SLACK_APP_TOKEN="+r.e.slack.AppToken(),
		// A replica stopped inside a transaction loses its session (and
		// its row locks) after this, not the bot's default 5 s: within the
		// test's ttl + margin.
		"TEST_CHAOS_DSN="+r.e.replicasDSN()+sep(r.e.dsn)+"idle_in_transaction_session_timeout=1000")
	p.cmd.Env = append(p.cmd.Env, r.e.s.env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		out.Close()
		r.mu.Unlock()
		return err
	}
	go func() {
		p.err = p.cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	r.proc = p
	r.mu.Unlock()
	return r.waitReady(p)
}

func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// waitReady polls the process's /readyz until it answers 200.
func (r *replica) waitReady(p *process) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port)
	ctx, cancel := context.WithTimeout(r.e.ctx, 90*time.Second)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("replica %d exited while starting: %v\n%s", r.n, p.err, tail(p.log, 40))
		case <-ctx.Done():
			return fmt.Errorf("replica %d not ready: %v (last: %v)\n%s", r.n, ctx.Err(), err, tail(p.log, 40))
		case <-tick.C:
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone; it returns when
// the signal was sent.
func (r *replica) kill() (time.Time, error) {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p == nil || p.done() {
		return time.Time{}, fmt.Errorf("replica %d is not running", r.n)
	}
	at := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return at, err
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		return at, fmt.Errorf("replica %d still running 30s after SIGKILL", r.n)
	}
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		return at, fmt.Errorf("replica %d after SIGKILL: %v, want killed by the signal\n%s", r.n, p.err, tail(p.log, 40))
	}
	return at, nil
}

// pause stops the process (SIGSTOP) and waits until it is stopped.
func (r *replica) pause() (time.Time, error) {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p == nil || p.done() {
		return time.Time{}, fmt.Errorf("replica %d is not running", r.n)
	}
	at := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return at, err
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	err := r.e.poll("the process to stop", 30*time.Second, 2*time.Millisecond, func() (bool, error) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return false, err
		}
		// pid (comm) state …: the state follows the last ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i > 0 && i+2 < len(s) && (s[i+2] == 'T' || s[i+2] == 't'), nil
	})
	return at, err
}

// resume continues a paused process (SIGCONT).
func (r *replica) resume() error {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p == nil || p.done() {
		return fmt.Errorf("replica %d is not running", r.n)
	}
	return p.cmd.Process.Signal(syscall.SIGCONT)
}

// running reports whether the replica's process runs.
func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc != nil && !r.proc.done()
}

func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.cmd.Process.Pid
}

// unexpectedExit reports a process that exited by itself.
func (r *replica) unexpectedExit() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil && r.proc.done() {
		var ee *exec.ExitError
		if errors.As(r.proc.err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			return nil // killed by the test
		}
		return fmt.Errorf("replica %d exited by itself: %v\n%s", r.n, r.proc.err, tail(r.proc.log, 60))
	}
	return nil
}

// stopAll kills every replica still running (at cleanup) and, when the test
// failed, shows the end of every log.
func (e *env) stopAll() {
	e.mu.Lock()
	rs := append([]*replica(nil), e.replicas...)
	e.mu.Unlock()
	for _, r := range rs {
		r.mu.Lock()
		p := r.proc
		r.mu.Unlock()
		if p == nil {
			continue
		}
		if !p.done() {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if e.tb.Failed() {
			e.tb.Logf("replica %d (start %d, pid %d) log tail:\n%s", r.n, r.starts, p.cmd.Process.Pid, tail(p.log, 80))
		}
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// poll calls cond every interval until it returns true or an error, or the
// deadline d passes.
func (e *env) poll(what string, d, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(e.ctx, d)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// replicasDSN is the DSN the replicas connect with.
func (e *env) replicasDSN() string {
	if e.replicaDSN != "" {
		return e.replicaDSN
	}
	return e.dsn
}

// sep is what joins one more parameter to a postgres:// URL.
func sep(dsn string) string {
	if strings.Contains(dsn, "?") {
		return "&"
	}
	return "?"
}
