package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync/atomic"
	"time"

	"github.com/threadsmith/threadsmith/adapters/console"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/ops"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/web"
)

// opsState is what Main keeps for operating the bot: its metrics, the
// operator's HTTP endpoints, the data_dir lock and the console's log file.
type opsState struct {
	// Metrics are the bot's Prometheus metrics, created by Run.
	Metrics *ops.Metrics

	lock     *dataDirLock
	httpLn   net.Listener
	pipe     *ops.Pipe // the Slack Events API behind http.listen, when they share it
	opsStop  context.CancelFunc
	opsDone  chan error
	running  atomic.Bool // the bridge is running: adapters are being started
	draining atomic.Bool // Close began: not ready any more
	console  *console.Adapter
	logFile  *os.File
	pages    *web.Server // the session pages on http.listen, nil when off
	// retrySleep is the clock of the platforms' reconnect backoff (nil:
	// real time; tests inject theirs).
	retrySleep func(ctx context.Context, d time.Duration) bool
}

// connector is implemented by adapters that know whether they are connected
// to their platform now (Slack's Socket Mode or Events API listener,
// Discord's gateway session).
type connector interface{ Connected() bool }

// logger is the logger of cfg. The console's goes to a file in its data_dir,
// so that the conversation is not interleaved with log lines; the banner
// says where.
func (m *Main) logger(cfg *config.Config) *slog.Logger {
	if !m.Console {
		return newLogger(cfg.Log, m.Stderr)
	}
	path := filepath.Join(cfg.DataDir, "threadsmith.log")
	if err := os.MkdirAll(cfg.DataDir, 0o700); err == nil {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			m.logFile = f
			return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: cfg.Log.Level.Slog()}))
		}
	}
	// No file: only what needs the person's attention, on stderr.
	return slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// lockDataDir takes cfg's data_dir for this process (one bot per data_dir).
func (m *Main) lockDataDir(cfg *config.Config) error {
	l, err := lockDataDir(cfg.DataDir)
	if inUse := (*dataDirInUse)(nil); m.Console && errors.As(err, &inUse) {
		// The console's data_dir is its repository's: no key to change.
		return fmt.Errorf("%s is already running a console on this repository (its data: %s); one console per repository at a time: use that one, or quit it first", inUse.holder, inUse.dir)
	}
	if err != nil {
		return err
	}
	m.lock = l
	return nil
}

// startMetrics adds the queue depth, read from db, to the metrics.
func (m *Main) startMetrics(db interface {
	PendingInboundCounts(ctx context.Context) (map[string]int, error)
}) {
	m.Metrics.PendingInput(db.PendingInboundCounts)
}

// storageHooks count runs and pushes as storage records them: each once,
// whoever records it (runs found interrupted at start included).
func (m *Main) storageHooks() storage.Hooks {
	return storage.Hooks{
		RunFinished:  func(o storage.RunOutcome, d time.Duration) { m.Metrics.RunFinished(string(o), d) },
		PushRecorded: func(r storage.PushResult) { m.Metrics.Pushed(string(r)) },
	}
}

// instrument counts the model's calls into the metrics.
func (m *Main) instrument(model llm.Model) llm.Model { return ops.InstrumentModel(model, m.Metrics) }

// platformHooks are what the metrics and http.listen need of the adapters.
func (m *Main) platformHooks() platformHooks {
	h := platformHooks{metrics: m.Metrics, sleep: m.retrySleep}
	if m.pipe != nil {
		h.slackListener = m.pipe // the Events API behind http.listen's server
	}
	return h
}

// listenOps binds http.listen, so that a port in use stops the start with
// an error naming the key. When it is slack.listen too (http mode), one
// server answers both: the operator's paths here, the rest to Slack.
func (m *Main) listenOps(cfg *config.Config) error {
	if cfg.HTTP.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	m.httpLn = ln
	if cfg.Slack.Enabled && cfg.Slack.Mode == config.SlackHTTP && cfg.Slack.Listen == cfg.HTTP.Listen {
		m.pipe = ops.NewPipe()
	}
	return nil
}

// HTTPAddr is the address the operator's endpoints listen on ("" when off).
func (m *Main) HTTPAddr() string {
	if m.httpLn == nil {
		return ""
	}
	return m.httpLn.Addr().String()
}

// storageCheck is readiness's storage line. /readyz may be as public as the
// session pages (they can share a port), so a failed ping says only that
// storage does not answer; its error (the database's host, user, file) goes
// to the log.
func storageCheck(db interface{ Ping(context.Context) error }, draining *atomic.Bool, log *slog.Logger) ops.Check {
	return ops.Check{Name: "storage", Ready: func(ctx context.Context) error {
		if draining.Load() {
			return errors.New("shutting down")
		}
		if err := db.Ping(ctx); err != nil {
			log.Warn("readiness: storage does not answer", "err", err)
			return errors.New("not answering")
		}
		return nil
	}}
}

// serveOps serves the operator's endpoints until Close ends them (not ctx:
// /healthz answers through a graceful shutdown, /readyz says it drains).
func (m *Main) serveOps(log *slog.Logger, adapters []chat.Adapter) {
	if m.httpLn == nil {
		return
	}
	checks := []ops.Check{storageCheck(m.DB, &m.draining, log)}
	for _, a := range adapters {
		checks = append(checks, ops.Check{Name: a.Platform(), Ready: func(context.Context) error {
			switch c, ok := a.(connector); {
			case !m.running.Load() || m.draining.Load():
				return errors.New("not running")
			case ok && !c.Connected():
				return errors.New("not connected")
			}
			return nil
		}})
	}
	var fallback http.Handler
	if m.pipe != nil {
		fallback = m.pipe.Proxy()
	}
	ctx, stop := context.WithCancel(context.Background())
	m.opsStop = stop
	m.opsDone = make(chan error, 1)
	ln := m.httpLn
	h := ops.Handler(m.Metrics, checks, fallback)
	if hooks := webhookHandler(m.Config, m.Bridge, log.With("component", "webhooks")); hasWebhooks(m.Config) {
		// Forges' review webhooks: /hooks/<repo>; the rest as before.
		mux := http.NewServeMux()
		mux.Handle("/hooks/", hooks)
		mux.Handle("/", h)
		h = mux
	}
	if m.pages != nil {
		// The pages take / (exactly), /s/… and /assets/…; every other path,
		// the operator's and the Events API's, goes on to ops.Handler.
		mux := http.NewServeMux()
		m.pages.Mount(mux)
		mux.Handle("/", h)
		h = mux
		log.Info("serving the session pages", "addr", ln.Addr().String())
	}
	log.Info("serving /healthz, /readyz and /metrics", "addr", ln.Addr().String())
	go func() { m.opsDone <- ops.Serve(ctx, ln, h, log.With("component", "http")) }()
}

// hasWebhooks says whether any repository takes forge webhooks.
func hasWebhooks(cfg *config.Config) bool {
	for _, r := range cfg.Workspace.Repos {
		if r.WebhookSecret != "" {
			return true
		}
	}
	return false
}

// stopOps ends what Run started for operating the bot, last of all: the
// endpoints, the log file, then the data_dir lock (the next bot may start).
func (m *Main) stopOps() error {
	var errs []error
	if m.opsStop != nil {
		m.opsStop()
		errs = append(errs, <-m.opsDone)
		m.opsStop = nil
	} else if m.httpLn != nil {
		m.httpLn.Close() // bound, never served: Run failed
	}
	if m.pipe != nil {
		m.pipe.Close()
	}
	if m.logFile != nil {
		errs = append(errs, m.logFile.Close())
		m.logFile = nil
	}
	errs = append(errs, m.lock.release())
	return errors.Join(errs...)
}

// consoleRetention bounds how far back -continue looks for a session.
const consoleRetention = 365 * 24 * time.Hour

// newConsole builds the console adapter: a new thread (its branch named by
// the time), or with -continue the latest console thread of this data_dir.
func (m *Main) newConsole(cfg *config.Config) *console.Adapter {
	thread := newConsoleThread(time.Now(), func(th chat.ThreadRef) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := m.DB.GetThread(ctx, storage.ThreadKey{Platform: th.Platform, Team: th.Team, Channel: th.Channel, Thread: th.Thread})
		return err == nil
	})
	note := "new session " + thread.Thread + " (-continue resumes the latest)"
	if m.Continue {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		threads, err := m.DB.RecentThreads(ctx, console.Platform, time.Now().Add(-consoleRetention))
		cancel()
		sort.SliceStable(threads, func(i, j int) bool { return threads[i].ActiveAt.After(threads[j].ActiveAt) })
		switch {
		case err != nil:
			note = fmt.Sprintf("cannot list earlier sessions (%v); new session %s", err, thread.Thread)
		case len(threads) == 0:
			note = "no earlier session here; new session " + thread.Thread
		default:
			k := threads[0].Key
			thread = chat.ThreadRef{Platform: k.Platform, Team: k.Team, Channel: k.Channel, Thread: k.Thread}
			note = "continuing session " + thread.Thread
		}
	}
	if consoleIgnoresHTTP(m.ConfigPath, m.Env) {
		note += " · " + consoleHTTPNote
	}
	if m.logFile != nil {
		note += " · logs: " + m.logFile.Name()
	}
	note += m.consoleNote(cfg)
	m.console = console.New(console.Options{
		In: m.Stdin, Out: m.Stdout, User: os.Getenv("USER"), Thread: thread, Banner: note,
		Terminal: isTerminal(m.Stdin), WaitIdle: m.consoleIdle,
	})
	return m.console
}

// newConsoleThread is a new console session's thread, named by the time t
// (its branch too), or by a later second while that name is taken: a
// console started again within the second the last one started in would
// otherwise continue that session on its branch.
func newConsoleThread(t time.Time, taken func(chat.ThreadRef) bool) chat.ThreadRef {
	th := console.NewThread(t)
	for i := 0; i < 3600 && taken(th); i++ {
		t = t.Add(time.Second)
		th = console.NewThread(t)
	}
	return th
}

// Interrupt is SIGINT (Ctrl-C) in console mode: the first stops the run; it
// returns true when the bot should quit (a second Ctrl-C, or not a console).
func (m *Main) Interrupt() bool {
	if m.console == nil {
		return true
	}
	return m.console.Interrupt()
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// consolePagesOff is !link's answer in the console: it serves no pages.
const consolePagesOff = "The console serves no session pages: the whole session is in this terminal (a team bot serves them, with `http.listen`, `http.public_url` and `http.session_key`)."

// consoleHTTPNote is the console banner's word on a config file's http
// section, which only a team bot uses.
const consoleHTTPNote = "http.* of the config file is ignored here (no probes, pages or webhooks in the console)"

// pagesOff is the bridge's !link answer without pages ("" outside the
// console: the bridge's own).
func (m *Main) pagesOff() string {
	if m.Console {
		return consolePagesOff
	}
	return ""
}

// consoleIgnoresHTTP says whether the config file at path sets any http.*
// key, which the console leaves out.
func consoleIgnoresHTTP(path string, env func(string) (string, bool)) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	c, err := config.Parse(f, env)
	return err == nil && !reflect.DeepEqual(c.HTTP, config.Default().HTTP)
}
